#!/usr/bin/env bash
# Trains the Fashion-MNIST MLP of train_fashion_mnist.py with DDP on 4 local ranks once per
# communication: plain DDP with gloo, each bagua hook, and the c10d backend "bagua"; then
# prints a table (final test accuracy, seconds per epoch, milliseconds per step).
#   lib/torch/examples/compare.sh [builddir] [--network RATE] [--algorithms "gloo q8 ..."]
#                                 [train_fashion_mnist.py options, e.g. --epochs 5]
# --network RATE runs each rank on an emulated host behind a RATE link (bench/netemu.sh, root).
# PYTHON names the interpreter (default: bin/bagua-venv's, torch 2.x from PyPI).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
builddir=build
if [[ $# -gt 0 && $1 != --* ]]; then
  builddir=$1
  shift
fi
launch=(mpirun --oversubscribe -np 4)
algorithms="gloo exact q8 fp16 bf16 sign backend"
while [[ $# -gt 0 ]]; do
  case $1 in
    --network)
      launch=("$root/bench/netemu.sh" -n 4 -r "$2" -- "$root/lib/torch/examples/emulated_host.sh")
      shift 2 ;;
    --algorithms)
      algorithms=$2
      shift 2 ;;
    *) break ;;
  esac
done
export PYTHONPATH="$root/$builddir/lib/torch${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}  # ob1 over shared memory or TCP, as the tests
python=${PYTHON:-$("$root/bin/bagua-venv")}

results=()
for algorithm in $algorithms; do
  log=$(mktemp)
  "${launch[@]}" "$python" "$root/lib/torch/examples/train_fashion_mnist.py" \
    --algorithm "$algorithm" "$@" 2>&1 | grep -v "No CUDA runtime" | tee "$log"
  results+=("$(grep '^RESULT' "$log")")
  rm -f "$log"
done

echo
# A field of a line "RESULT algorithm=.. accuracy=.. epoch_s=.. step_ms=.. time_to_85=..
# mb_per_step=.." (MB this rank sent per step: hooks only).
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
printf '%-10s %10s %9s %9s %12s %12s\n' algorithm accuracy s/epoch ms/step "s to target" \
  "MB/step/rank"
for line in "${results[@]}"; do
  printf '%-10s %9s%% %9s %9s %12s %12s\n' "$(field "$line" algorithm)" \
    "$(field "$line" accuracy)" "$(field "$line" epoch_s)" "$(field "$line" step_ms)" \
    "$(field "$line" 'time_to_[0-9.]*')" "$(field "$line" mb_per_step)"
done
