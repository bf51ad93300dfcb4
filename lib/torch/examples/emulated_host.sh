#!/usr/bin/env bash
# Runs one rank on bench/netemu.sh's emulated hosts: rank i is 10.77.0.(i+1) on interface nv<i>.
# Inside a namespace the hostname resolves to a loopback address only that rank can reach, so
# gloo must use the emulated interface and bagua_torch.init() must publish rank 0's address:
#   bench/netemu.sh -r 1gbit -- lib/torch/examples/emulated_host.sh /usr/bin/python3 \
#     lib/torch/examples/train_fashion_mnist.py --algorithm q8
set -euo pipefail
rank=${OMPI_COMM_WORLD_RANK:?run it under mpirun (bench/netemu.sh)}
export GLOO_SOCKET_IFNAME=nv$rank BAGUA_TORCH_MASTER_ADDR=10.77.0.1
exec "$@"
