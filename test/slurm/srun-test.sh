#!/usr/bin/env bash
# Runs one multi-process test under Slurm's launcher: starts a private one-node cluster
# (slurmctld + slurmd as root, configuration, state and logs in a scratch directory, free
# local ports, auth/none so no munged), checks with WORLD_SIZE that `srun --mpi=PLUGIN`
# makes one MPI world of RANKS ranks (not RANKS singletons), runs PROGRAM the same way, and
# stops both daemons on exit. The recipe is doc/transports.md's "Slurm, one node". Exits 77
# (SKIP) without Slurm or root.
#   srun-test.sh PLUGIN RANKS WORLD_SIZE PROGRAM [ARGS...]
set -euo pipefail
plugin=$1 ranks=$2 world_size=$3
shift 3

for tool in srun sinfo slurmctld slurmd; do
  command -v "$tool" >/dev/null ||
    { echo "SKIP: $tool not found (Debian: apt-get install slurm-wlm)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: slurmd runs jobs as root here; not root"; exit 77; }

dir=$(mktemp -d /tmp/bagua-slurm.XXXXXX)
stop() {
  local pid
  for daemon in slurmd slurmctld; do
    if [ -s "$dir/$daemon.pid" ]; then
      pid=$(cat "$dir/$daemon.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
  rm -rf "$dir"
}
trap stop EXIT

# Two free ports, asked of the kernel (slurmctld and slurmd bind them a moment later).
read -r ctld_port slurmd_port < <(/usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
node=$(hostname -s)
cpus=$(nproc)
mkdir -p "$dir/state" "$dir/spool"
cat >"$dir/slurm.conf" <<EOF
ClusterName=bagua-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES OverSubscribe=FORCE MaxTime=10
EOF
export SLURM_CONF="$dir/slurm.conf"

fail() {
  echo "srun-test.sh: $1" >&2
  tail -n 20 "$dir"/*.log >&2 2>/dev/null || true
  exit 1
}
slurmctld || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"
# Waits for the daemons to register (seconds here; the bound is generous so a
# loaded machine only waits longer, it does not fail).
for _ in $(seq 600); do
  [ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ] && break
  sleep 0.2
done
[ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ] || fail "node $node never became idle"

# srun passes this environment (the test's settings) on to the ranks.
launch=(srun --mpi="$plugin" --oversubscribe -n "$ranks" -t 5)
"${launch[@]}" "$world_size" "$ranks" || fail "${launch[*]} does not make one MPI world"
"${launch[@]}" "$@"
