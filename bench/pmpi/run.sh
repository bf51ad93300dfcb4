#!/usr/bin/env bash
# Times an unmodified program's MPI_Allreduce (float32 sum, bench/pmpi/pmpi_bench.c)
# without the interposer and with libbagua-pmpi in exact and q8 mode, in the
# same run, and prints the ratios (doc/pmpi.md, doc/benchmarks.md).
#
# usage: bench/pmpi/run.sh [-b BUILDDIR] [-n RANKS] [-r RATE] [-c COUNTS] [-i ITERS] [-l]
#   -b BUILDDIR  meson build directory (default build)
#   -n RANKS     ranks (default 4)
#   -r RATE      emulated link rate for bench/netemu.sh (default 1gbit)
#   -c COUNTS    comma-separated element counts (default 4194304 = 16 MiB)
#   -i ITERS     timed calls per count (default 10, after 2 warm-up calls)
#   -l           local: plain mpirun on shared memory instead of the emulated
#                network, with BAGUA_PMPI_MIN_COUNT=0 so every count is routed
#                (how the BAGUA_PMPI_MIN_COUNT default was measured)
# The emulated network needs root (bench/netemu.sh says what else).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
builddir=build
ranks=4
rate=1gbit
counts=4194304
iters=10
local_run=0
while getopts "b:n:r:c:i:lh" opt; do
  case $opt in
    b) builddir=$OPTARG ;;
    n) ranks=$OPTARG ;;
    r) rate=$OPTARG ;;
    c) counts=$OPTARG ;;
    i) iters=$OPTARG ;;
    l) local_run=1 ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[[ $builddir = /* ]] || builddir=$root/$builddir
bench=$builddir/bench/pmpi/bagua-pmpi-bench
lib=$builddir/lib/pmpi/libbagua-pmpi.so
for f in "$bench" "$lib"; do
  [[ -f $f ]] || { echo "run.sh: $f missing: build first (ninja -C $builddir)" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Runs the benchmark; the words before it ("" or the launcher) pick the interposer.
run() {
  local -a program=("$@" "$bench" -c "$counts" -i "$iters" -w 2)
  if ((local_run)); then
    BAGUA_PMPI_MIN_COUNT=0 mpirun --oversubscribe --mca pml ob1 -np "$ranks" "${program[@]}"
  else
    "$root/bench/netemu.sh" -n "$ranks" -r "$rate" -- "${program[@]}"
  fi
}

declare -A mean_ms
echo "run.sh: $(uptime)"
for variant in mpi exact q8; do
  if [[ $variant == mpi ]]; then
    output=$(run)
  else
    output=$(run "$root/bin/bagua-pmpi" --lib "$lib" --mode "$variant" --)
  fi
  echo "$output" | sed "s/^/$variant: /"
  while read -r count ms; do
    mean_ms[$variant,$count]=$ms
  done < <(echo "$output" | awk '/^pmpi-bench:/ { print $5, $9 }')
done
echo "run.sh: $(uptime)"

printf '%-10s %-10s %10s %10s %10s %8s %8s\n' count bytes mpi_ms exact_ms q8_ms exact_x q8_x
for count in ${counts//,/ }; do
  m=${mean_ms[mpi,$count]} e=${mean_ms[exact,$count]} q=${mean_ms[q8,$count]}
  awk -v c="$count" -v m="$m" -v e="$e" -v q="$q" 'BEGIN {
    printf "%-10d %-10d %10.3f %10.3f %10.3f %7.2fx %7.2fx\n", c, 4 * c, m, e, q, m / e, m / q }'
done
