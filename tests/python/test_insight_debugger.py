"""Debugger: watchpoints evaluated after every kernel launch, in compiled steps and eagerly; each
condition fires on a constructed case and not on a near miss (references: numpy); hits name the
node and the user's source line; pause hands the run over to a callback or another thread; dumps
equal numpy's recomputation."""
import json
import os
import threading

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.insight import Debugger, Watchpoint

HERE = os.path.abspath(__file__)


def line_of(text):
    with open(HERE) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


@pytest.fixture(params=["graph", "pynative"])
def mode(request):
    mycel.set_context(mode=mycel.GRAPH_MODE if request.param == "graph" else mycel.PYNATIVE_MODE)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


class _LogNet(nn.Cell):
    def construct(self, x):
        y = x * 2.0
        z = ops.log(y)  # the injected NaN: log of a negative
        return z + 1.0


def test_nan_stops_at_the_op_naming_its_source_line(mode):
    net = _LogNet()
    got = net(Tensor(np.float32([1, 2, 3, 4]))).asnumpy()
    np.testing.assert_allclose(got, np.log(np.float32([2, 4, 6, 8])) + 1, rtol=1e-6)
    x = Tensor(np.float32([1.0, -2.0, 3.0, -4.0]))
    line = line_of("z = ops.log(y)  # the injected NaN")
    with Debugger(watchpoints=[Watchpoint("nan")]) as dbg:
        want = (rf"\[debugger\] log output 0 has NaN \(2 of 4 elements\), node \S*log, step 0 "
                rf"at .*test_insight_debugger.py:{line}(:\d+)?: z = ops.log\(y\)")
        with pytest.raises(RuntimeError, match=want):
            net(x)
    (hit,) = dbg.hits()  # it stopped there: the add after it was never checked
    assert (hit.op, hit.condition, hit.count, hit.numel) == ("log", "nan", 2, 4)
    assert hit.where.startswith(f"{HERE}:{line}")
    # inputs and outputs summarized: the input of log is 2x, the output has the 2 NaNs
    np.testing.assert_allclose(hit.inputs[0]["min"], -8.0)
    assert hit.outputs[0]["nan"] == 2 and hit.outputs[0]["shape"] == (4,)
    np.testing.assert_allclose(hit.outputs[0]["max"], np.log(6.0), rtol=1e-6)
    out = net(x).asnumpy()  # the debugger is off again: no error, the NaN flows through
    assert np.isnan(out).sum() == 2


def _same(t):
    """A launch whose output equals its input (times one)."""
    return ops.mul(t, Tensor(np.float32(1.0)))


def _fires(watchpoints, fn, on_hit="record"):
    with Debugger(watchpoints=watchpoints, on_hit=on_hit) as dbg:
        fn()
    return dbg.hits()


@pytest.mark.parametrize("wp,hit_x,miss_x,op", [
    (Watchpoint("nan"), [-1.0, 1.0], [1e-30, 1.0], ops.log),
    (Watchpoint("inf"), [0.0, 2.0], [1e-30, 2.0], lambda t: ops.div(Tensor(np.float32([1.0, 1.0])), t)),
    (Watchpoint("overflow"), [70000.0, 1.0], [65000.0, 1.0], _same),
    (Watchpoint("overflow", threshold=10.0), [-10.5, 1.0], [-9.5, 1.0], _same),
    (Watchpoint("tensor_too_large", threshold=10.0), [-10.5, 1.0], [-9.9, 9.9], _same),
    (Watchpoint("tensor_too_large", threshold=3.0, stat="mean"), [4.0, 2.5], [3.9, 2.0], _same),
    (Watchpoint("tensor_too_small", threshold=1e-4), [1e-5, -5e-5], [2e-4, -5e-5], _same),
    (Watchpoint("tensor_too_small", threshold=-1.0, stat="min"), [-1.5, 3.0], [-0.5, 3.0], _same),
])
def test_each_tensor_condition_fires_and_misses(wp, hit_x, miss_x, op):
    hits = _fires([wp], lambda: op(Tensor(np.float32(hit_x))))
    assert [(h.condition, h.output) for h in hits] == [(wp.condition, 0)], hits
    # the count is numpy's count of the offending elements
    a = np.asarray(hit_x, np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(a) if wp.condition == "nan" else (1 / a if wp.condition == "inf" else a)
    if wp.condition == "nan":
        assert hits[0].count == np.isnan(y).sum()
    elif wp.condition == "inf":
        assert hits[0].count == np.isinf(y).sum()
    elif wp.condition == "overflow" or wp.stat == "max_abs" and wp.condition == "tensor_too_large":
        assert hits[0].count == (np.abs(y) > wp.threshold).sum()
    if wp.condition.startswith("tensor_too"):
        ref = {"max_abs": np.abs(y).max(), "mean": y.mean(), "min": y.min()}[wp.stat]
        np.testing.assert_allclose(hits[0].value, ref, rtol=1e-6)
    assert _fires([wp], lambda: op(Tensor(np.float32(miss_x)))) == []


def test_node_patterns_choose_the_ops_watched():
    x = Tensor(np.float32([100.0]))
    hits = _fires([Watchpoint("tensor_too_large", threshold=50.0, nodes="mul*")],
                  lambda: ops.add(ops.mul(x, 1.0), 1.0))
    assert [h.op for h in hits] == ["mul"]


class _Regress(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 2)

    def construct(self, x):
        return self.fc(x)


def _train_cell(lr, seed=0):
    mycel.set_seed(seed)
    net = _Regress()
    cell = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.SGD(net.trainable_params(), learning_rate=lr))
    cell.set_train(True)
    return net, cell


def test_weight_not_changing(mode):
    x = Tensor(np.ones((4, 3), np.float32))
    y = Tensor(np.zeros((4, 2), np.float32))
    for lr, want in ((0.0, True), (0.1, False)):
        net, cell = _train_cell(lr)
        cell(x, y)  # compile / warm up
        wp = Watchpoint("weight_not_changing", nodes="*fc.weight", rtol=1e-6)
        with Debugger(watchpoints=[wp], on_hit="record", network=net) as dbg:
            for _ in range(3):
                cell(x, y)
                if mode == "pynative":
                    dbg.step_end()  # a custom eager loop marks its steps
        hits = dbg.hits()
        if want:  # each step's end against the previous one (the first: against start())
            assert [h.node for h in hits] == ["fc.weight"] * 3
            assert [h.step for h in hits] == [0, 1, 2]
            assert all(h.value == 0.0 for h in hits)
        else:
            assert hits == []


def test_gradient_vanishing_and_exploding(mode):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((8, 3)).astype(np.float32)
    ys = rng.standard_normal((8, 2)).astype(np.float32)
    net, cell = _train_cell(0.0)
    w = net.fc.weight.asnumpy().astype(np.float64)
    b = net.fc.bias.asnumpy().astype(np.float64)
    # closed form of MSELoss (mean over all 16 elements) of y = x w^T + b
    r = xs @ w.T + b - ys
    gw = 2.0 / r.size * r.T @ xs
    gb = 2.0 / r.size * r.sum(0)
    norms = sorted([np.linalg.norm(gw), np.linalg.norm(gb)])

    def run(wps):
        with Debugger(watchpoints=wps, on_hit="record") as dbg:
            cell(Tensor(xs), Tensor(ys))
        return dbg.hits()

    hits = run([Watchpoint("gradient_vanishing", threshold=norms[0] * 1.01)])
    # compiled: the optimizer launch's input a backward launch wrote; eager: what the
    # optimizer was handed, named by its Parameter
    assert len(hits) == 1 and hits[0].kind == ("input" if mode == "graph" else "gradient")
    np.testing.assert_allclose(hits[0].value, norms[0], rtol=1e-4)
    assert run([Watchpoint("gradient_vanishing", threshold=norms[0] * 0.99)]) == []
    hits = run([Watchpoint("gradient_exploding", threshold=norms[1] * 0.99)])
    assert len(hits) == 1
    np.testing.assert_allclose(hits[0].value, norms[1], rtol=1e-4)
    assert run([Watchpoint("gradient_exploding", threshold=norms[1] * 1.01)]) == []
    both = run([Watchpoint("gradient_exploding", threshold=0.0)])
    np.testing.assert_allclose(sorted(h.value for h in both), norms, rtol=1e-4)


def test_pause_with_a_callback_then_continue(mode):
    net = _LogNet()
    net(Tensor(np.float32([1.0, 2.0])))
    seen = []

    def inspect(hit):
        seen.append((hit.op, hit.outputs[0]["nan"], threading.current_thread() is main))

    main = threading.current_thread()
    with Debugger(watchpoints=[Watchpoint("nan", nodes="log")], on_hit="pause",
                  callback=inspect) as dbg:
        out = net(Tensor(np.float32([1.0, -2.0]))).asnumpy()
    assert seen == [("log", 1, True)]  # called on the run's thread, at the op
    assert np.isnan(out[1]) and np.isclose(out[0], np.log(2.0) + 1)  # then the run went on
    assert len(dbg.hits()) == 1


def test_pause_blocks_until_another_thread_continues(mode):
    net = _LogNet()
    net(Tensor(np.float32([1.0, 2.0])))
    result = {}

    def run():
        try:
            result["out"] = net(Tensor(np.float32([1.0, -2.0]))).asnumpy()
        except RuntimeError as e:
            result["error"] = str(e)

    with Debugger(watchpoints=[Watchpoint("nan", nodes="log")], on_hit="pause",
                  pause_timeout=60, keep_arrays=True) as dbg:
        for action in ("resume", "abort"):
            result.clear()
            t = threading.Thread(target=run, daemon=True)
            t.start()
            hit = dbg.wait_for_hit(timeout=60)
            assert hit is not None and hit.op == "log"
            assert t.is_alive() and not result  # blocked at the op
            np.testing.assert_allclose(hit.arrays["inputs"][0], [2.0, -4.0])
            getattr(hit, action)()
            t.join(timeout=60)
            assert not t.is_alive()
            if action == "resume":
                assert np.isnan(result["out"][1])
            else:
                assert "aborted while paused" in result["error"]


def test_pause_times_out_instead_of_hanging():
    with Debugger(watchpoints=[Watchpoint("nan")], on_hit="pause", pause_timeout=0.2):
        with pytest.raises(RuntimeError, match="not resumed within 0.2 s"):
            ops.log(Tensor(np.float32([-1.0])))


def test_dumps_equal_numpy(tmp_path, mode):
    net = _Regress()
    xs = [np.random.default_rng(k).standard_normal((2, 3)).astype(np.float32) for k in range(3)]
    net(Tensor(xs[0]))
    with Debugger(watchpoints=[], dump_dir=str(tmp_path), dump_nodes="*fc*",
                  dump_steps=[1], network=net) as dbg:
        for x in xs:
            net(Tensor(x))
            if mode == "pynative":
                dbg.step_end()
    dumps = dbg.dumps()
    assert dumps and {d[2] for d in dumps} == {1}
    w = net.fc.weight.asnumpy()
    b = net.fc.bias.asnumpy()
    outs = [np.load(p) for p, _, _, kind, _ in dumps if kind == "output"]
    ins = [np.load(p) for p, _, _, kind, k in dumps if kind == "input" and k == 0]
    np.testing.assert_allclose(ins[0], xs[1])
    np.testing.assert_allclose(outs[-1], xs[1] @ w.T + b, rtol=1e-5, atol=1e-6)
    with open(tmp_path / "manifest.json") as f:
        manifest = json.load(f)
    assert sorted(m["path"] for m in manifest) == sorted(os.path.relpath(d[0], tmp_path)
                                                         for d in dumps)
    assert not [p for p in os.listdir(tmp_path / "step1") if ".tmp" in p]


def test_debugger_and_profiler_together(tmp_path):
    prof = mycel.Profiler(str(tmp_path))
    with Debugger(on_hit="record") as dbg:
        ops.sqrt(Tensor(np.float32([-1.0, 4.0])))
    assert [e[0] for e in prof.events()] == ["sqrt"]
    assert [(h["op"], h["count"]) for h in dbg.hits()] == [("sqrt", 1)]


def test_legacy_arguments_and_bad_input():
    with Debugger(watch=("inf",), max_abs=1.5, raise_on_hit=False) as dbg:
        ops.div(Tensor(np.float32([1.0, 1.0, -1.0])), Tensor(np.float32([0.0, 2.0, 0.0])))
        ops.exp(Tensor(np.float32([0.0, 1.0])))
        ops.log(Tensor(np.float32([-1.0])))  # NaN is not watched here
    assert [(h.op, h.condition) for h in dbg.hits()] == [("div", "inf"),
                                                          ("exp", "tensor_too_large")]
    with pytest.raises(ValueError, match="watch conditions must be among"):
        Debugger(watch=("overflow",))
    with pytest.raises(ValueError, match="condition must be one of"):
        Watchpoint("slow")
    with pytest.raises(ValueError, match="needs a threshold"):
        Watchpoint("tensor_too_large")
    with pytest.raises(ValueError, match="on_hit must be"):
        Debugger(on_hit="stop")
    with pytest.raises(ValueError, match="dump_nodes needs a dump_dir"):
        Debugger(dump_nodes="*")


class _TwoDense(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(3, 4)
        self.fc2 = nn.Dense(4, 2)

    def construct(self, x):
        return self.fc2(ops.relu(self.fc1(x)))


def test_scope_patterns_pick_one_cells_launches(mode):
    net = _TwoDense()
    x = Tensor(np.ones((2, 3), np.float32))
    net(x)
    everything = Watchpoint("tensor_too_large", threshold=-1.0, nodes="*/fc2-Dense/*")
    with Debugger(watchpoints=[everything], on_hit="record") as dbg:
        out = net(x).asnumpy()
    hits = dbg.hits()
    assert hits and all(h.node.startswith("Default/fc2-Dense/") for h in hits), hits
    # the last launch of fc2 produced the network's output
    np.testing.assert_allclose(hits[-1].outputs[0]["max"], out.max(), rtol=1e-6)
