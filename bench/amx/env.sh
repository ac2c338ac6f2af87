# Sourced on the device machine from the repo root: unpacks the carried bundle (.amx/amx.tar.xz,
# bench/amx/make_bundle.sh) and points Python at it. Sets PY (Mycel's Python) and TORCH_PY (the
# machine's, which has PyTorch); the harness runs PyTorch's side in TORCH_PY
# (MYCEL_BENCH_TORCH_PYTHON) without these variables.
TORCH_PY=$(command -v python3)
if [ ! -x /tmp/amx/bin/python3.11 ]; then tar -xJf .amx/amx.tar.xz -C /tmp || exit 1; fi
cp /tmp/amx/mycel/*.so python/mycel/
export PYTHONHOME=/tmp/amx PYTHONPATH=$PWD/python:/tmp/amx/site LD_LIBRARY_PATH=/tmp/amx/libs
export MYCEL_BENCH_TORCH_PYTHON=$TORCH_PY PYTHONUNBUFFERED=1
PY=/tmp/amx/bin/python3.11
