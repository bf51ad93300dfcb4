#!/usr/bin/env bash
# The benchmarks check the rows they time: every row of bagua-bench (each
# datatype, sum and avg, both contenders; the nonblocking pair on float sum)
# and of bagua-bench-compressed must
# report 0 wrong elements and carry the link columns; a malformed link rate
# is refused with a message naming it.
#   check_bench.sh MPIEXEC bagua-bench [bagua-bench-compressed]
set -uo pipefail
mpiexec=$1 bench=$2 compressed=${3:-}
status=0

fail() {
  echo "FAIL: $*"
  status=1
}

# Rows of a bagua-bench run of contenders `algos` (two of them): the
# datatype column and the #wrong column (12th field when a link rate is
# given).
check_bench_rows() {
  local type=$1 op=$2 algos=${3:-mpi,bagua} out rows
  out=$("$mpiexec" -np 2 "$bench" -b 4K -e 1M -f 16 -n 2 -w 1 -d "$type" -o "$op" -a "$algos" \
    --link 1gbit)
  rows=$(grep -v '^#' <<<"$out" | awk -v t="$type" '$3 == t' | wc -l)
  [ "$rows" -eq 6 ] || fail "bagua-bench -d $type -o $op -a $algos: $rows rows, want 6:"$'\n'"$out"
  grep -v '^#' <<<"$out" | awk '$12 != 0 || $11 !~ /%$/ { bad = 1 } END { exit bad }' ||
    fail "bagua-bench -d $type -o $op -a $algos: wrong elements or no link columns:"$'\n'"$out"
}

for type in float double float16 bfloat16; do
  for op in sum avg; do check_bench_rows "$type" "$op"; done
done
check_bench_rows float sum impi,ibagua

# A bad rate, as option and as environment variable.
out=$("$mpiexec" -np 1 "$bench" --link 1gxbit 2>&1) && fail "bagua-bench accepted --link 1gxbit"
grep -q "'1gxbit' is not a rate" <<<"$out" || fail "no message for --link 1gxbit:"$'\n'"$out"
out=$(BAGUA_BENCH_LINK=fast "$mpiexec" -np 1 "$bench" 2>&1) && fail "accepted BAGUA_BENCH_LINK=fast"
grep -q "BAGUA_BENCH_LINK 'fast' is not a rate" <<<"$out" || fail "no message for 'fast':"$'\n'"$out"

# Rows of a bagua-bench-compressed run (extra options in "$@"): at least
# `want` rows, exact rows "0 wrong", every row with its link fraction.
check_compressed_rows() {
  local want=$1 out rows
  shift
  out=$("$mpiexec" -np 3 "$compressed" -s 0.25 -i 2 -w 1 --link 100mbit "$@")
  rows=$(grep -vc '^#' <<<"$out")
  [ "$rows" -ge "$want" ] || fail "bagua-bench-compressed $*: $rows rows:"$'\n'"$out"
  grep -v '^#' <<<"$out" | awk '($12 == "wrong" && $11 != 0) || $10 !~ /%$/ { bad = 1 }
    END { exit bad }' ||
    fail "bagua-bench-compressed $*: wrong elements or no link columns:"$'\n'"$out"
}

if [ -n "$compressed" ]; then
  check_compressed_rows 6
  # Interleaved rounds: every algorithm's result is still checked.
  check_compressed_rows 3 --interleave -a bagua,q8,sign
  # The link drained before each call: results unchanged.
  check_compressed_rows 3 --interleave --drain 65536 -a bagua,q8,sign
  out=$("$mpiexec" -np 1 "$compressed" --drain 64k 2>&1) && fail "bagua-bench-compressed accepted --drain 64k"
  grep -q "\-\-drain takes a byte count" <<<"$out" || fail "no message for --drain 64k:"$'\n'"$out"
  out=$(BAGUA_BENCH_LINK_BURST=-1 "$mpiexec" -np 1 "$compressed" 2>&1) &&
    fail "bagua-bench-compressed accepted BAGUA_BENCH_LINK_BURST=-1"
  grep -q "BAGUA_BENCH_LINK_BURST '-1' is not a byte count" <<<"$out" ||
    fail "no message for BAGUA_BENCH_LINK_BURST=-1:"$'\n'"$out"
  out=$("$mpiexec" -np 1 "$compressed" -a q9 2>&1) && fail "bagua-bench-compressed accepted -a q9"
  grep -q "unknown algorithm 'q9'" <<<"$out" || fail "no message for -a q9:"$'\n'"$out"
  out=$("$mpiexec" -np 1 "$compressed" -s 1 -i 2>&1) && fail "bagua-bench-compressed accepted -i without a value"
  grep -q "\-i needs a value" <<<"$out" || fail "no message for -i without a value:"$'\n'"$out"
fi
[ $status -eq 0 ] && echo "bench checks passed"
exit $status
