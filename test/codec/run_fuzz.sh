#!/bin/sh
# Builds the codec decoder fuzz target with clang++ (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer) straight from the sources (the CPU kernels and
# the codec adapters of lib/algo), no meson needed, and runs it for a bounded
# time starting from the corpus kept in test/codec/fuzz_corpus/. New inputs go
# to a scratch corpus, so the run never changes the repository; a crash leaves
# its reproducer (crash-*) in FUZZ_DIR and fails. Needs clang and
# libclang-rt-14-dev (Debian 12) and MPI's headers (bagua.h includes mpi.h).
#
# Usage: test/codec/run_fuzz.sh [seconds]     (default 60)
# Environment: FUZZ_DIR (default build-fuzz/ in the repository root) holds the
# binary, the scratch corpus and any crash-* reproducer; CXX (default clang++).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${FUZZ_DIR:-$root/build-fuzz}
seconds=${1:-60}
mpi_cflags=$(pkg-config --cflags ompi-c 2>/dev/null || pkg-config --cflags mpich)
mkdir -p "$dir/corpus"
# shellcheck disable=SC2086  # mpi_cflags holds several flags
${CXX:-clang++} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -DBAGUA_VERSION_STRING=\"fuzz\" \
  -I"$root" -I"$root/kernels" -I"$root/include" $mpi_cflags \
  "$root"/kernels/cpu/*.cpp "$root/lib/algo/compressed_codecs.cpp" \
  "$root/lib/base/status.cpp" "$root/lib/base/send_memory.cpp" "$root/lib/base/wires.cpp" \
  "$root/test/codec/fuzz_decoders.cpp" -o "$dir/fuzz_decoders"
cd "$dir"
./fuzz_decoders -max_total_time="$seconds" -max_len=8192 -use_value_profile=1 \
  -print_final_stats=1 corpus "$root/test/codec/fuzz_corpus"
