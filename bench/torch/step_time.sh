#!/usr/bin/env bash
# Step time of PyTorch training with bagua against gloo in the same run (doc/benchmarks.md,
# "PyTorch 2.x: step time against gloo"): lib/torch/examples/train_fashion_mnist.py on 4
# emulated hosts behind RATE links (bench/netemu.sh, root), an MLP of about 25M parameters (784-4608-4608-10), batch 16 per
# rank, STEPS timed steps (one epoch cut short) after one untimed epoch of the same length;
# prints ms/step of each run and its speed against the gloo run of its kind (DDP rows against
# gloo DDP, FSDP2 rows against FSDP2 on gloo).
#   bench/torch/step_time.sh [-r RATE] [-s STEPS] [-a "gloo exact backend q8 q4 ..."]
# Default: 1gbit, 20 steps, gloo exact backend q8 q4 fsdp-gloo fsdp-exact fsdp-q8 fsdp-q4.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rate=1gbit steps=20
algorithms="gloo exact backend q8 q4 fsdp-gloo fsdp-exact fsdp-q8 fsdp-q4"
while getopts "r:s:a:" option; do
  case $option in
    r) rate=$OPTARG ;;
    s) steps=$OPTARG ;;
    a) algorithms=$OPTARG ;;
    *) exit 2 ;;
  esac
done
python=${PYTHON:-$("$root/bin/bagua-venv")}
export PYTHONPATH="$root/build/lib/torch${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
declare -A step_ms
echo "# $rate, 4 emulated hosts, MLP 784-4608-4608-10, batch 16, $steps timed steps"
printf '%-11s %9s %8s %12s\n' run ms/step accuracy "x its gloo"
for algorithm in $algorithms; do
  line=$("$root/bench/netemu.sh" -n 4 -r "$rate" -- "$root/lib/torch/examples/emulated_host.sh" \
    "$python" "$root/lib/torch/examples/train_fashion_mnist.py" --algorithm "$algorithm" \
    --hidden 4608 --batch 16 --epochs 2 --max-steps "$steps" 2>&1 | grep '^RESULT')
  # The second epoch's time: the first one pays the start-up (buckets, allocations).
  ms=$(sed -n 's/.* last_epoch_step_ms=\([^ ]*\).*/\1/p' <<<"$line")
  step_ms[$algorithm]=$ms
  reference=${step_ms[gloo]:-}
  [[ $algorithm == fsdp-* ]] && reference=${step_ms[fsdp-gloo]:-}
  ratio=$([ -n "$reference" ] && awk -v r="$reference" -v m="$ms" 'BEGIN { printf "%.2f", r / m }' || echo "")
  printf '%-11s %9s %8s %12s\n' "$algorithm" "$ms" "$(sed -n 's/.* accuracy=\([^ ]*\).*/\1/p' <<<"$line")" "$ratio"
done
