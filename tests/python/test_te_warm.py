"""The warm TE kernel cache (mycel.te.warm): after warming with one small training step, a fresh
process training the same model family at another batch size under MYCEL_TE_FUSION=1 runs the
system compiler zero times, and its losses equal the interpreter's (MYCEL_TE_FUSION=0)."""
import os
import subprocess
import sys
import textwrap

import pytest

from mycel.te import warm

STEP = textwrap.dedent("""
    import sys
    import numpy as np
    import mycel
    from mycel import nn
    from mycel._mycel import te
    from mycel.te.warm import Mlp
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(1)
    net = Mlp()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
        sparse=True, reduction="mean")), opt)
    rng = np.random.default_rng(0)
    x = mycel.Tensor(rng.standard_normal((16, 784)).astype(np.float32))
    y = mycel.Tensor(rng.integers(0, 10, 16).astype(np.int32))
    losses = [float(step(x, y).asnumpy()) for _ in range(3)]
    print(te.compile_count(), *losses)
""")


def run_step(tmp_path, cache, fusion):
    script = tmp_path / "step.py"  # graph mode reads the source: a file, not -c
    script.write_text(STEP)
    env = dict(os.environ, MYCEL_TE_CACHE=str(cache), MYCEL_TE_FUSION=fusion)
    out = subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), [float(v) for v in out[1:]]


def test_warm_cache_leaves_no_cold_compile(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    built = warm.warm_cache(["mlp"], cache=cache)
    assert built > 0  # a cold cache: the chains of the step were compiled
    assert warm.warm_cache(["mlp"], cache=cache, force=True) == 0  # warm now
    # The stamp lists the step's libraries: while they are there, a run builds no step at all
    # (what makes the warm step of scripts/setup cost nothing after a build that changed nothing).
    [stamp] = cache.glob("warm-*.txt")
    libs = [line for line in stamp.read_text().splitlines() if line and not line.startswith("#")]
    assert len(libs) >= built and all(os.path.dirname(p) == str(cache) for p in libs)
    with monkeypatch.context() as m:
        m.setattr(warm, "_one_step", lambda *a: pytest.fail("a step ran despite the stamp"))
        assert warm.warm_cache(["mlp"], cache=cache) == 0
    os.remove(libs[-1])  # a kernel gone from the cache: the steps run and build it again
    assert warm.warm_cache(["mlp"], cache=cache) == 1
    compiles, losses = run_step(tmp_path, cache, "1")
    assert compiles == 0  # batch 16 in a new process: every kernel came from the cache
    _, ref = run_step(tmp_path, cache, "0")
    for a, b in zip(losses, ref):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (losses, ref)


def test_stale_stamps_are_removed(tmp_path):
    """A stamp made for a library or compiler file that has changed or gone can never match
    again: the next warm run removes it; another installation's current stamp stays."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    other = tmp_path / "other_lib.so"  # another installation's library, unchanged
    other.write_bytes(b"x")
    rebuilt = tmp_path / "rebuilt_lib.so"
    rebuilt.write_bytes(b"x")
    rebuilt_id = warm._file_id(str(rebuilt))
    rebuilt.write_bytes(b"xy")  # rebuilt since its stamp was written
    lib = cache / "te_0.so"
    lib.write_bytes(b"")
    stamps = {
        "warm-old.txt": f"{lib}\n",  # from before stamps had a header
        "warm-rebuilt.txt": f"# library {rebuilt_id}\n{lib}\n",
        "warm-gone.txt": f"# library {tmp_path / 'gone.so'} 1 2\n{lib}\n",
        "warm-other.txt": f"# library {warm._file_id(str(other))}\n{lib}\n",
        "warm-newcxx.txt": f"# library {warm._file_id(str(other))}\n"
                           f"# compiler_file {rebuilt_id}\n{lib}\n",
    }
    for name, text in stamps.items():
        (cache / name).write_text(text)
    warm.warm_cache(["mlp"], cache=cache)
    left = sorted(p.name for p in cache.glob("warm-*.txt"))
    [mine] = [n for n in left if n not in stamps]  # this run's own
    assert left == sorted(["warm-other.txt", mine]), left
    head = (cache / mine).read_text().splitlines()[0]
    assert head == "# library " + warm._file_id(mycel_lib()), head


def mycel_lib():
    import mycel
    return mycel._mycel.__file__
