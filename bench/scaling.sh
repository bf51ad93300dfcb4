#!/usr/bin/env bash
# Scaling sweep on emulated links: bagua-bench-compressed (every algorithm
# against Open MPI's default and ring allreduce, in the same run) at each rank
# count and link rate, through bench/netemu.sh. Writes the raw rows (CSV), a
# markdown table and a PNG plot (fraction of the link limit and speed-up over
# the best MPI algorithm against the rank count, at the largest size).
#
# usage: bench/scaling.sh [-b BUILD] [-o OUT] [-q] [-r RATES] [-s MIB] [-i ITERS] [-w WARMUP]
#   -b BUILD   meson build directory with bench/compressed (default build)
#   -o OUT     output directory (default BUILD/scaling)
#   -q         reduced sweep, a few minutes: 100mbit at 2,4,8 ranks with 1 and 4 MiB,
#              1gbit at 2,4 ranks with 1 and 16 MiB (default: the full sweep,
#              100mbit at 2..8 ranks and 1gbit at 2..4 ranks, 1, 4, 16, 64 MiB each)
#   -r RATES   only these link rates of the sweep, comma-separated (e.g. 1gbit)
#   -s MIB     sizes in MiB, comma-separated, in place of the sweep's (e.g. 1,4,16)
#   -i ITERS   timed calls per row (default 2), -w WARMUP untimed ones (default 1)
# Each emulated run holds /tmp/bagua-measure.lock (the machine's measurement
# lock) only while it runs; the load average at its start goes into the table.
# Needs what bench/netemu.sh needs (root, namespaces, tbf).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=build
out=""
quick=0
iters=2
warmup=1
rates=""
sizes_given=""
while getopts "b:o:qr:s:i:w:h" opt; do
  case $opt in
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    q) quick=1 ;;
    r) rates=$OPTARG ;;
    s) sizes_given=$OPTARG ;;
    i) iters=$OPTARG ;;
    w) warmup=$OPTARG ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
build=$(cd "$build" && pwd)
bench="$build/bench/compressed/bagua-bench-compressed"
[ -x "$bench" ] || { echo "scaling: no $bench (build with -Dbenchmarks=true)" >&2; exit 1; }
out=${out:-$build/scaling}
mkdir -p "$out"
"$root/bench/netemu.sh" -p >/dev/null

# The sweep: "rate ranks sizes(MiB)" per emulated run.
runs=()
if [ $quick -eq 1 ]; then
  for n in 2 4 8; do runs+=("100mbit $n 1,4"); done
  for n in 2 4; do runs+=("1gbit $n 1,16"); done
else
  for n in 2 3 4 5 6 7 8; do runs+=("100mbit $n 1,4,16,64"); done
  for n in 2 3 4; do runs+=("1gbit $n 1,4,16,64"); done
fi

# Only the rates asked for.
selected=()
for run in "${runs[@]}"; do
  [ -z "$rates" ] || [[ ",$rates," == *",${run%% *},"* ]] && selected+=("$run")
done
[ ${#selected[@]} -gt 0 ] || { echo "scaling: -r '$rates' names no rate of the sweep (100mbit, 1gbit)" >&2; exit 2; }

# One emulated run per entry; its rows become CSV lines:
# rate,ranks,size_mib,algorithm,time_ms,sent_bytes,link_ms,link_fraction,vs_best_mpi,load
csv="$out/scaling.csv"
echo "rate,ranks,size_mib,algorithm,time_ms,sent_bytes,link_ms,link_fraction,vs_best_mpi,load" >"$csv"
for run in "${selected[@]}"; do
  read -r rate n sizes <<<"$run"
  sizes=${sizes_given:-$sizes}
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "== $rate, $n ranks, $sizes MiB (load $load)" >&2
  flock /tmp/bagua-measure.lock "$root/bench/netemu.sh" -n "$n" -r "$rate" -- \
    "$bench" -s "$sizes" -i "$iters" -w "$warmup" --link "$rate" | tee "$out/run-$rate-$n.txt" |
    awk -v rate="$rate" -v n="$n" -v load="$load" '
      /^#/ || NF < 13 { next }
      { sub(/%$/, "", $10); sub(/x$/, "", $13)
        printf "%s,%d,%g,%s,%.3f,%s,%.3f,%.4f,%s,%s\n", rate, n, $1 / 1048576, $4, $5 / 1e3,
               $8, $9 / 1e3, $10 / 100, $13, load }' >>"$csv"
done

# The table: one row per (rate, ranks, size), each algorithm's time in ms with
# its fraction of the link limit and its speed-up over the best MPI algorithm.
md="$out/scaling.md"
awk -F, '
  NR == 1 { next }
  { key = $1 "," $2 "," $3
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key; load[key] = $10 }
    if (!($4 in known)) { known[$4] = 1; algos[++na] = $4 }
    cell[key, $4] = sprintf("%.3g (%.0f%%, %sx)", $5, 100 * $8, $9) }
  END {
    printf "| link | ranks | MiB | load |"
    for (a = 1; a <= na; a++) printf " %s |", algos[a]
    printf "\n| --- | --- | --- | --- |"
    for (a = 1; a <= na; a++) printf " --- |"
    printf "\n"
    for (k = 1; k <= nk; k++) {
      split(keys[k], f, ",")
      printf "| %s | %s | %s | %s |", f[1], f[2], f[3], load[keys[k]]
      for (a = 1; a <= na; a++) printf " %s |", cell[keys[k], algos[a]]
      printf "\n"
    }
  }' "$csv" >"$md"
{
  echo
  echo "Cells: time per call in ms (fraction of the link limit of the bytes the algorithm"
  echo "sends, speed-up over the best of Open MPI's default and ring allreduce). Fractions"
  echo "above 100% are sends that fit in tbf's 256 KB burst, which the limit does not count."
} >>"$md"
cat "$md"

# The plot: per link rate, fraction of the link limit and speed-up over the
# best MPI against the rank count, one line per algorithm, at the rate's
# largest size.
command -v gnuplot >/dev/null || { echo "scaling: gnuplot not found: no plot" >&2; exit 0; }
panels=()
for rate in $(awk -F, 'NR > 1 { print $1 }' "$csv" | sort -u); do
  largest=$(awk -F, -v r="$rate" 'NR > 1 && $1 == r && $3 > m { m = $3 } END { print m }' "$csv")
  for algo in $(awk -F, 'NR > 1 { print $4 }' "$csv" | sort -u); do
    awk -F, -v r="$rate" -v s="$largest" -v a="$algo" \
      'NR > 1 && $1 == r && $3 == s && $4 == a { print $2, $8, $9 }' "$csv" >"$out/$rate-$algo.dat"
  done
  panels+=("$rate:$largest")
done
png="$out/scaling.png"
{
  echo "set terminal pngcairo size 1200,$((420 * ${#panels[@]}))"
  echo "set output '$png'"
  echo "set multiplot layout ${#panels[@]},2"
  echo "set termoption noenhanced"
  echo "set grid; set key outside right; set xlabel 'ranks'; set xtics 1"
  for panel in "${panels[@]}"; do
    rate=${panel%%:*} size=${panel#*:}
    for column in 2 3; do
      if [ $column -eq 2 ]; then
        echo "set title '$rate, $size MiB: fraction of the link limit'; set ylabel 'link time / time'"
        echo "unset logscale y"
      else
        echo "set title '$rate, $size MiB: speed-up over the best MPI_Allreduce'"
        echo "set ylabel 'best MPI time / time (log)'; set logscale y"
      fi
      plots=()
      for dat in "$out/$rate"-*.dat; do
        algo=$(basename "$dat" .dat)
        plots+=("'$dat' using 1:$column with linespoints title '${algo#"$rate"-}'")
      done
      echo "plot $(IFS=','; echo "${plots[*]}")"
    done
  done
  echo "unset multiplot"
} | gnuplot
echo "table: $md"
echo "plot: $png"
