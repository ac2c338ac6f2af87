"""SummaryRecord, SummaryCollector and the summary ops (ScalarSummary, ...), eager and inside
GRAPH_MODE compiled steps: what they write, TensorBoard's reader reads back with numpy's values."""
import json
import os
import sys

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import Tensor, nn, ops
from mycel.train import Model
from mycel.train.summary import SummaryRecord
from insight_helpers import accumulator, only_event_file

tensor_util = pytest.importorskip("tensorboard.util.tensor_util")


@pytest.fixture(params=[mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _hist_counts(hv, x):
    edges = np.concatenate([[hv.min], hv.bucket_limit])
    return np.histogram(np.asarray(x, np.float64), bins=edges)[0]


def test_mindspore_names():
    from mycel.train.callback import SummaryCollector
    assert mycel.SummaryRecord is SummaryRecord is mycel.insight.SummaryRecord
    assert SummaryCollector is mycel.SummaryCollector is mycel.train.SummaryCollector
    from mycel.profiler import Profiler
    assert Profiler is mycel.Profiler
    for name in ("ScalarSummary", "ImageSummary", "HistogramSummary", "TensorSummary"):
        assert getattr(ops, name) is getattr(ops.operations, name)


def test_summary_record_add_value_and_record(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 5)).astype(np.float32)
    img = rng.random((2, 3, 4, 4)).astype(np.float32)
    with SummaryRecord(str(tmp_path), file_prefix="run", file_suffix="_x") as rec:
        for step in (1, 2, 3):
            rec.add_value("scalar", "loss", Tensor(np.float32(1.0 / step)))
            rec.add_value("histogram", "w", Tensor(w * step))
            rec.add_value("tensor", "t", Tensor(np.arange(6, dtype=np.int32).reshape(2, 3) + step))
            rec.add_value("image", "img", Tensor(img))
            rec.record(step)
        rec.flush()
        path = rec.event_file_name
    assert os.path.basename(path).startswith("run.out.tfevents.") and path.endswith("_x")
    acc = accumulator(only_event_file(str(tmp_path)))
    want = [(s, np.float32(1.0 / s)) for s in (1, 2, 3)]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == want
    for e, s in zip(acc.Histograms("w"), (1, 2, 3)):
        hv = e.histogram_value
        np.testing.assert_array_equal(hv.bucket, _hist_counts(hv, w * s))
    np.testing.assert_array_equal(tensor_util.make_ndarray(acc.Tensors("t")[2].tensor_proto),
                                  np.arange(6, dtype=np.int32).reshape(2, 3) + 3)
    assert len(acc.Images("img")) == 3


def test_summary_record_errors(tmp_path):
    rec = SummaryRecord(str(tmp_path))
    want = "plugin must be one of 'scalar', 'image', 'histogram', 'tensor', 'graph', got 'audio'"
    with pytest.raises(ValueError, match=want):
        rec.add_value("audio", "a", Tensor(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="scalar 'loss' must have one element, got shape \\(3,\\)"):
        rec.add_value("scalar", "loss", Tensor(np.zeros(3, np.float32)))
    want = "image 'im' must be 4-D NCHW with 1, 3 or 4 channels, got shape \\(2, 5, 4, 4\\)"
    with pytest.raises(ValueError, match=want):
        rec.add_value("image", "im", Tensor(np.zeros((2, 5, 4, 4), np.float32)))
    with pytest.raises(TypeError, match="must be a Tensor, a numpy array or a number, got str"):
        rec.add_value("tensor", "t", "text")
    with pytest.raises(ValueError, match="step must be an int >= 0, got -1"):
        rec.record(-1)
    rec.close()
    rec.close()  # twice is fine
    with pytest.raises(ValueError, match="is closed"):
        rec.record(1)


class _SummaryNet(nn.Cell):
    """A network with every summary op in construct; `v` is summarized twice (program order)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 3)
        self.scalar = ops.ScalarSummary()
        self.hist = ops.HistogramSummary()
        self.tensor = ops.TensorSummary()
        self.image = ops.ImageSummary()

    def construct(self, x):
        y = self.dense(x)
        self.scalar("sum", y.sum())
        self.hist("y", y)
        self.tensor("x", x)
        self.image("img", x.reshape((1, 1, 2, 4)))
        self.scalar("v", x[0, 0])
        self.scalar("v", x[0, 1])  # the later value is the one recorded
        return y * 2.0


def test_summary_ops_in_construct(tmp_path, mode):
    net = _SummaryNet()
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(3)]
    with SummaryRecord(str(tmp_path)) as rec:
        outs = []
        for step, x in enumerate(xs):
            outs.append(net(Tensor(x)).asnumpy())
            rec.record(step)
    acc = accumulator(only_event_file(str(tmp_path)))
    sums = [e.value for e in acc.Scalars("sum")]
    np.testing.assert_allclose(sums, [o.sum() / 2 for o in outs], rtol=1e-5)
    assert [e.value for e in acc.Scalars("v")] == [x[0, 1] for x in xs]
    for e, o in zip(acc.Histograms("y"), outs):
        hv = e.histogram_value
        np.testing.assert_array_equal(hv.bucket, _hist_counts(hv, o / 2))
    for e, x in zip(acc.Tensors("x"), xs):
        np.testing.assert_array_equal(tensor_util.make_ndarray(e.tensor_proto), x)
    assert [e.step for e in acc.Images("img")] == [0, 1, 2]


def test_summary_ops_eager_return_none_and_check_inputs(tmp_path):
    with pytest.raises(TypeError, match="'name' must be a non-empty str"):
        ops.ScalarSummary()(3, Tensor(np.float32(1)))
    want = r"\[ScalarSummary\] 'x' must be a scalar \(one element\), got shape \(2,\)"
    with pytest.raises(ValueError, match=want):
        ops.ScalarSummary()("x", Tensor(np.zeros(2, np.float32)))
    with pytest.raises(ValueError, match=r"\[ImageSummary\] 'im' must be a 4-D NCHW image batch"):
        ops.ImageSummary()("im", Tensor(np.zeros((2, 2), np.float32)))
    assert ops.ScalarSummary()("x", Tensor(np.float32(1))) is None


def test_graph_mode_summary_errors_name_the_line():
    class Bad(nn.Cell):
        def __init__(self):
            super().__init__()
            self.scalar = ops.ScalarSummary()

        def construct(self, x):
            self.scalar("x", x)
            return x

    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        want = r"\[ScalarSummary\] 'x' must be a scalar.*got shape \(3,\)"
        with pytest.raises(ValueError, match=want):
            Bad()(Tensor(np.zeros(3, np.float32)))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_compiled_step_calls_no_python_per_summary_op(tmp_path):
    """In graph mode the summary ops are instructions of the Program: no Python frame of
    mycel/ops/summary.py runs while the compiled step runs."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = _SummaryNet()
        x = Tensor(np.ones((2, 4), np.float32))
        with SummaryRecord(str(tmp_path)) as rec:
            net(x)  # compiles
            calls = []

            def spy(frame, event, arg):
                ours = frame.f_code.co_filename.endswith(os.path.join("ops", "summary.py"))
                if event == "call" and ours:
                    calls.append(frame.f_code.co_name)
            sys.setprofile(spy)
            try:
                net(x)
            finally:
                sys.setprofile(None)
            assert calls == []
            rec.record(0)
        assert accumulator(only_event_file(str(tmp_path))).Scalars("sum")[0].value == pytest.approx(
            float(net(x).asnumpy().sum() / 2), rel=1e-5)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


class _Regress(nn.Cell):
    """Linear regression whose construct summarizes its prediction (kept under value_and_grad)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 1)
        self.scalar = ops.ScalarSummary()

    def construct(self, x):
        y = self.dense(x)
        self.scalar("pred_mean", y.mean())
        return y


def _regression_data(n=32, batch=8):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x @ np.float32([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def test_summary_collector_with_model_train(tmp_path, mode):
    net = _Regress()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, nn.MSELoss(), opt)
    losses = []

    class Losses(mycel.train.Callback):
        def on_train_step_end(self, run_context):
            losses.append(float(run_context.original_args().net_outputs.asnumpy()))

    collector = mycel.SummaryCollector(str(tmp_path), collect_freq=2)
    model.train(2, _regression_data(), callbacks=[Losses(), collector])  # 8 steps
    acc = accumulator(only_event_file(str(tmp_path)))
    loss_events = acc.Scalars("loss/auto")
    assert [e.step for e in loss_events] == [1, 2, 4, 6, 8]
    np.testing.assert_allclose([e.value for e in loss_events],
                               [losses[s - 1] for s in (1, 2, 4, 6, 8)], rtol=1e-6)
    assert [e.value for e in acc.Scalars("learning_rate/auto")] == [np.float32(0.05)] * 5
    tags = acc.Tags()
    assert {"dense.weight/auto", "dense.bias/auto"} <= set(tags["histograms"]), tags
    # The summary op inside the network's construct records with the collector's steps.
    assert [e.step for e in acc.Scalars("pred_mean")] == [1, 2, 4, 6, 8]
    final_w = net.dense.weight.asnumpy()
    hv = acc.Histograms("dense.weight/auto")[-1].histogram_value
    np.testing.assert_array_equal(hv.bucket, _hist_counts(hv, final_w))
    hp = json.load(open(tmp_path / "hyper_params.json"))
    assert hp["epoch"] == 2 and hp["batch_size"] == 8 and hp["optimizer"] == "Momentum"
    assert hp["learning_rate"] == pytest.approx(0.05) and hp["parameter_count"] == 4


def test_summary_collector_images_and_specified_data(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.random((8, 1, 4, 4)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    net = nn.SequentialCell([nn.Flatten(), nn.Dense(16, 2)])
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.0)
    model = Model(net, nn.MSELoss(), opt)
    collector = mycel.SummaryCollector(str(tmp_path), collect_freq=1, keep_default_action=False,
                                       collect_specified_data={"collect_input_data": True,
                                                               "histogram_regular": "bias"})
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(4)
    model.train(1, data, callbacks=[collector])
    acc = accumulator(only_event_file(str(tmp_path)))
    tags = acc.Tags()
    assert tags["scalars"] == [] and tags["images"] == ["input_data/auto"]
    assert [t for t in tags["histograms"]] == ["1.bias/auto"]
    assert not os.path.exists(tmp_path / "hyper_params.json")
    with pytest.raises(ValueError, match="unknown collect_specified_data keys \\['nope'\\]"):
        mycel.SummaryCollector(str(tmp_path), collect_specified_data={"nope": True})
    with pytest.raises(ValueError, match="'collect_freq' must be an int >= 1, got 0"):
        mycel.SummaryCollector(str(tmp_path), collect_freq=0)


def test_summary_in_differentiated_function_runs_once_per_step(tmp_path, mode):
    """Under grad and value_and_grad the op records the forward's value, once: the gradient's
    recomputed forward does not run it again (counted with the Profiler)."""
    summary = ops.ScalarSummary()

    def f(x):
        y = (x * x).sum()
        summary("y", y)
        return y

    gf, vgf = ops.grad(f), ops.value_and_grad(f)

    def g(x):
        return gf(x)

    def vg(x):
        return vgf(x)

    if mode == mycel.GRAPH_MODE:
        g, vg = mycel.jit(g), mycel.jit(vg)
    with SummaryRecord(str(tmp_path)) as rec:
        np.testing.assert_array_equal(g(Tensor(np.float32([1, 2]))).asnumpy(), [2, 4])
        rec.record(1)
        vg(Tensor(np.float32([1, 3])))  # compiles outside the profile in graph mode
        prof = mycel.Profiler(str(tmp_path / "prof"))
        vg(Tensor(np.float32([1, 3])))
        assert [e[0] for e in prof.events()].count("scalar_summary") == 1
        rec.record(2)
    acc = accumulator(only_event_file(str(tmp_path)))
    assert [(e.step, e.value) for e in acc.Scalars("y")] == [(1, 5.0), (2, 10.0)]


class _BranchNet(nn.Cell):
    """Summary ops of a constant, inside a data-dependent branch and inside a loop."""

    def __init__(self):
        super().__init__()
        self.scalar = ops.ScalarSummary()
        self.const = Tensor(np.float32(7.0))

    def construct(self, x):
        self.scalar("const", self.const)
        if x.sum() > 0:
            self.scalar("branch", x.sum())
        else:
            self.scalar("branch", -x.sum())
        i = 0
        while i < 3:
            self.scalar("loop", x[i])
            i += 1
        return x


def test_summary_ops_of_constants_in_branches_and_loops(tmp_path, mode):
    net = _BranchNet()
    xs = [np.float32([1, 2, 3]), np.float32([-4, -5, -6])]
    with SummaryRecord(str(tmp_path)) as rec:
        for step, x in enumerate(xs):
            net(Tensor(x))
            rec.record(step)
    acc = accumulator(only_event_file(str(tmp_path)))
    assert [e.value for e in acc.Scalars("const")] == [7.0, 7.0]  # not folded away after step 0
    assert [e.value for e in acc.Scalars("branch")] == [6.0, 15.0]
    assert [e.value for e in acc.Scalars("loop")] == [3.0, -6.0]  # the last iteration's value


class _SummarizeThenAssign(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = mycel.Parameter(Tensor(np.float32([1, 2])), name="w")
        self.tensor = ops.TensorSummary()

    def construct(self, x):
        self.tensor("w", self.w)
        ops.assign(self.w, self.w + x)
        return x


def test_summary_of_a_weight_is_ordered_before_its_assign(tmp_path, mode):
    """A summary op reads the weight like any op: in graph mode it runs before the step's write."""
    net = _SummarizeThenAssign()
    with SummaryRecord(str(tmp_path)) as rec:
        for step in range(2):
            net(Tensor(np.float32([10, 10])))
            rec.record(step)
    acc = accumulator(only_event_file(str(tmp_path)))
    got = [tensor_util.make_ndarray(e.tensor_proto).tolist() for e in acc.Tensors("w")]
    assert got == [[1.0, 2.0], [11.0, 12.0]]
    np.testing.assert_array_equal(net.w.asnumpy(), [21.0, 22.0])


def test_summary_collector_records_validation_results_of_fit(tmp_path):
    net = _Regress()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, nn.MSELoss(), opt, metrics={"loss"})
    seen = []

    class Results(mycel.train.Callback):
        def on_train_epoch_end(self, run_context):
            cb = run_context.original_args()
            seen.append((cb.cur_step_num, cb.eval_results["loss"]))

    collector = mycel.SummaryCollector(str(tmp_path), collect_freq=4)
    model.fit(2, _regression_data(), _regression_data(), callbacks=[Results(), collector])
    acc = accumulator(only_event_file(str(tmp_path)))
    got = [(e.step, e.value) for e in acc.Scalars("eval/loss/auto")]
    assert got == [(s, np.float32(v)) for s, v in seen] and [s for s, _ in got] == [4, 8]
