"""A process forked from one that ran OpenMP-parallel ops (a multiprocessing worker under the
default 'fork' start method) computes on one thread instead of hanging on libgomp's pool, whose
threads the child does not have; asking it for more threads is a clear error."""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, numpy as np, mycel
    from mycel import nn
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=2)
    net = nn.Dense(512, 512)
    x = mycel.Tensor(np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32))
    parent = net(x).asnumpy()  # large enough to run OpenMP-parallel
    pid = os.fork()
    if pid == 0:
        child = net(x).asnumpy()
        ok = np.allclose(child, parent, rtol=1e-5, atol=1e-5)
        try:
            mycel.set_context(num_threads=2)
            refused = False
        except RuntimeError as e:
            refused = "forked" in str(e) and "spawn" in str(e)
        os._exit(0 if ok and refused else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
""")


def test_forked_child_runs_on_one_thread():
    env = dict(os.environ, OMP_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "child 0" in out.stdout, out.stdout + out.stderr
