#!/usr/bin/env bash
# Packs a CUDA build's GPU tests and benchmarks with the Open MPI runtime they
# need (mpirun, orted, plugins, every shared library but glibc and the CUDA
# driver) into one folder, for a GPU machine that has the driver but no MPI and
# no package registry. device-check.sh finds the
# folder and uses it; nothing is written outside it there.
#   bench/gpu/pack-runtime.sh [BUILD_DIR [OUT_DIR]]   (default build-gpu .devrt)
# Keep the folder small (64 MiB with the repository is a practical bound): build for
# the lent GPU alone (meson configure build-gpu -Dgpu_archs=90 for an H100/H200).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-gpu}
out=${2:-.devrt}
cd "$root"
# The programs device-check.sh runs, at their paths in the build folder (their
# run paths are relative to it).
programs=(
  test/codec/test-codec-cuda test/bagua-test-device-buffers-cuda
  bench/gpu/bagua-bench-codec-cuda bench/gpu/bagua-bench-device bin/bagua-info
)
# Meson 1.0 (Debian 12) asks nvcc for no dependency file, so a changed CUDA
# header rebuilds nothing: the CUDA objects are rebuilt every time.
find "$build" -name '*.cu.o' -delete
ninja -C "$build" >/dev/null
rm -rf "$out"
mkdir -p "$out/lib" "$out/prefix"
for program in "${programs[@]}"; do
  [ -x "$build/$program" ] || { echo "pack-runtime: $build/$program is missing (build with -Dcuda=enabled)" >&2; exit 1; }
  install -D -m 755 "$build/$program" "$out/build/$program"
  strip --strip-debug "$out/build/$program"
done
# Open MPI, PMIx and UCX trees, relocated by OPAL_PREFIX, PMIX_INSTALL_PREFIX
# and UCX_MODULE_DIR (activate.sh).
libdir=/usr/lib/x86_64-linux-gnu
mkdir -p "$out/prefix/bin" "$out/prefix$libdir" "$out/prefix/usr/share"
cp -a "$libdir/openmpi" "$libdir/pmix2" "$libdir/ucx" "$out/prefix$libdir/"
cp -a /usr/share/openmpi "$out/prefix/usr/share/"
mkdir -p "$out/prefix/usr/bin"
cp /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info "$out/prefix/usr/bin/"
ln -s orterun "$out/prefix/usr/bin/mpirun"
# Every shared library those files load, but the C library's and the driver's.
skip='^(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libcuda|libnvidia-.*)\.so'
find "$out/build" "$out/prefix" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
  xargs -0 -n 50 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [[ $path == "$libdir/openmpi/"* ]] && continue  # in the packed tree already
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done
cat >"$out/activate.sh" <<'ACTIVATE'
# Sourced by device-check.sh: the packed runtime in place of installed ones.
devrt=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=$devrt/prefix/usr
export OPAL_PREFIX=$prefix PMIX_INSTALL_PREFIX=$prefix
export UCX_MODULE_DIR=$prefix/lib/x86_64-linux-gnu/ucx
export PMIX_MCA_mca_base_component_path=$prefix/lib/x86_64-linux-gnu/pmix2/lib/pmix
# Quiet about the compression plugin another PMIx on the machine may hold at the same path.
export PMIX_MCA_pcompress_base_silence_warning=1
export PATH=$prefix/bin:$PATH
# Shared memory between ranks without ptrace's single copy (virtual machines may refuse it).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu/openmpi/lib:$devrt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ACTIVATE
du -sh "$out"
