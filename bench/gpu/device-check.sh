#!/usr/bin/env bash
# The one script to run on a GPU machine (built to finish within 15 minutes on
# an H200). It runs every CUDA test (device codecs bit for bit against
# their CPU twins; device buffers in the collectives at 1-3 ranks sharing the
# GPU, over bagua's MPI and UCX transports), the kernel rates against the
# device's copy rate and nominal HBM bandwidth, and collectives on device
# buffers against host buffers (bagua-bench-device). All output goes to $OUT
# (a result folder the caller names) or build-gpu-out/.
#
# Where it finds .devrt/ (bench/gpu/pack-runtime.sh, run where the build was
# made) it runs those programs on that packed Open MPI; otherwise it builds
# build-gpu/ here, which needs meson, ninja, nvcc and an MPI installed.
#   bench/gpu/device-check.sh [--hbm-gbs 4800]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/build-gpu-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_pml=ob1
export UCX_TLS=tcp,sm,self UCX_WARN_UNUSED_ENV_VARS=n BAGUA_TIMEOUT_MS=30000
cd "$root"
{ nvidia-smi; nproc; uname -a; } >"$out/machine.txt" 2>&1
if [ -f .devrt/activate.sh ]; then
  source .devrt/activate.sh
  bin=.devrt/build
else
  for tool in meson ninja nvcc mpicc; do
    command -v "$tool" >/dev/null || { echo "device-check: $tool is missing" | tee "$out/error.txt"; exit 1; }
  done
  [ -d build-gpu ] || meson setup build-gpu -Dcuda=enabled -Dbuildtype=release >"$out/setup.txt" 2>&1 ||
    { tail -30 "$out/setup.txt"; exit 1; }
  # CUDA objects always (pack-runtime.sh says why).
  find build-gpu -name '*.cu.o' -delete
  ninja -C build-gpu >"$out/build.txt" 2>&1 || { tail -30 "$out/build.txt"; exit 1; }
  bin=build-gpu
fi
"$bin/bin/bagua-info" >"$out/info.txt" 2>&1

# Each check: its name, then the command (at most $limit seconds); its output goes to tests.txt, a line
# per check to the summary. Exit status 77 is a skip (no usable GPU).
status=0
limit=150
check() {
  local name=$1
  shift
  echo "=== $name: $*" >>"$out/tests.txt"
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$out/tests.txt" 2>&1
  local rc=$?
  local verdict=ok
  [ $rc -eq 77 ] && verdict=SKIP
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && { verdict="FAIL (exit $rc)"; status=1; }
  printf '%-34s %-14s %4d s\n' "$name" "$verdict" $((SECONDS - t0)) | tee -a "$out/summary.txt"
}
check codec-cuda "$bin/test/codec/test-codec-cuda"
for np in 1 2 3; do
  check "device_buffers_cuda-np$np-mpi" env BAGUA_TRANSPORT=mpi mpirun -np $np "$bin/test/bagua-test-device-buffers-cuda"
done
check device_buffers_cuda-np2-ucx env BAGUA_TRANSPORT=ucx mpirun -np 2 "$bin/test/bagua-test-device-buffers-cuda"
check kernel-rates "$bin/bench/gpu/bagua-bench-codec-cuda" "$@"
check kernel-rates-again "$bin/bench/gpu/bagua-bench-codec-cuda" "$@"
# Collectives on device buffers against host buffers, 2 ranks sharing the GPU,
# then with rank 0 alone on it (the other on host buffers).
check device-collectives mpirun -np 2 "$bin/bench/gpu/bagua-bench-device" --mib 1,16,64 --iters 5
check device-collectives-one mpirun -np 2 "$bin/bench/gpu/bagua-bench-device" --mib 1,16,64 \
  --iters 5 --device-ranks 1
# The kernels under the memory checker, where the machine's runtime allows it.
if command -v compute-sanitizer >/dev/null; then
  check codec-cuda-memcheck compute-sanitizer --error-exitcode 1 "$bin/test/codec/test-codec-cuda"
fi
# The tables last: the tool's reply carries the end of the output.
for name in kernel-rates kernel-rates-again device-collectives device-collectives-one; do
  sed -n "/^=== $name:/,/^===/p" "$out/tests.txt" | grep -v '^===' | grep -v '^\[\|^ \|^-\|PMIx\|^$'
done
cat "$out/summary.txt"
exit "$status"
