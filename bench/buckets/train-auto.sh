#!/usr/bin/env bash
# The automatic bucket size against fixed caps on the trainer: runs
# bagua-train under bench/netemu.sh once per setting, alternating the
# settings round after round (so a slow stretch of the machine falls on all
# of them alike), and prints one row per run with its speedup: the fixed library
# default's mean time per epoch in the same invocation over the run's.
#   bench/buckets/train-auto.sh [-n RANKS] [-r RATE] [-k "KB ..."] [-R ROUNDS] -- TRAIN_ARGS...
# -n ranks (default 2), -r link rate for netemu.sh (default 1gbit), -k fixed
# caps in KiB to run beside the default and auto (default none), -R rounds
# (default 2). TRAIN_ARGS go to bagua-train (model, batch, steps), e.g.
#   bench/buckets/train-auto.sh -n 2 -- --algorithm allreduce --layers 8 --hidden 512 --batch 256 --epochs 1
# Needs root (netemu.sh) and build/bin/train/bagua-train.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ranks=2 rate=1gbit caps="" rounds=2
while getopts "n:r:k:R:" opt; do
  case $opt in
    n) ranks=$OPTARG ;;
    r) rate=$OPTARG ;;
    k) caps=$OPTARG ;;
    R) rounds=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ ${1:-} == -- ]] && shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
default_kb=10240  # bagua_bucket_config_init's bucket_bytes (BAGUA_BUCKET_DEFAULT_BYTES)

# One run: prints "s_per_epoch compute_ms comm_ms buckets accuracy".
run_one() {
  local auto=$1 kb=$2 out
  shift 2
  out=$(BAGUA_BUCKET_AUTO=$auto "$root/bench/netemu.sh" -n "$ranks" -r "$rate" -- \
    "$root/build/bin/train/bagua-train" --bucket-kb "$kb" --quiet "$@" 2>&1) || {
    echo "$out" >&2
    return 1
  }
  local epoch accuracy compute_comm buckets
  epoch=$(sed -nE 's/.* ([0-9.]+) s\/epoch.*/\1/p' <<<"$out")
  accuracy=$(sed -nE 's/.*final test accuracy ([0-9.]+)%.*/\1/p' <<<"$out")
  compute_comm=$(sed -nE 's/.*optimizer\) ([0-9.]+) ms, communication ([0-9.]+) ms.*/\1 \2/p' <<<"$out")
  buckets=$(sed -nE 's/.*\] ([0-9]+) buckets at the end.*/\1/p' <<<"$out")
  echo "$epoch $compute_comm $buckets $accuracy"
}

settings=("fixed:$default_kb" "auto:$default_kb")
for kb in $caps; do settings+=("fixed:$kb"); done
echo "# $ranks ranks, $rate links, bagua-train $*; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A rows
# Every round runs each setting once, in the same order.
for round in $(seq "$rounds"); do
  for s in "${settings[@]}"; do
    auto=0
    [[ ${s%%:*} == auto ]] && auto=1
    rows["$round $s"]=$(run_one "$auto" "${s#*:}" "$@")
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

baseline=$(for round in $(seq "$rounds"); do echo "${rows["$round fixed:$default_kb"]}"; done |
  awk '{ t += $1 } END { printf "%.4f", t / NR }')
printf "%-6s %-12s %10s %12s %9s %8s %9s %12s\n" round setting "s/epoch" "compute(ms)" \
  "comm(ms)" buckets "acc(%)" "speedup"
for round in $(seq "$rounds"); do
  for s in "${settings[@]}"; do
    read -r epoch compute comm buckets accuracy <<<"${rows["$round $s"]}"
    label=${s%%:*}
    [[ $label == fixed ]] && label="fixed ${s#*:}K"
    printf "%-6s %-12s %10s %12s %9s %8s %9s %11.2fx\n" "$round" "$label" "$epoch" "$compute" \
      "$comm" "$buckets" "$accuracy" "$(awk -v b="$baseline" -v t="$epoch" 'BEGIN { print b / t }')"
  done
done
