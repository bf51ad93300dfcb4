#!/bin/sh
# Builds the codec decoder fuzz target with clang++ (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer) straight from the sources, no meson needed, and
# runs it for a bounded time. Needs clang and libclang-rt-14-dev (Debian 12).
#
# Usage: test/codec/run_fuzz.sh [seconds]     (default 60)
# Environment: FUZZ_DIR (default build-fuzz/ in the repository root) holds the
# binary, the corpus and any crash-* reproducer; CXX (default clang++).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${FUZZ_DIR:-$root/build-fuzz}
seconds=${1:-60}
mkdir -p "$dir/corpus"
${CXX:-clang++} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I"$root" -I"$root/kernels" \
  "$root"/kernels/cpu/*.cpp "$root/test/codec/fuzz_decoders.cpp" -o "$dir/fuzz_decoders"
cd "$dir"
./fuzz_decoders -max_total_time="$seconds" -max_len=8192 -use_value_profile=1 corpus
