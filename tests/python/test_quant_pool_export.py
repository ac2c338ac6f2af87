"""int8 pooling beyond the lite runtime: the QDQ ONNX export of a quantized net's poolings (max,
average, global average) checked against ONNX Runtime, which fuses them into its int8 poolings,
and against the lite runtime's int8 graph of the same net; and calibration of the poolings a
MindSpore-style net writes as `ops.ReduceMean()` / `ops.AvgPool()` instances or `Tensor.mean`,
checked against numpy's statistics of the float net's activations and against the float path."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, lite, nn, ops
from mycel.lite import quant
from edge_helpers import graph_outputs, randomize


class _Net(nn.Cell):
    """conv -> AvgPool2d (a cell) -> conv -> MaxPool2d -> conv -> a spatial mean (an
    ops.ReduceMean instance, keep_dims, then a reshape; or Tensor.mean) -> dense."""

    def __init__(self, mean="primitive"):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, pad_mode="same", has_bias=True)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)
        self.c2 = nn.Conv2d(8, 16, 3, pad_mode="same", has_bias=True)
        self.mp = nn.MaxPool2d(kernel_size=2, stride=2)
        self.c3 = nn.Conv2d(16, 16, 3, pad_mode="same", has_bias=True)
        self.fc = nn.Dense(16, 5)
        self.relu = nn.ReLU()
        self.reduce_mean = ops.ReduceMean(keep_dims=True)
        self.use_tensor_mean = mean == "tensor"

    def construct(self, x):
        x = self.pool(self.relu(self.c1(x)))
        x = self.mp(self.relu(self.c2(x)))
        x = self.relu(self.c3(x))
        if self.use_tensor_mean:
            x = x.mean(axis=(2, 3))
        else:
            x = ops.reshape(self.reduce_mean(x, (2, 3)), (-1, 16))
        return self.fc(x)


def _quantized(mean="primitive", seed=4):
    net = randomize(_Net(mean), seed=seed)
    rng = np.random.default_rng(seed)
    calib = [Tensor(rng.standard_normal((8, 3, 12, 12)).astype(np.float32)) for _ in range(3)]
    return quant.quantize(net, calib, method="minmax"), calib, rng


def _steps(got, want):
    return np.abs(got - want) / ((want.max() - want.min()) / 255)


def test_qdq_onnx_pooling_runs_int8_in_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    net, _, rng = _quantized()
    x = rng.standard_normal((6, 3, 12, 12)).astype(np.float32)
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "q"), file_format="ONNX")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    g = model.graph
    made = {o: n for n in g.node for o in n.output}
    init = {t.name: onnx.numpy_helper.to_array(t) for t in g.initializer}
    pools = {n.op_type: n for n in g.node if n.op_type in ("AveragePool", "MaxPool", "GlobalAveragePool")}
    assert set(pools) == {"AveragePool", "MaxPool", "GlobalAveragePool"}, [n.op_type for n in g.node]
    for op, node in pools.items():  # every pooling reads a uint8 value: DequantizeLinear(QuantizeLinear(.))
        dq = made[node.input[0]]
        q = made[dq.input[0]]
        assert (dq.op_type, q.op_type) == ("DequantizeLinear", "QuantizeLinear"), op
        scale, zp = init[q.input[1]], init[q.input[2]]
        assert scale.shape == () and zp.dtype == np.uint8 and zp.shape == ()  # per tensor
        if op != "MaxPool":  # the calibrated input scale of the pooling
            rec = net._quant_pools[0 if op == "AveragePool" else 1]
            assert float(scale) == pytest.approx(rec["scale"]) and int(zp) == rec["zero_point"]
    # the max pooling is quantized at the next convolution's input scale (what that one reads)
    mp_q = made[made[pools["MaxPool"].input[0]].input[0]]
    nxt = next(n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] == pools["MaxPool"].output[0])
    assert float(init[mp_q.input[1]]) == float(init[nxt.input[1]]) and init[mp_q.input[2]] == init[nxt.input[2]]

    opts = ort.SessionOptions()
    opts.optimized_model_filepath = str(tmp_path / "ort_optimized.onnx")
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    ran = [n.op_type for n in onnx.load(opts.optimized_model_filepath).graph.node]
    assert "QLinearAveragePool" in ran and "QLinearGlobalAveragePool" in ran, ran  # ORT's int8 poolings
    assert not {"AveragePool", "GlobalAveragePool", "MaxPool"} & set(ran), ran
    r = sess.run(None, {sess.get_inputs()[0].name: x})[0]

    mpath = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "q"), file_format="MINDIR")
    s = lite.Session.from_file(mpath, num_threads=1)
    assert s.node_ops.count("qavg_pool2d") == 2 and "max_pool2d" in s.node_ops, s.node_ops
    assert "dequantize_linear" not in s.node_ops, s.node_ops  # the mean's reshape runs on uint8
    got = s.run([Tensor(x)])[0].asnumpy()
    assert _steps(got, r).max() <= 1, _steps(got, r).max()
    np.testing.assert_array_equal(got.argmax(1), r.argmax(1))
    # and both are the fake-quant net's result up to the pooling's rounding
    want = graph_outputs(net, x)
    assert _steps(r, want).max() <= 2 and _steps(got, want).max() <= 2


def test_fake_quant_onnx_export_keeps_float_poolings(tmp_path):
    onnx = pytest.importorskip("onnx")
    net, _, rng = _quantized()
    path = mycel.export(net, Tensor(np.zeros((1, 3, 12, 12), np.float32)), file_name=str(tmp_path / "fq"),
                        file_format="ONNX", quant_mode="NONQUANT")
    g = onnx.load(path).graph
    made = {o: n.op_type for n in g.node for o in n.output}
    for n in g.node:
        if n.op_type in ("AveragePool", "MaxPool"):
            assert made.get(n.input[0]) != "DequantizeLinear"


@pytest.mark.parametrize("mean", ["primitive", "tensor"])
def test_calibration_records_reduce_mean_instances_and_tensor_mean(mean, tmp_path):
    net = randomize(_Net(mean), seed=5)
    rng = np.random.default_rng(5)
    calib = [Tensor(rng.standard_normal((8, 3, 12, 12)).astype(np.float32)) for _ in range(3)]
    # the spatial mean's input over the calibration batches, from the float net's layers
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    try:
        acts = []
        for c in calib:
            a = net.mp(ops.relu(net.c2(net.pool(ops.relu(net.c1(c))))))
            acts.append(np.maximum(net.c3(a).asnumpy(), 0))
    finally:
        mycel.set_context(mode=old)
    a3 = np.concatenate(acts)
    quant.quantize(net, calib, method="minmax")
    pools = net._quant_pools
    assert [(p["op"], p["shape"]) for p in pools] == [("avg_pool2d", (8, 12, 12)), ("mean", (16, 3, 3))]
    scale, zp = quant.act_qparams(a3.min(), a3.max())
    assert pools[1]["scale"] == pytest.approx(scale, rel=1e-6) and pools[1]["zero_point"] == int(zp) + 128
    x = rng.standard_normal((6, 3, 12, 12)).astype(np.float32)
    want = graph_outputs(net, x)  # the fake-quant net: its poolings float32
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "m"), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=1)
    assert s.node_ops.count("qavg_pool2d") == 2 and "mean" not in s.node_ops, s.node_ops
    got = s.run([Tensor(x)])[0].asnumpy()
    assert _steps(got, want).max() <= 2 and np.median(_steps(got, want)) <= 0.5
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))


def test_avg_pool_primitive_instance_is_recorded():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, pad_mode="same")
            self.avg = ops.AvgPool(kernel_size=2, strides=2)
            self.fc = nn.Dense(4 * 3 * 3, 3)

        def construct(self, x):
            return self.fc(ops.flatten(self.avg(self.conv(x))))
    net = randomize(Net(), seed=1)
    x = np.random.default_rng(1).standard_normal((4, 2, 6, 6)).astype(np.float32)
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    try:
        c = net.conv(Tensor(x)).asnumpy()  # the pooling's input, float
    finally:
        mycel.set_context(mode=old)
    quant.quantize(net, [Tensor(x)])
    assert [(p["op"], p["shape"]) for p in net._quant_pools] == [("avg_pool2d", (4, 6, 6))]
    scale, zp = quant.act_qparams(c.min(), c.max())
    assert net._quant_pools[0]["scale"] == pytest.approx(scale, rel=1e-6)
    assert net._quant_pools[0]["zero_point"] == int(zp) + 128


def test_recorder_restores_what_it_wrapped():
    before = (ops.mean, ops.avg_pool2d, Tensor.mean, "__call__" in vars(ops.ReduceMean),
              "__call__" in vars(ops.AvgPool))

    class Boom(nn.Cell):
        def construct(self, x):
            ops.ReduceMean()(x, (2, 3))
            raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        quant.collect_activations(Boom(), [Tensor(np.ones((1, 1, 2, 2), np.float32))], pools=[])
    after = (ops.mean, ops.avg_pool2d, Tensor.mean, "__call__" in vars(ops.ReduceMean),
             "__call__" in vars(ops.AvgPool))
    assert before == after
