"""Keeper threads (src/mycel/core/cpu_keeper.h): around graph runs, one SCHED_IDLE thread per
pool thread beyond the caller's (at most one per other CPU) keeps a CPU from halting; it spins
from a run's start until a linger after its end (also when the run throws), then sleeps; opt-in with
MYCEL_CPU_KEEPER=1, never under OMP_WAIT_POLICY=PASSIVE or with one thread. Results are those of
a run without keepers (and of numpy), for 1, 2 and 3 threads. Each case runs in a fresh process:
the settings are read once."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    import mycel
    from mycel import Tensor, nn, ops
    from mycel._mycel import cpu_keepers_started

    threads, linger_s = int(sys.argv[1]), float(sys.argv[2])
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=threads)

    class Net(nn.Cell):
        def construct(self, x, w):
            return ops.relu(ops.matmul(x, w)).sum(axis=1)

    def idle_threads():  # the keepers: this process's SCHED_IDLE threads
        return [int(t) for t in os.listdir("/proc/self/task")
                if os.sched_getscheduler(int(t)) == os.SCHED_IDLE]

    def state(tid):  # R: running or runnable (spinning), S: asleep
        return open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()[0]

    def all_asleep(ids, timeout=20.0):  # after the linger each keeper goes to sleep
        end = time.time() + timeout
        while time.time() < end:
            if all(state(t) == "S" for t in ids):
                return True
            time.sleep(0.02)
        return False

    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 200)).astype(np.float32)
    w = rng.standard_normal((200, 48)).astype(np.float32)
    net = Net()
    out = net(Tensor(x), Tensor(w)).asnumpy()
    ids = idle_threads()
    r = {"started": cpu_keepers_started(), "idle": len(ids), "out": out.tolist()}
    if ids:
        r["spinning_after_run"] = state(ids[0]) == "R"
        r["asleep_after_linger"] = all_asleep(ids)
        # A run that throws (a wrong input shape, checked inside the run) ends the spin too.
        try:
            net(Tensor(x[:, :7]), Tensor(w))
            r["threw"] = False
        except Exception:
            r["threw"] = True
        r["asleep_after_error"] = all_asleep(ids)
    print(json.dumps(r))
""")


@pytest.fixture(scope="module")
def script(tmp_path_factory):  # graph mode parses construct's source: a file, not -c
    path = tmp_path_factory.mktemp("keeper") / "keeper_case.py"
    path.write_text(SCRIPT)
    return str(path)


def _run(script, threads, linger_us=300_000, **env):
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "MYCEL_CPU_KEEPER", "MYCEL_CPU_KEEPER_US")}
    base["MYCEL_CPU_KEEPER_US"] = str(linger_us)
    r = subprocess.run([sys.executable, script, str(threads), str(linger_us / 1e6)],
                       env={**base, **env}, capture_output=True, text=True, timeout=300, cwd="/tmp")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _reference():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 200)).astype(np.float32)
    w = rng.standard_normal((200, 48)).astype(np.float64)
    return np.maximum(x.astype(np.float64) @ w, 0).sum(axis=1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and SCHED_IDLE")
@pytest.mark.parametrize("threads", [2, 3])
def test_keepers_spin_around_a_run_then_sleep(script, threads):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: no keepers")
    r = _run(script, threads, MYCEL_CPU_KEEPER="1")
    want = min(threads - 1, os.cpu_count() - 1)  # at most one per CPU beyond the caller's
    assert r["started"] == want and r["idle"] == want
    # The 300 ms linger has just begun: the keeper spins (runs or waits for a CPU, never sleeps).
    assert r["spinning_after_run"]
    assert r["asleep_after_linger"]
    assert r["threw"] and r["asleep_after_error"]
    np.testing.assert_allclose(r["out"], _reference(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("env,threads", [({}, 2),  # opt-in: off by default
                                         ({"OMP_WAIT_POLICY": "PASSIVE", "MYCEL_CPU_KEEPER": "1"}, 2),
                                         ({"MYCEL_CPU_KEEPER": "0"}, 2),
                                         ({"MYCEL_CPU_KEEPER": "1"}, 1)])
def test_no_keepers_when_off(script, env, threads):
    r = _run(script, threads, **env)
    assert r["started"] == 0 and r["idle"] == 0
    np.testing.assert_allclose(r["out"], _reference(), rtol=1e-4, atol=1e-4)


def test_results_equal_without_keepers(script):
    for threads in (1, 2, 3):
        on = _run(script, threads, linger_us=1000, MYCEL_CPU_KEEPER="1")
        off = _run(script, threads, MYCEL_CPU_KEEPER="0")
        assert on["out"] == off["out"]  # bit for bit: the keepers touch no data
        np.testing.assert_allclose(on["out"], _reference(), rtol=1e-4, atol=1e-4)
