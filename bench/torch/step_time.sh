#!/usr/bin/env bash
# Step time of PyTorch training with bagua against gloo in the same run (doc/benchmarks.md,
# "PyTorch 2.x: step time against gloo"): lib/torch/examples/train_fashion_mnist.py on 4
# emulated hosts behind RATE links (bench/netemu.sh, root), an MLP of about 25M parameters (784-4608-4608-10), batch 16 per
# rank, STEPS timed steps (one epoch cut short) after one untimed epoch of the same length;
# prints ms/step of each run and its speed against the gloo run of its kind (DDP rows against
# gloo DDP, FSDP2 rows against FSDP2 on gloo). With "local" in the list (training without any
# communication: the compute of a step) it also prints the exact-gradient bound: local's step
# plus one ring allreduce of the float32 gradients at the link rate (2(n-1)/n of their bytes
# per rank), and each exact DDP row's time against it.
#   bench/torch/step_time.sh [-r RATE] [-s STEPS] [-a "local gloo exact backend q8 fsdp-q8 ..."]
# Default: 1gbit, 20 steps, every run the trainer offers (its --algorithm choices).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rate=1gbit steps=20 hosts=4
algorithms=
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
trainer=$root/lib/torch/examples/train_fashion_mnist.py
[ -n "$algorithms" ] || algorithms=$("$python" "$trainer" --list-choices)
declare -A step_ms
parameters=
echo "# $rate, $hosts emulated hosts, MLP 784-4608-4608-10, batch 16, $steps timed steps"
printf '%-11s %9s %8s %12s\n' run ms/step accuracy "x its gloo"
for algorithm in $algorithms; do
  line=$("$root/bench/netemu.sh" -n "$hosts" -r "$rate" -- "$root/lib/torch/examples/emulated_host.sh" \
    "$python" "$trainer" --algorithm "$algorithm" \
    --hidden 4608 --batch 16 --epochs 2 --max-steps "$steps" 2>&1 | grep '^RESULT')
  # The second epoch's time: the first one pays the start-up (buckets, allocations).
  ms=$(sed -n 's/.* last_epoch_step_ms=\([^ ]*\).*/\1/p' <<<"$line")
  step_ms[$algorithm]=$ms
  parameters=$(sed -n 's/.* parameters=\([0-9]*\).*/\1/p' <<<"$line")
  reference=${step_ms[gloo]:-}
  [[ $algorithm == fsdp-* ]] && reference=${step_ms[fsdp-gloo]:-}
  ratio=$([ -n "$reference" ] && awk -v r="$reference" -v m="$ms" 'BEGIN { printf "%.2f", r / m }' || echo "")
  printf '%-11s %9s %8s %12s\n' "$algorithm" "$ms" "$(sed -n 's/.* accuracy=\([^ ]*\).*/\1/p' <<<"$line")" "$ratio"
done
# The exact-gradient bound: compute alone plus the ring allreduce's bytes at the link rate.
if [ -n "${step_ms[local]:-}" ] && [ -n "$parameters" ]; then
  awk -v rate="$rate" -v n="$hosts" -v p="$parameters" -v local_ms="${step_ms[local]}" \
      -v gloo="${step_ms[gloo]:-}" -v exact="${step_ms[exact]:-}" -v backend="${step_ms[backend]:-}" '
    BEGIN {
      bits = rate + 0; unit = tolower(rate); sub(/^[0-9.]+/, "", unit)
      bits *= unit == "gbit" ? 1e9 : unit == "mbit" ? 1e6 : unit == "kbit" ? 1e3 : 1
      link_ms = 2 * (n - 1) / n * 4 * p * 8 / bits * 1000
      printf "# exact bound: local %.1f + link %.1f = %.1f ms/step (%d float32 gradients)\n", \
        local_ms, link_ms, local_ms + link_ms, p
      split("gloo exact backend", names, " "); times["gloo"] = gloo; times["exact"] = exact
      times["backend"] = backend
      for (i = 1; i <= 3; i++)
        if (times[names[i]] != "")
          printf "#   %-8s %.2f of the bound\n", names[i], (local_ms + link_ms) / times[names[i]]
    }'
fi
