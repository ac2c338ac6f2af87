#!/usr/bin/env bash
# On the device machine: an interleaved A/B of bench/bench_step_ops.py's step wall median, A
# (the default) and B (the environment given) alternating ROUNDS times in fresh processes, so a
# neighbour's load that comes and goes (ResNet-18's bimodal figures of 2026-11-27) falls on both.
#   bash bench/amx/ab.sh ROUNDS "resnet18 --amp O2 --steps 5" MYCEL_CONV_BWD_SPLIT=0
set -u
ROUNDS=$1 ARGS=$2 B=$3
source bench/amx/env.sh
for r in $(seq "$ROUNDS"); do
  for e in "" "$B"; do
    t=$(env $e taskset -c 0,1 "$PY" bench/bench_step_ops.py $ARGS --threads 2 --top 0 2>&1 |
        grep -o "step wall median [0-9.]* ms")
    echo "round $r ${e:-default}: $t"
  done
done
