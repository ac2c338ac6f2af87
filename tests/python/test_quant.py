"""int8 quantization (mycel.lite.quant): fake quant against numpy's quantize-dequantize, the
straight-through gradient, calibration ranges against their closed forms, per-channel weight
error bounds, and PTQ/QAT of a small LeNet5 on Fashion-MNIST keeping its accuracy."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.lite import quant

DATA = "/usr/share/datasets/fashion-mnist"


def test_fake_quant_matches_numpy():
    x = np.random.default_rng(0).uniform(-3, 5, 1000).astype(np.float32)
    scale, zp = quant.act_qparams(-2.0, 4.0)
    got = quant.fake_quant(Tensor(x), scale, zp).asnumpy()
    want = (np.clip(np.round(np.clip(x, (-128 - zp) * scale, (127 - zp) * scale) / scale), -128 - zp, 127 - zp)) * scale
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(np.unique(got)) <= 256
    assert abs(scale - 6.0 / 255) < 1e-9 and -128 <= zp <= 127


def test_straight_through_gradient_inside_the_range_only():
    scale, zp = quant.act_qparams(-1.0, 1.0)
    x = Tensor(np.array([-2.0, -0.5, 0.1, 0.7, 3.0], np.float32))
    g = mycel.grad(lambda t: mycel.ops.sum(quant.fake_quant(t, scale, zp) * 3.0))(x).asnumpy()
    np.testing.assert_array_equal(g, [0, 3, 3, 3, 0])


def test_calibration_ranges():
    rng = np.random.default_rng(1)
    a = rng.normal(0, 1, 200000).astype(np.float32)
    a[:5] = [40, -35, 30, 25, -20]  # outliers
    assert quant.calibrate_range([a], "minmax") == (float(a.min()), float(a.max()))
    lo, hi = quant.calibrate_range([a[:1000], a[1000:]], "percentile", percentile=99.9)
    t = np.percentile(np.abs(a), 99.9)
    assert abs(hi - t) < 1e-5 and abs(lo + t) < 1e-5
    lo, hi = quant.calibrate_range([a], "kl")
    assert 2.5 < hi < 20 and lo == -hi  # KL clips the outliers, keeps the body of the Gaussian
    u = rng.uniform(0, 1, 100000).astype(np.float32)
    assert quant.calibrate_range([u], "kl")[1] > 0.9  # nothing to clip in a uniform distribution
    with pytest.raises(ValueError, match="method"):
        quant.calibrate_range([a], "mse")


def test_per_channel_weight_error_bound():
    w = np.random.default_rng(2).normal(0, 1, (8, 3, 3, 3)) * np.arange(1, 9).reshape(8, 1, 1, 1)
    q, scale = quant.quantize_weight_per_channel(w)
    assert q.dtype == np.int8 and scale.shape == (8,)
    err = np.abs(q * scale.reshape(8, 1, 1, 1) - w)
    assert np.all(err <= scale.reshape(8, 1, 1, 1) / 2 + 1e-12)  # half a step per channel


@pytest.mark.skipif(not os.path.isdir(DATA), reason="Fashion-MNIST (apt dataset-fashion-mnist) not installed")
def test_ptq_and_qat_keep_lenet5_accuracy():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from lenet5 import LeNet5, build_model, create_dataset
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = LeNet5()
        build_model(net, nn.Momentum(net.trainable_params(), 0.02, 0.9)).train(
            1, create_dataset("train", num_samples=8000))

        def acc(n):
            m = mycel.Model(n, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics={"acc"})
            return m.eval(create_dataset("test", shuffle=False, num_samples=2000))["acc"]

        fp32 = acc(net)
        assert fp32 > 0.7
        calib = [d["image"] for d in create_dataset("train", num_samples=512).create_dict_iterator()]
        q = LeNet5()
        for (_, a), (_, b) in zip(q.parameters_and_names(), net.parameters_and_names()):
            a.set_data(Tensor(b.asnumpy()))
        quant.quantize(q, calib, method="minmax")
        assert isinstance(q.conv1, quant.QuantConv2d) and isinstance(q.fc3, quant.QuantDense)
        ptq = acc(q)
        assert ptq >= fp32 - 0.01, (fp32, ptq)
        # QAT: a short fine-tune of the fake-quantized net through the straight-through gradients
        w0 = q.conv1.weight.asnumpy().copy()
        build_model(q, nn.Momentum(q.trainable_params(), 0.002, 0.9)).train(
            1, create_dataset("train", num_samples=2000))
        assert not np.array_equal(w0, q.conv1.weight.asnumpy())
        assert acc(q) >= fp32 - 0.01
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_quantized_net_exports_and_runs_everywhere(tmp_path):
    """A PTQ'd network's fake-quant float32 graph (quant_mode="NONQUANT") exports to ONNX (ONNX
    Runtime agrees) and to MINDIR (the lite runtime agrees); test_int8.py covers the int8 export."""
    ort = pytest.importorskip("onnxruntime")
    from mycel import _mycel
    from edge_helpers import MODELS, graph_outputs, randomize
    net = randomize(MODELS["lenet5"][0]())
    rng = np.random.default_rng(3)
    calib = [Tensor(rng.standard_normal((8, 1, 32, 32)).astype(np.float32)) for _ in range(4)]
    quant.quantize(net, calib, method="percentile")
    x = rng.standard_normal((2, 1, 32, 32)).astype(np.float32)
    want = graph_outputs(net, x)
    onnx_path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "q"), file_format="ONNX",
                             quant_mode="NONQUANT")
    got = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "q"), file_format="MINDIR",
                        quant_mode="NONQUANT")
    got = _mycel.lite.Session.from_file(path).run([Tensor(x)])[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
