#!/usr/bin/env bash
# On the device machine: bench/bench_step_ops.py on two cores, once per environment given
# (e.g. bash bench/amx/step_ops.sh "resnet18 --amp O2 --steps 5" "" MYCEL_CONV_BWD_SPLIT=0).
set -u
ARGS=$1; shift
source bench/amx/env.sh
for e in "$@"; do
  echo "== ${e:-default}"
  env $e taskset -c 0,1 "$PY" bench/bench_step_ops.py $ARGS --threads 2 2>&1 | grep -v '^{'
done
