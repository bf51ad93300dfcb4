#!/bin/sh
# Runs test_killed_rank on 3 ranks under Open MPI's --enable-recovery (so
# mpirun keeps the survivors running when one rank is killed) and passes when
# both survivors report that their calls returned TIMEOUT, then COMM_BROKEN.
# usage: killed_rank.sh MPIEXEC PROGRAM
out=$("$1" --enable-recovery -np 3 "$2" 2>&1)
echo "$out"
[ "$(echo "$out" | grep -c '^survivor [0-9] ok$')" -eq 2 ]
