"""`import mycel` picks a short OpenMP spin (GOMP_SPINCOUNT=1000) before libgomp loads, unless the
user chose a wait policy (docs/eager.md: why, with the measurements)."""
import os
import subprocess
import sys

CODE = "import os, mycel; print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))"


def _run(**env):
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    r = subprocess.run([sys.executable, "-c", CODE], env={**base, **env}, capture_output=True, text=True,
                       timeout=120, cwd="/tmp")
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_short_spin_by_default():
    assert _run() == ["1000", "None"]


def test_user_settings_win():
    assert _run(OMP_WAIT_POLICY="PASSIVE") == ["None", "PASSIVE"]
    assert _run(GOMP_SPINCOUNT="50000") == ["50000", "None"]
