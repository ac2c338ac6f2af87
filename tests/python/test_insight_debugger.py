"""Debugger: watch conditions on every kernel output, in compiled steps (with the user's source
line) and eagerly; counts checked against numpy."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.insight import Debugger


class _LogNet(nn.Cell):
    def construct(self, x):
        y = x * 2.0
        z = ops.log(y)
        return z + 1.0


def test_graph_mode_nan_raises_with_the_source_line():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = _LogNet()
        x = Tensor(np.float32([1.0, -2.0, 3.0, -4.0]))
        got = net(Tensor(np.float32([1, 2, 3, 4]))).asnumpy()
        np.testing.assert_allclose(got, np.log(np.float32([2, 4, 6, 8])) + 1, rtol=1e-6)
        with Debugger() as dbg:
            want = (r"\[debugger\] \S*log\S* output 0 has NaN \(2 of 4 elements\) "
                    r"at .*test_insight_debugger.py:\d+:\d+: +z = ops.log\(y\)")
            with pytest.raises(RuntimeError, match=want):
                net(x)
        (hit,) = dbg.hits()
        assert hit["condition"] == "NaN" and hit["count"] == 2 and hit["numel"] == 4
        net(x)  # the debugger is off again: no error, the NaN flows through
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_eager_hits_recorded_without_raising():
    x = np.float32([[0.0, 1.0], [-1.0, 2.0]])
    with Debugger(watch=("inf",), max_abs=1.5, raise_on_hit=False) as dbg:
        ops.div(Tensor(np.float32([1.0, 1.0, -1.0])),
                Tensor(np.float32([0.0, 2.0, 0.0])))  # inf, -inf
        ops.exp(Tensor(x))
        ops.log(Tensor(np.float32([-1.0])))  # NaN is not watched here
    hits = [(h["op"], h["condition"], h["count"]) for h in dbg.hits()]
    assert hits == [("div", "inf", 2), ("exp", "|x| > 1.5", int((np.exp(x) > 1.5).sum()))]
    ops.log(Tensor(np.float32([-1.0])))  # off: nothing recorded, nothing raised
    assert len(dbg.hits()) == 2


def test_debugger_and_profiler_together(tmp_path):
    prof = mycel.Profiler(str(tmp_path))
    with Debugger(raise_on_hit=False) as dbg:
        ops.sqrt(Tensor(np.float32([-1.0, 4.0])))
    assert [e[0] for e in prof.events()] == ["sqrt"]
    assert [(h["op"], h["count"]) for h in dbg.hits()] == [("sqrt", 1)]
    with pytest.raises(ValueError, match="watch conditions must be among"):
        Debugger(watch=("overflow",))
