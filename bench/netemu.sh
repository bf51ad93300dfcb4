#!/usr/bin/env bash
# Runs an MPI program on N emulated hosts: one network namespace per rank,
# each attached to a bridge by a veth pair shaped with tbf to RATE in both
# directions (doc/benchmarks.md). Everything it creates
# is deleted on exit, also on failure or Ctrl-C.
#
# usage: bench/netemu.sh [-n RANKS] [-r RATE] [-m "MPIRUN ARGS"] -- PROGRAM [ARGS...]
#        bench/netemu.sh -p [-r RATE]
#   -p        probe only: exit 0 if this machine can build the emulated network,
#             else print why and exit 1 (takes no lock, touches no running network)
#   -n RANKS  number of emulated hosts, one rank each (default 4)
#   -r RATE   link rate in tc syntax: 100mbit, 1gbit, 10gbit (default 1gbit)
#   -m ARGS   extra mpirun arguments (e.g. "--mca coll_tuned_use_dynamic_rules 1")
#   -M MTU    MTU of every emulated link (default 1500; 9000 = jumbo frames, where
#             TCP's headers take 0.7% of the rate instead of 4.4%)
#   -b BURST  the tbf token bucket of every link: bytes, or NUMBERkb (default 256kb)
# Every rank gets BAGUA_BENCH_LINK=RATE, so bagua-bench and bagua-bench-compressed
# print their link columns against the emulated rate, and BAGUA_BENCH_LINK_BURST
# (the burst in bytes), which bagua-bench-compressed sends around the ring
# before each timed call to empty the buckets (unless they are set already).
# Every rank inherits this script's environment: set BAGUA_* variables on its
# command line (BAGUA_TRANSPORT=ucx bench/netemu.sh ...), not with -m "-x ...",
# which Open MPI applies to the first program of the MPMD line only.
# Needs root, network namespaces, veth, bridge and the tbf qdisc. Only one
# emulated network runs at a time (a lock file serializes callers).
set -euo pipefail

RANKS=4
RATE=1gbit
MPIRUN_ARGS=""
MTU=1500
PROBE_ONLY=0
# 256 KB: ranks that share cores dequeue late, and a bucket shorter than
# their gaps keeps the link below its rate (64 KB at 1 Gbit ran an 8-rank
# ring at 22% of it, at 100 Mbit a 4-rank ring at 88%); a larger one
# refills while a rank computes and lets the next short transfer through
# faster than the rate, which a real link never does (doc/benchmarks.md,
# "What was tried: bagua-advise's model and probes").
BURST=256kb
PREFIX=bg
BRIDGE=br-bg
SUBNET=10.77.0
LOCK=/run/bagua-netemu.lock

usage() {
  sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

die() {
  echo "netemu: $*" >&2
  exit 1
}

while getopts "n:r:m:M:b:ph" opt; do
  case $opt in
    p) PROBE_ONLY=1 ;;
    n) RANKS=$OPTARG ;;
    r) RATE=$OPTARG ;;
    m) MPIRUN_ARGS=$OPTARG ;;
    M) MTU=$OPTARG ;;
    b) BURST=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ ${1:-} == "--" ]] && shift
[[ $PROBE_ONLY -eq 1 || $# -ge 1 ]] || usage
[[ $RANKS =~ ^[0-9]+$ && $RANKS -ge 1 && $RANKS -le 200 ]] || die "-n must be 1..200, got '$RANKS'"
[[ $MTU =~ ^[0-9]+$ && $MTU -ge 576 && $MTU -le 65535 ]] || die "-M must be 576..65535, got '$MTU'"
[[ $BURST =~ ^([0-9]+)(kb)?$ && ${BASH_REMATCH[1]} -ge 1 && ${BASH_REMATCH[1]} -le 1048576 ]] ||
  die "-b must be bytes or NUMBERkb (up to 1048576), got '$BURST'"
BURST_BYTES=$((BASH_REMATCH[1] * (${#BASH_REMATCH[2]} > 0 ? 1024 : 1)))

# Refuse clearly when the machine cannot do it: root, the tools, and a
# namespace, a bridge and a tbf qdisc of this rate, under names of this
# process only (a network another caller runs is left alone).
probe() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (it creates network namespaces and qdiscs)"
  for tool in ip tc mpirun flock; do
    command -v "$tool" >/dev/null || die "'$tool' not found"
  done
  local ns="${PREFIX}probe$$" bridge="brp$$"
  ip netns add "$ns" 2>/dev/null || die "this kernel does not support network namespaces"
  ip netns del "$ns"
  ip link add "$bridge" type bridge 2>/dev/null || die "cannot create a bridge device"
  if ! tc qdisc replace dev "$bridge" root tbf rate "$RATE" burst "$BURST_BYTES" latency 100ms 2>/dev/null; then
    ip link del "$bridge"
    die "the tbf qdisc is unavailable (kernel module sch_tbf) or rate '$RATE' is invalid"
  fi
  ip link del "$bridge"
}
probe
if [[ $PROBE_ONLY -eq 1 ]]; then
  echo "netemu: this machine can emulate $RATE links (burst $BURST)"
  exit 0
fi

exec 9>"$LOCK"
flock -w 600 9 || die "another emulated network is running (lock $LOCK)"

teardown() {
  for ((i = 0; i < RANKS; i++)); do
    ip netns del "$PREFIX$i" 2>/dev/null || true
    ip link del "hv$i" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}
trap teardown EXIT INT TERM

# Leftovers of a run that was killed hard.
teardown

ip link add "$BRIDGE" type bridge
ip link set "$BRIDGE" up
ip addr add "$SUBNET.254/24" dev "$BRIDGE"

# One host per rank: namespace, veth into the bridge, address, tbf both ways.
for ((i = 0; i < RANKS; i++)); do
  ip netns add "$PREFIX$i"
  ip link add "hv$i" mtu "$MTU" type veth peer name "nv$i" mtu "$MTU"
  ip link set "nv$i" netns "$PREFIX$i"
  ip link set "hv$i" master "$BRIDGE"
  ip link set "hv$i" up
  ip -n "$PREFIX$i" addr add "$SUBNET.$((i + 1))/24" dev "nv$i"
  ip -n "$PREFIX$i" link set "nv$i" up
  ip -n "$PREFIX$i" link set lo up
  tc -n "$PREFIX$i" qdisc replace dev "nv$i" root tbf rate "$RATE" burst "$BURST_BYTES" latency 100ms
  tc qdisc replace dev "hv$i" root tbf rate "$RATE" burst "$BURST_BYTES" latency 100ms
done

# MPMD command line: rank i runs inside namespace i.
apps=()
for ((i = 0; i < RANKS; i++)); do
  ((i > 0)) && apps+=(":")
  apps+=(-np 1 ip netns exec "$PREFIX$i" "$@")
done

echo "netemu: $RANKS hosts on $RATE links (tbf burst $BURST)" >&2
export BAGUA_BENCH_LINK=${BAGUA_BENCH_LINK:-$RATE}
export BAGUA_BENCH_LINK_BURST=${BAGUA_BENCH_LINK_BURST:-$BURST_BYTES}
# PMIx clients reach mpirun's server over the bridge.
# shellcheck disable=SC2086
PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=$SUBNET.0/24 \
  mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self \
  --mca btl_tcp_if_include "$SUBNET.0/24" \
  $MPIRUN_ARGS "${apps[@]}"
