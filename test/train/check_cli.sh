#!/usr/bin/env bash
# A bagua-train usage error: the command exits 2 and its stderr holds the
# expected message.
#   check_cli.sh BAGUA_TRAIN 'EXPECTED MESSAGE' ARGS...
set -uo pipefail
train=$1 expected=$2
shift 2
stderr=$("$train" "$@" 2>&1 >/dev/null)
status=$?
if [[ $status -ne 2 ]]; then
  echo "check_cli: '$*' exited $status, want 2; stderr: $stderr" >&2
  exit 1
fi
if [[ $stderr != *"$expected"* ]]; then
  echo "check_cli: '$*' printed '$stderr', want it to contain '$expected'" >&2
  exit 1
fi
