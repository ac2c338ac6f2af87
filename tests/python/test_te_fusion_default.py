"""TE fusion as the default (MYCEL_TE_FUSION unset = async): fused chains start on the interpreter
and switch to their generated kernels (the same bits) once one background worker has built them (a bounded queue, one niced compiler, a per-process cap),
and a process exits without waiting for compiles or leaving a compiler or temporary files behind.
References: the interpreter (MYCEL_TE_FUSION=0, bit for bit for chains) and numpy."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel._mycel import graph as G
from mycel._mycel import te as _te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

RNG = np.random.default_rng(18)


@pytest.fixture(autouse=True)
def graph_mode():
    old = os.environ.pop("MYCEL_TE_FUSION", None)
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
    if old is not None:
        os.environ["MYCEL_TE_FUSION"] = old
    else:
        os.environ.pop("MYCEL_TE_FUSION", None)


class Chain(nn.Cell):
    def construct(self, x, a):
        y = ops.relu(x * a + 0.25)
        return ops.sigmoid(y * 2.0 - x) * ops.tanh(x) + ops.exp(-(x * x))


class Softmax(nn.Cell):  # a chain into a sum whose chain is read again (e / sum(e))
    def construct(self, x):
        e = ops.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def _interpreter(make, *args):
    os.environ["MYCEL_TE_FUSION"] = "0"
    try:
        return [t.asnumpy() for t in _as_list(make()(*args))]
    finally:
        os.environ.pop("MYCEL_TE_FUSION")


def _as_list(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def test_default_is_async_te_and_equals_the_interpreter_bit_for_bit():
    xv, av = (RNG.standard_normal((37, 21)).astype(np.float32) for _ in range(2))
    x, a = ms.Tensor(xv), ms.Tensor(av)
    ref = _interpreter(Chain, x, a)[0]
    before = _te.background_stats()
    net = Chain()
    first = net(x, a).asnumpy()  # the interpreter: the kernel is still being built
    _te.wait_background_builds()
    stats = _te.background_stats()
    assert stats["built"] > before["built"], (before, stats)
    after = net(x, a).asnumpy()  # the generated kernel
    np.testing.assert_array_equal(first, ref)
    np.testing.assert_array_equal(after, ref)
    y = np.maximum(xv * av + 0.25, 0)
    np.testing.assert_allclose(after, 1 / (1 + np.exp(-(2 * y - xv))) * np.tanh(xv)
                               + np.exp(-xv * xv), rtol=1e-5, atol=1e-6)
    # The listing names the chain as the interpreter's (the same bits either way).
    assert "fused_elementwise{" in G.compile(Chain()).program_text(x, a)


def test_default_fuses_reductions_and_results_never_change_mid_run():
    # A chain into a reduction is one fused_reduce instruction by default too: the interpreter
    # until its kernel is built, then the kernel, which reduce in one order (ordered_reduce.h),
    # so the switch changes no bit (tests/python/test_te_reduce_order.py covers the shapes).
    xv = (RNG.standard_normal((16, 40)) * 3).astype(np.float32)
    x = ms.Tensor(xv)
    text = G.compile(Softmax()).program_text(x)
    assert "fused_reduce{" in text and "fused_reduce[te]{" not in text, text
    os.environ["MYCEL_TE_FUSION"] = "1"
    try:
        assert "fused_reduce[te]{" in G.compile(Softmax()).program_text(x)
        ref = Softmax()(x).asnumpy()  # the kernel from the first step
    finally:
        os.environ.pop("MYCEL_TE_FUSION")
    net = Softmax()
    first = net(x).asnumpy()
    _te.wait_background_builds()
    np.testing.assert_array_equal(first, ref)
    np.testing.assert_array_equal(net(x).asnumpy(), ref)
    e = np.exp(xv - xv.max(-1, keepdims=True))
    np.testing.assert_allclose(ref, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    unfused = _interpreter(Softmax, x)[0]  # MYCEL_TE_FUSION=0: the reduce kernels' order
    np.testing.assert_allclose(unfused, ref, rtol=1e-6, atol=1e-7)


def test_a_bad_mode_names_the_variable():
    os.environ["MYCEL_TE_FUSION"] = "yes please"
    try:
        with pytest.raises(ValueError, match="MYCEL_TE_FUSION.*got 'yes please'"):
            Chain()(ms.Tensor(np.ones((2, 3), np.float32)), ms.Tensor(np.ones((2, 3), np.float32)))
    finally:
        os.environ.pop("MYCEL_TE_FUSION")


# A process whose graph has many distinct chains (outer(inner(x * c)) * x), more compiler time
# than it lives; it reports its background statistics on stdout.
_UNARY = {"exp": "np.exp", "tanh": "np.tanh", "sigmoid": "sig", "relu": "relu", "abs": "np.abs",
          "neg": "np.negative"}
_PAIRS = [(a, b) for a in _UNARY for b in _UNARY]
_SCRIPT = (
    "import sys, time, numpy as np, mycel as ms\nfrom mycel import nn, ops\n"
    "from mycel._mycel import te\nms.set_context(mode=ms.GRAPH_MODE)\n\n\n"
    "class Many(nn.Cell):\n    def construct(self, x):\n"
    + "".join(f"        c{k} = ops.{a}(ops.{b}(x * 0.5)) * x\n" for k, (a, b) in enumerate(_PAIRS))
    + "        return ops.stack([" + ", ".join(f"c{k}" for k in range(len(_PAIRS))) + "], 0).sum(0)\n\n\n"
    "def sig(v):\n    return 1 / (1 + np.exp(-v))\n\n\n"
    "def relu(v):\n    return np.maximum(v, 0)\n\n\n"
    "x = np.linspace(-1, 1, 64).astype(np.float32)\n"
    "net = Many()  # held: a freed Cell frees its program, and its queued builds leave the queue\n"
    "got = net(ms.Tensor(x)).asnumpy()\n"
    "ref = " + " + ".join(f"{_UNARY[a]}({_UNARY[b]}(x * 0.5)) * x" for a, b in _PAIRS) + "\n"
    "np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)\n"
    "if 'wait' in sys.argv: te.wait_background_builds()\n"
    "if 'linger' in sys.argv: time.sleep(float(sys.argv[-1]))\n"
    "print(dict(te.background_stats(), compile_count=te.compile_count()), flush=True)\n")


def _run(tmp_path, *args, env=None, background=False):
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "many_chains.py"  # graph mode reads the source: a file, not -c
    script.write_text(_SCRIPT)
    cache = tmp_path / "cache"
    full_env = dict(os.environ, MYCEL_TE_CACHE=str(cache), **(env or {}))
    full_env.pop("MYCEL_TE_FUSION", None)
    cmd = [sys.executable, str(script), *args]
    if background:
        return subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, text=True), cache
    out = subprocess.run(cmd, env=full_env, check=True, timeout=300, capture_output=True, text=True)
    return eval(out.stdout.strip().splitlines()[-1]), cache  # noqa: S307 (our own dict)


def _compilers_of(cache):
    """(niceness, command line) of live processes whose command line names the cache folder."""
    ps = subprocess.run(["ps", "-ww", "-eo", "ni=,args="], capture_output=True, text=True).stdout
    return [(int(line.split(None, 1)[0]), line) for line in ps.splitlines()
            if str(cache) in line and "ps -ww" not in line and line.split(None, 1)[0].lstrip("-").isdigit()]


def test_exit_leaves_no_compiler_no_temporary_files_and_waits_for_none(tmp_path):
    stats, cache = _run(tmp_path)
    assert stats["compiles"] < len(_PAIRS), stats  # it did not wait for the queue
    time.sleep(0.5)
    assert _compilers_of(cache) == []  # the compiler under way was killed, not orphaned
    left = [p.name for p in cache.iterdir() if p.name.startswith("tmp_")] if cache.exists() else []
    assert left == [], left
    libs = sorted(p for p in cache.iterdir() if p.suffix == ".so")
    for so in libs:  # whatever reached the cache is complete: its source is beside it
        assert so.with_suffix(".cc").exists()


def test_the_background_compiler_is_niced_and_alone(tmp_path):
    proc, cache = _run(tmp_path, "linger", "20", background=True)
    seen, deadline = [], time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            found = _compilers_of(cache)
            if found:
                seen.append(found)
                if len(seen) >= 5:
                    break
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert seen, "no background compiler seen"
    base = os.getpriority(os.PRIO_PROCESS, 0)
    for found in seen:
        assert all(ni >= min(base + 10, 19) for ni, _ in found), found
        # one compile at a time: one shell and its compiler driver/stages, for one source
        names = {os.path.basename(a.strip("'")) for _, line in found for a in line.split()}
        sources = {n for n in names if n.startswith("tmp_") and n.endswith(".cc")}
        assert len(sources) <= 1, found


def test_queue_bound_and_compile_cap(tmp_path):
    stats, _ = _run(tmp_path / "q", "wait", env={"MYCEL_TE_BACKGROUND_QUEUE": "3"})
    assert stats["refused"] > 0 and stats["built"] < len(_PAIRS), stats  # the results were still right
    stats, _ = _run(tmp_path / "c", "wait", env={"MYCEL_TE_BACKGROUND_COMPILES": "2"})
    assert stats["compiles"] == 2 and stats["compile_count"] == 2, stats
    assert stats["built"] == 2 and stats["failed"] == len(_PAIRS) - 2, stats
    # With the cap at 0, kernels already cached are still used (what CI does after te.warm).
    stats, _ = _run(tmp_path / "c", "wait", env={"MYCEL_TE_BACKGROUND_COMPILES": "0"})
    assert stats["compiles"] == 0 and stats["built"] == 2, stats
    with pytest.raises(subprocess.CalledProcessError):
        _run(tmp_path / "bad", env={"MYCEL_TE_BACKGROUND_QUEUE": "-1"})


_BUILD = ("import numpy as np\nfrom mycel import te\n"
          "x = te.placeholder((4096,), 'float32', 'x')\n"
          "y = te.compute((4096,), lambda i: te.exp(x[i] * 2.0) + x[i], 'y')\n"
          "f = te.build([x], [y])\n"
          "v = np.linspace(-3, 3, 4096).astype(np.float32)\n"
          "assert np.allclose(f(v).asnumpy(), np.exp(2 * v) + v, rtol=1e-5, atol=1e-5)\n"
          "print(f.library)\n")


@pytest.mark.skipif(not __import__("shutil").which("objdump"), reason="needs objdump")
def test_kernels_follow_the_isa_this_process_may_use(tmp_path):
    # -march=native describes the CPU the compiler sees; under MYCEL_MAX_CPU_ISA=avx2 (or an
    # emulator showing an AVX2-only CPU) kernels target x86-64-v3: no AVX-512 instruction, and a
    # library of their own in the cache.
    def build(env):
        r = subprocess.run([sys.executable, "-c", _BUILD], capture_output=True, text=True,
                           timeout=300, check=True,
                           env=dict(os.environ, MYCEL_TE_CACHE=str(tmp_path / "c"), **env))
        return r.stdout.strip().splitlines()[-1]
    capped = build({"MYCEL_MAX_CPU_ISA": "avx2"})
    native = build({})
    assert capped != native
    asm = subprocess.run(["objdump", "-d", capped], capture_output=True, text=True).stdout
    assert "ymm" in asm and "zmm" not in asm and "{k" not in asm
