#!/usr/bin/env bash
# Packs this checkout's built Mycel for a machine that has neither Debian 12's Python nor its
# libraries (the device machine: Ubuntu 24.04, Python 3.12, an Intel Xeon with AMX): Debian's
# python3.11 and its standard library, the .venv's numpy, python/mycel's extension and every
# shared library it loads but glibc and libstdc++ (reference LAPACK/BLAS instead of OpenBLAS,
# which no benchmark uses, to stay under the device's 64 MiB transfer). Writes .amx/amx.tar.xz
# (~44 MB; .amx/ is git-ignored: carry it). Usage: bash bench/amx/make_bundle.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
B=$W/amx
mkdir -p "$B"/{bin,lib,site,libs,mycel}
cp /usr/bin/python3.11 "$B/bin/"
cp -a /usr/lib/python3.11 "$B/lib/"
(cd "$B/lib/python3.11" && rm -rf test idlelib tkinter turtledemo ensurepip lib2to3 pydoc_data \
  config-3.11-x86_64-linux-gnu unittest/test ctypes/test distutils/tests sqlite3/test)
cp -a .venv/lib/python3.11/site-packages/numpy .venv/lib/python3.11/site-packages/numpy.libs "$B/site/"
find "$B" -name __pycache__ -prune -exec rm -rf {} +
find "$B/site/numpy" -type d -name tests -prune -exec rm -rf {} +
cp python/mycel/_mycel*.so python/mycel/libmycel_spm.so "$B/mycel/"
ldd python/mycel/_mycel*.so python/mycel/libmycel_spm.so | awk '/=> \//{print $3}' | sort -u |
  grep -vE "/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libopenblas)\.so" |
  xargs -I{} cp -L {} "$B/libs/"
(cd "$W" && apt-get download liblapack3 libblas3 >/dev/null 2>&1 &&
  for d in ./*.deb; do dpkg -x "$d" "$W/deb"; done)
cp "$W"/deb/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.* "$B/libs/liblapack.so.3"
cp "$W"/deb/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.* "$B/libs/libblas.so.3"
mkdir -p .amx
tar -C "$W" -cf - amx | xz -T0 -6 > .amx/amx.tar.xz.tmp && mv .amx/amx.tar.xz.tmp .amx/amx.tar.xz
ls -la .amx/amx.tar.xz
