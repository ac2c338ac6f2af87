"""A process killed (SIGKILL) while the system compiler builds one of its TE kernels: the compiler
dies with it (PR_SET_PDEATHSIG on its shell, whose trap kills the compiler's process group), and
the temporary files it leaves in the kernel cache are swept by the next process that opens the
cache once they are old enough and their process is gone. A real SIGKILL of a subprocess."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

from mycel import te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

# A compiler that says who it is, then takes long enough to be killed mid-compile.
SLOW_CXX = """#!/bin/sh
echo $$ > "{pids}/cxx.pid"
sleep 60 &
echo $! > "{pids}/sleep.pid"
wait
exec g++ "$@"
"""

BUILD = """
import numpy as np
from mycel import te
x = te.placeholder((5,), "float32", "x")
y = te.compute((5,), lambda i: x[i] * 3.0 + 0.125, "orphan_probe")
print(te.build([x], [y])(np.ones(5, np.float32)))
"""


def dead(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return True


def test_sigkill_of_the_parent_kills_its_compiler_and_the_next_process_sweeps(tmp_path):
    cache, pids = tmp_path / "cache", tmp_path / "pids"
    pids.mkdir()
    cxx = tmp_path / "slow_cxx.sh"
    cxx.write_text(SLOW_CXX.format(pids=pids))
    cxx.chmod(0o755)
    env = dict(os.environ, MYCEL_TE_CACHE=str(cache), MYCEL_TE_CXX=str(cxx))
    proc = subprocess.Popen([sys.executable, "-c", BUILD], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (pids / "sleep.pid").exists() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    cxx_pid = int((pids / "cxx.pid").read_text())
    sleep_pid = int((pids / "sleep.pid").read_text())
    assert not dead(cxx_pid) and not dead(sleep_pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while not (dead(cxx_pid) and dead(sleep_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead(cxx_pid) and dead(sleep_pid), "the compiler outlived its killed parent"

    left = sorted(p.name for p in cache.iterdir() if p.name.startswith("tmp_"))
    assert left and all(n.startswith(f"tmp_{proc.pid}_") for n in left), left
    # Stale only when old enough: a young file of a dead process stays (another PID namespace
    # sharing the folder may hold the number); aged, it goes. A live process's aged file stays.
    live = cache / f"tmp_{os.getpid()}_0123456789abcdef.cc"
    live.write_text("// a compile of a live process")
    old = time.time() - 2 * 3600
    os.utime(live, (old, old))
    young = left[0]
    for name in left[1:]:
        os.utime(cache / name, (old, old))

    sweep = subprocess.run([sys.executable, "-c", BUILD], env=dict(env, MYCEL_TE_CXX="g++"),
                           capture_output=True, text=True, timeout=300)
    assert sweep.returncode == 0, sweep.stderr
    assert "3.125" in sweep.stdout
    now = sorted(p.name for p in cache.iterdir() if p.name.startswith("tmp_"))
    assert now == sorted([young, live.name]), now


def test_a_compile_still_works_and_reports_failures():
    # The shell wrapper (trap, background job, wait) keeps the compiler's exit status.
    x = te.placeholder((3,), "float32", "x")
    f = te.build([x], [te.compute((3,), lambda i: x[i] - 1.0, "dec")])
    np.testing.assert_array_equal(f(np.arange(3, dtype=np.float32)).asnumpy(), [-1, 0, 1])
    old = os.environ.get("MYCEL_TE_CXX")
    os.environ["MYCEL_TE_CXX"] = "false"
    try:
        y = te.compute((3,), lambda i: x[i] * 7.0 - 2.0, "never_built")
        try:
            te.build([x], [y])
        except RuntimeError as e:
            assert "failed (exit status 1)" in str(e), e
        else:
            raise AssertionError("a failing compiler must raise")
    finally:
        if old is None:
            os.environ.pop("MYCEL_TE_CXX")
        else:
            os.environ["MYCEL_TE_CXX"] = old
