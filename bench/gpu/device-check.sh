#!/usr/bin/env bash
# The one script to run on a lent GPU machine (issue #16; 15 minutes of device
# time a session): builds bagua with CUDA, runs every CUDA test (device codecs
# bit for bit against their CPU twins; device buffers in the collectives at 1-3
# ranks sharing the GPU), the kernel rates against the device's copy rate
# and nominal HBM bandwidth, and collectives on device buffers against host
# buffers (bagua-bench-device), and writes all output to $OUT (the device tool's
# result folder) or build-gpu-out/. Needs meson, ninja, MPI and CUDA installed
# (the device machine reaches no package registry).
#   bench/gpu/device-check.sh [--hbm-gbs 4800]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/build-gpu-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$root"
{ nvidia-smi; nproc; } >"$out/machine.txt" 2>&1
for tool in meson ninja nvcc mpicc; do
  command -v "$tool" >/dev/null || { echo "device-check: $tool is missing" | tee "$out/error.txt"; exit 1; }
done
if [ ! -d build-gpu ]; then
  meson setup build-gpu -Dcuda=enabled -Dbuildtype=release >"$out/setup.txt" 2>&1 ||
    { tail -30 "$out/setup.txt"; exit 1; }
fi
ninja -C build-gpu >"$out/build.txt" 2>&1 || { tail -30 "$out/build.txt"; exit 1; }
status=0
meson test -C build-gpu --print-errorlogs codec-q8 codec-cast codec-sign codec-cuda \
  device_buffers_cuda-np1 device_buffers_cuda-np2 device_buffers_cuda-np3 \
  device_buffers-np2-mpi device_buffers-np3-mpi >"$out/tests.txt" 2>&1 || status=1
cp build-gpu/meson-logs/testlog.txt "$out/" 2>/dev/null
build-gpu/bench/gpu/bagua-bench-codec-cuda "$@" >"$out/rates.txt" 2>&1 || status=1
# Collectives on device buffers against host buffers, 2 ranks sharing the GPU.
timeout 240 mpirun -np 2 build-gpu/bench/gpu/bagua-bench-device --mib 1,16,64 --iters 5 \
  >"$out/device-collectives.txt" 2>&1 || status=1
tail -15 "$out/tests.txt"
cat "$out/rates.txt" "$out/device-collectives.txt"
exit "$status"
