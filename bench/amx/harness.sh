#!/usr/bin/env bash
# On the device machine: the harness on two of its cores (the machine: 2 cores).
# run(command="bash bench/amx/harness.sh $OUT --rounds 2 --only transformer_bf16", carry=[".amx"])
set -u
OUTD=$1; shift
source bench/amx/env.sh
mkdir -p "$OUTD"
taskset -c 0,1 "$PY" bench/harness/run.py --json "$OUTD/amx.json" --markdown "$OUTD/amx.md" "$@"
