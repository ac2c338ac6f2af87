"""int8 inference: the quantized ops against numpy's integer arithmetic, the int8 models the
exporter writes (LeNet5, ResNet-18) against the fake-quant float32 nets they come from and
against ONNX Runtime on the QDQ export, and the loader's checks of int8 nodes."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, ops
from mycel.lite import quant

from edge_helpers import MODELS, randomize

lite = _mycel.lite


def _conv_ref(x, w, b, xs, xz, ws, stride, pad, dil, groups):
    """Integer convolution in int64 (padding is a real zero, i.e. x_q == x_zp), then the float
    epilogue in float64."""
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xi = np.pad(x.astype(np.int64) - xz, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    acc = np.zeros((n, oc, oh, ow), np.int64)
    og = oc // groups
    for o in range(oc):
        g = o // og
        for i in range(kh):
            for j in range(kw):
                patch = xi[:, g * cg:(g + 1) * cg, i * dil:i * dil + stride * (oh - 1) + 1:stride,
                           j * dil:j * dil + stride * (ow - 1) + 1:stride]
                acc[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j].astype(np.int64))
    return acc * (xs * ws.astype(np.float64))[None, :, None, None] + b[None, :, None, None]


def _epilogue(yf, relu, u8, ys, yz):
    if relu:
        yf = np.maximum(yf, 0)
    return np.clip(np.round(yf / ys) + yz, 0, 255) if u8 else yf


@pytest.mark.parametrize("bits", [7, 8])
@pytest.mark.parametrize("case", [
    dict(n=2, c=8, h=9, oc=16, k=3, stride=1, pad=1, dil=1, groups=1, xz=7),
    dict(n=1, c=6, h=11, oc=12, k=3, stride=2, pad=0, dil=2, groups=3, xz=0),
    dict(n=3, c=4, h=7, oc=8, k=1, stride=1, pad=0, dil=1, groups=1, xz=130),
    dict(n=2, c=16, h=18, oc=72, k=3, stride=1, pad=1, dil=1, groups=1, xz=5),  # past the small path
])
def test_qconv2d_matches_integer_reference(case, bits):
    rng = np.random.default_rng(case["c"] * 10 + bits)
    qmax = 2 ** (bits - 1) - 1
    x = rng.integers(0, 256, (case["n"], case["c"], case["h"], case["h"])).astype(np.uint8)
    w = rng.integers(-qmax, qmax + 1, (case["oc"], case["c"] // case["groups"], case["k"], case["k"])).astype(np.int8)
    b = rng.standard_normal(case["oc"]).astype(np.float32)
    ws = (rng.random(case["oc"]) * 0.01 + 0.001).astype(np.float32)
    xs = 0.02
    yf = _conv_ref(x, w, b, xs, case["xz"], ws, case["stride"], case["pad"], case["dil"], case["groups"])
    for relu in (False, True):
        for u8 in (False, True):
            kw = dict(x_scale=xs, x_zero_point=case["xz"], w_scale=tuple(float(s) for s in ws), relu=relu,
                      stride=case["stride"], pad_mode="pad", pad=case["pad"], dilation=case["dil"],
                      groups=case["groups"])
            if u8:
                kw.update(out_dtype=mycel.uint8, y_scale=0.05, y_zero_point=3)
            got = ops.qconv2d(Tensor(x), Tensor(w), Tensor(b), **kw).asnumpy()
            direct, path = lite.run_int8("qconv2d", [Tensor(x), Tensor(w), Tensor(b)], kw)
            np.testing.assert_array_equal(direct.asnumpy(), got)  # the registry kernel's path
            want = _epilogue(yf, relu, u8, 0.05, 3)
            if u8:
                assert got.dtype == np.uint8
                # float rounding may move a value sitting on a rounding boundary by one step
                assert np.abs(got.astype(np.int64) - want).max() <= 1
                assert np.mean(got == want) > 0.999
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
            # 7-bit weights run on oneDNN, 8-bit ones only where the CPU has VNNI; else exact
            # loops: the int16-pair ones for small single-group layers, the reference otherwise
            work = case["n"] * yf.shape[2] * yf.shape[3] * case["oc"] * case["c"] * case["k"] ** 2
            if bits == 7 or lite.cpu_has_vnni():
                assert path.startswith("onednn:"), path
            elif case["groups"] == 1 and case["oc"] <= 64 and work <= 2 ** 21:
                assert path == "small", path
            else:
                assert path == "reference", path


@pytest.mark.parametrize("bits", [7, 8])
@pytest.mark.parametrize("case", [
    dict(n=2, h=32, w=32, oc=6, k=5, xz=0),     # LeNet5's first layer: rows of 28, the last block overlaps
    dict(n=1, h=20, w=18, oc=16, k=3, xz=130),  # rows of exactly 16; 9 taps (an odd one left over)
    dict(n=1, h=8, w=23, oc=3, k=8, xz=255),    # 64 taps, one output row, zero point at the top
])
def test_one_channel_qconv2d_runs_the_direct_loop_exactly(case, bits):
    """A one-input-channel qconv2d (unit stride, no padding) runs the direct int16-pair loop, for
    7- and 8-bit weights alike, and equals the integer reference (float output to rounding, uint8
    output within one step where the float epilogue sits on a rounding boundary)."""
    rng = np.random.default_rng(case["oc"] * 10 + bits)
    qmax = 2 ** (bits - 1) - 1
    x = rng.integers(0, 256, (case["n"], 1, case["h"], case["w"])).astype(np.uint8)
    w = rng.integers(-qmax - (bits == 8), qmax + 1, (case["oc"], 1, case["k"], case["k"])).astype(np.int8)
    b = rng.standard_normal(case["oc"]).astype(np.float32)
    ws = (rng.random(case["oc"]) * 0.01 + 0.001).astype(np.float32)
    yf = _conv_ref(x, w, b, 0.02, case["xz"], ws, 1, 0, 1, 1)
    for relu in (False, True):
        for u8 in (False, True):
            kw = dict(x_scale=0.02, x_zero_point=case["xz"], w_scale=tuple(float(s) for s in ws), relu=relu)
            if u8:
                kw.update(out_dtype=mycel.uint8, y_scale=0.05, y_zero_point=3)
            got, path = lite.run_int8("qconv2d", [Tensor(x), Tensor(w), Tensor(b)], kw)
            assert path == "direct", path
            got = got.asnumpy()
            np.testing.assert_array_equal(ops.qconv2d(Tensor(x), Tensor(w), Tensor(b), **kw).asnumpy(), got)
            want = _epilogue(yf, relu, u8, 0.05, 3)
            if u8:
                assert np.abs(got.astype(np.int64) - want).max() <= 1 and np.mean(got == want) > 0.999
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bits", [7, 8])
def test_qdense_matches_integer_reference(bits):
    rng = np.random.default_rng(bits)
    qmax = 2 ** (bits - 1) - 1
    w = rng.integers(-qmax, qmax + 1, (12, 40)).astype(np.int8)
    b = rng.standard_normal(12).astype(np.float32)
    ws = (rng.random(12) * 0.01 + 0.001).astype(np.float32)
    for rows, xz in ((5, 0), (5, 9), (1, 0), (2, 200)):  # 1-4 rows: the exact matrix-vector loop
        x = rng.integers(0, 256, (rows, 40)).astype(np.uint8)
        acc = (x.astype(np.int64) - xz) @ w.astype(np.int64).T
        yf = acc * (0.03 * ws.astype(np.float64)) + b
        for relu in (False, True):
            kw = dict(x_scale=0.03, x_zero_point=xz, w_scale=tuple(float(s) for s in ws), relu=relu)
            got = ops.qdense(Tensor(x), Tensor(w), Tensor(b), **kw).asnumpy()
            np.testing.assert_allclose(got, _epilogue(yf, relu, False, 1, 0), rtol=1e-5, atol=1e-4)
            direct, path = lite.run_int8("qdense", [Tensor(x), Tensor(w), Tensor(b)], kw)
            np.testing.assert_array_equal(direct.asnumpy(), got)
            assert path == "rows" if rows <= 4 else (path.startswith("onednn:") or bits == 8), path
            got = ops.qdense(Tensor(x), Tensor(w), None, x_scale=0.03, x_zero_point=xz, relu=relu,
                             w_scale=tuple(float(s) for s in ws), out_dtype=mycel.uint8, y_scale=0.1,
                             y_zero_point=128).asnumpy()
            want = _epilogue(yf - b, relu, True, 0.1, 128)
            assert np.abs(got.astype(np.int64) - want).max() <= 1 and np.mean(got == want) > 0.99


def test_quantize_dequantize_and_uint8_pooling():
    x = np.random.default_rng(0).uniform(-3, 5, (2, 3, 6, 6)).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, 1e9, -1e9]
    q = ops.quantize_linear(Tensor(x), scale=0.04, zero_point=80).asnumpy()
    want = np.clip(np.round(x / np.float32(0.04)) + 80, 0, 255)
    want[0, 0, 0, 0] = 80  # NaN goes to the zero point
    np.testing.assert_array_equal(q, want.astype(np.uint8))
    s = ops.quantize_linear(Tensor(x), scale=0.04, zero_point=-5, dtype=mycel.int8).asnumpy()
    assert s.dtype == np.int8
    np.testing.assert_array_equal(s[1], np.clip(np.round(x[1] / np.float32(0.04)) - 5, -128, 127))
    d = ops.dequantize_linear(Tensor(q), scale=0.04, zero_point=80).asnumpy()
    np.testing.assert_allclose(d, (q.astype(np.float32) - 80) * np.float32(0.04), rtol=1e-6)
    # max pooling commutes with the (monotonic) quantization
    pooled = ops.max_pool2d(Tensor(q), kernel_size=2, strides=2).asnumpy()
    ref = q.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(pooled, ref)


def test_qadd_matches_numpy_at_the_edges():
    """qadd against dequantize -> add -> relu -> quantize in numpy float32, bit for bit: NaN goes to
    the zero point, +-inf and large sums saturate, ties round to even; lengths off the 8-lane
    vector loop exercise its scalar tail."""
    from op_cases.quant import qadd_ref
    rng = np.random.default_rng(7)
    for n in (1, 7, 8, 13, 1000):
        a = (rng.standard_normal(n) * 4).astype(np.float32)
        a[::5] = np.float32(0.25)  # 0.25 / 0.5 = 0.5: a tie, to even
        if n > 3:
            a[:3] = [np.nan, np.inf, -np.inf]
        b = rng.integers(0, 256, n).astype(np.uint8)
        b[::5] = 0
        for relu in (False, True):
            kw = dict(b_scale=0.01, b_zero_point=0, y_scale=0.5, y_zero_point=10, relu=relu)
            got = ops.qadd(Tensor(a), Tensor(b), **kw).asnumpy()
            with np.errstate(invalid="ignore"):
                want = qadd_ref(a, b, **kw)
            want[np.isnan(a)] = 10  # numpy's cast of NaN is undefined; the kernel's is the zero point
            np.testing.assert_array_equal(got, want)
            kw2 = dict(a_scale=0.03, a_zero_point=17, b_scale=0.07, b_zero_point=200, y_scale=0.01,
                       y_zero_point=128, relu=relu)  # two uint8 inputs, sums past 255 levels
            got = ops.qadd(Tensor(b[::-1].copy()), Tensor(b), **kw2).asnumpy()
            np.testing.assert_array_equal(got, qadd_ref(b[::-1].copy(), b, **kw2))


def test_qadd_node_equals_the_float_chain_in_the_lite_runtime():
    """A qadd node computes what dequantize_linear -> add -> relu -> quantize_linear nodes do."""
    shape = [-1, 4, 3, 3]
    attrs = dict(b_scale=0.02, b_zero_point=9, y_scale=0.04, y_zero_point=5, relu=True)
    fused = lite.serialize(
        [("a", "float32", shape, -1), ("b", "uint8", shape, -1), ("y", "uint8", shape, -1)], [],
        [("qadd", "", [0, 1], [2], attrs)], [0, 1], [2])
    chain = lite.serialize(
        [("a", "float32", shape, -1), ("b", "uint8", shape, -1), ("bf", "float32", shape, -1),
         ("s", "float32", shape, -1), ("r", "float32", shape, -1), ("y", "uint8", shape, -1)], [],
        [("dequantize_linear", "", [1], [2], dict(scale=0.02, zero_point=9)), ("add", "", [0, 2], [3], {}),
         ("relu", "", [3], [4], {}), ("quantize_linear", "", [4], [5], dict(scale=0.04, zero_point=5))],
        [0, 1], [5])
    rng = np.random.default_rng(8)
    a = Tensor((rng.standard_normal((2, 4, 3, 3)) * 3).astype(np.float32))
    b = Tensor(rng.integers(0, 256, (2, 4, 3, 3)).astype(np.uint8))
    want = lite.Session.from_bytes(chain).run([a, b])[0].asnumpy()
    np.testing.assert_array_equal(lite.Session.from_bytes(fused).run([a, b])[0].asnumpy(), want)
    with pytest.raises(ValueError, match=r"\[qadd\] inputs 'a' .* must have one shape"):
        ops.qadd(a, Tensor(np.zeros((2, 4, 3, 1), np.uint8)))
    with pytest.raises(TypeError, match=r"\[qadd\] input 'b' must be uint8 or float32, got int8"):
        ops.qadd(a, Tensor(np.zeros((2, 4, 3, 3), np.int8)))
    with pytest.raises(ValueError, match=r"\[qadd\] attribute 'y_scale'"):
        ops.qadd(a, b, y_scale=0.0)


def test_bad_quantization_attributes_are_named():
    x8 = Tensor(np.zeros((1, 2, 4, 4), np.uint8))
    w8 = Tensor(np.zeros((3, 2, 1, 1), np.int8))
    with pytest.raises(ValueError, match=r"\[quantize_linear\] attribute 'scale'"):
        ops.quantize_linear(Tensor(np.zeros(3, np.float32)), scale=0.0)
    with pytest.raises(ValueError, match=r"'zero_point' must lie in \[0, 255\]"):
        ops.quantize_linear(Tensor(np.zeros(3, np.float32)), scale=1.0, zero_point=300)
    with pytest.raises(ValueError, match=r"\[qconv2d\] attribute 'w_scale' needs one scale per output channel \(3\)"):
        ops.qconv2d(x8, w8, None, x_scale=0.1, w_scale=(0.1, 0.1))
    with pytest.raises(ValueError, match="'w_scale' values must be positive"):
        ops.qconv2d(x8, w8, None, x_scale=0.1, w_scale=(0.1, -0.1, 0.1))
    with pytest.raises(TypeError, match=r"\[qconv2d\] input 'w' must be int8, got float32"):
        ops.qconv2d(x8, Tensor(np.zeros((3, 2, 1, 1), np.float32)), None, x_scale=0.1, w_scale=(0.1,) * 3)
    with pytest.raises(TypeError, match=r"\[qdense\] input 'x' .*uint8"):
        ops.qdense(Tensor(np.zeros((2, 4), np.float32)), Tensor(np.zeros((3, 4), np.int8)), None,
                   x_scale=0.1, w_scale=(0.1,) * 3)
    with pytest.raises(ValueError, match="'out_dtype' must be float32 or uint8"):
        ops.qdense(Tensor(np.zeros((2, 4), np.uint8)), Tensor(np.zeros((3, 4), np.int8)), None,
                   x_scale=0.1, w_scale=(0.1,) * 3, out_dtype=mycel.int32)


def _ptq(name, seed=0, batches=4):
    """A zoo model with random weights, PTQ'd (min-max) on random data; also the data."""
    make, shape = MODELS[name]
    net = randomize(make(), seed=seed)
    rng = np.random.default_rng(seed)
    calib = [Tensor(rng.standard_normal((8,) + shape[1:]).astype(np.float32)) for _ in range(batches)]
    quant.quantize(net, calib, method="minmax")
    x = rng.standard_normal((16,) + shape[1:]).astype(np.float32)
    return net, x


def _fake_quant_logits(net, x):
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        return net(Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=old)


def _check_steps(got, want, steps, median=0.5):
    """Within `steps` quantization steps of the logits (their range over 255 levels), `median`
    steps for the median logit, and the same predictions."""
    step = (want.max() - want.min()) / 255
    assert np.abs(got - want).max() <= steps * step, (np.abs(got - want).max() / step, steps)
    assert np.median(np.abs(got - want)) <= median * step, (np.median(np.abs(got - want)) / step, median)
    assert np.mean(got.argmax(1) == want.argmax(1)) >= 0.9


@pytest.mark.parametrize("name", ["lenet5", "resnet18"])
def test_int8_model_matches_fake_quant_and_onnxruntime(name, tmp_path, monkeypatch):
    """LeNet5 (5 quantized layers): within one step of the logits. ResNet-18 (21 layers, random
    weights): a value on a rounding boundary may round the other way in any implementation (the
    fake quant's float conv sums in another order than exact int32), and the flip propagates;
    ONNX Runtime's own QDQ run of the same file is about 2 steps from the fake quant as well, so
    the bound there is 2 steps (median within half a step). The lite runtime's shortcuts carry
    the float sums the fake quant carries (int8.EXACT_RESIDUAL); its global average pooling reads
    the last sum quantized at its calibrated scale, which the fake quant does not simulate. The QDQ
    file quantizes the pooling's input at that scale too (ONNX Runtime runs it int8): lite and ONNX
    Runtime are then half a step apart at the median (0.45 with ONNX Runtime's pooling float32),
    but the shortcuts' sums, float32 in the lite runtime and rounded in ONNX Runtime's int8 adds,
    can flip a value on a rounding boundary: 2.5 steps at most there."""
    # The lite runtime's int8 paths agree to the bit (oneDNN and the exact loops requantize alike:
    # test_onednn_and_the_exact_loops_requantize_to_the_same_bits), so what separates it from the
    # fake quant is the reference's own float32 arithmetic: its convolutions sum in float32 in
    # their kernel's order (AVX-512 oneDNN kernels on VNNI CPUs, AVX2 ones elsewhere), and a value
    # near a quantizer's rounding boundary lands on the other side in some of the 21 layers. On
    # Zen 4 (AVX-512, VNNI) ResNet-18's worst logit is 2.5 steps from the fake quant (1.6 to 2.6
    # over seeds 0-2, the exact loops alike), ONNX Runtime's 3.1 (its QDQ convolutions also round
    # the bias to int32); on AVX2 both were within 2.
    vnni = lite.cpu_has_vnni()
    steps = 1 if name == "lenet5" else (3 if vnni else 2)
    ort_steps = 1 if name == "lenet5" else (3.5 if vnni else 2)
    median = 0.5
    # The fake quant is the reference: its float convolutions take the direct sums, not the
    # training Winograd (batch >= 4), whose transforms round and move values across the quantizers'
    # rounding boundaries, nor the small-plane GEMM (conv_gemm_forward.h), whose other summing order
    # moved the median past half a step (0.51).
    monkeypatch.setenv("MYCEL_WINOGRAD_NCHW", "0")
    monkeypatch.setenv("MYCEL_CONV_GEMM_FWD", "0")
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    net, x = _ptq(name)
    want = _fake_quant_logits(net, x)
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / name), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=1)
    ops_run = s.node_ops
    # int8 end to end: every conv and dense is quantized, no float conv/dense/batch_norm is left
    assert not {"conv2d", "dense", "batch_norm", "matmul"} & set(ops_run), ops_run
    assert ops_run[0] == "quantize_linear"
    if name == "lenet5":  # quantize once at the input; pooling and flatten run on uint8
        assert ops_run == ["quantize_linear", "qconv2d", "max_pool2d", "qconv2d", "max_pool2d", "flatten",
                           "qdense", "qdense", "qdense"], ops_run
    else:
        assert ops_run.count("qconv2d") == 20 and ops_run.count("qdense") == 1
        # A residual sum that only quantized layers read is int8 (qadd), the last one too:
        # calibration records the global average pooling's input scale, and the pooling runs on
        # uint8 straight into the dense's scale. A sum a shortcut reads stays float32 (add+relu,
        # then one quantize_linear for the next block's convolutions), as the fake quant has it.
        assert ops_run.count("qadd") == 4 and ops_run.count("add+relu") == 4 and "mean" not in ops_run, ops_run
        assert ops_run.count("qavg_pool2d") == 1 and ops_run.count("quantize_linear") == 6, ops_run
    got = s.run([Tensor(x)])[0].asnumpy()
    _check_steps(got, want, steps, median)
    # the file stores int8 weights: far smaller than the float32 model's
    assert os.path.getsize(path) < 0.4 * 4 * sum(int(np.prod(p.shape)) for p in net.trainable_params())
    # QDQ ONNX: checker clean, ONNX Runtime agrees with the fake-quant net too
    opath = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / name), file_format="ONNX")
    model = onnx.load(opath)
    onnx.checker.check_model(model, full_check=True)
    kinds = [n.op_type for n in model.graph.node]
    assert "QuantizeLinear" in kinds and "DequantizeLinear" in kinds
    sess = ort.InferenceSession(opath, providers=["CPUExecutionProvider"])
    r = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    _check_steps(r, want, ort_steps)
    _check_steps(got, r, 2.5 if name == "resnet18" else steps, median)


# Run in a child process with MYCEL_INT8_EXACT=1 (read once per process): every qconv2d and qdense
# on the exact int32 loops instead of oneDNN.
_EXACT_CHILD = r"""
import sys, numpy as np, pickle
from mycel import Tensor, _mycel
lite = _mycel.lite
d = sys.argv[1]
cases = pickle.load(open(d + "/cases.pkl", "rb"))
out = {}
for i, (op, arrays, kw) in enumerate(cases):
    y, path = lite.run_int8(op, [Tensor(a) for a in arrays], kw)
    out["layer%d" % i], out["path%d" % i] = y.asnumpy(), np.array(path)
for name in ("lenet5", "resnet18"):
    s = lite.Session.from_file(d + "/" + name + ".mindir", num_threads=1)
    out[name] = s.run([Tensor(np.load(d + "/" + name + "_x.npy"))])[0].asnumpy()
np.savez(d + "/exact.npz", **out)
"""


def test_onednn_and_the_exact_loops_requantize_to_the_same_bits(tmp_path):
    """oneDNN's int8 primitives add the bias in accumulator units (b / (x_scale * w_scale)) to the
    int32 sum and multiply by one per-channel scale (x_scale * w_scale / y_scale for uint8); the
    exact loops (the reference, the int16-pair loops, the one-channel direct conv, the dense rows)
    apply the same float operations in the same order, so both give the same bits: per layer
    (float and uint8 outputs, relu, relu6, zero points) and through whole int8 LeNet5 and
    ResNet-18 (where a value rounding the other way at one layer used to move logits by up to 2.4
    steps between the two paths)."""
    import pickle
    import subprocess
    import sys
    rng = np.random.default_rng(7)
    cases = []
    for k, (c, h, oc, stride, pad) in enumerate([(16, 12, 24, 1, 1), (8, 9, 16, 2, 0), (32, 6, 40, 1, 1)]):
        x = rng.integers(0, 256, (2, c, h, h)).astype(np.uint8)
        w = rng.integers(-63, 64, (oc, c, 3, 3)).astype(np.int8)
        b = (rng.standard_normal(oc) * 2).astype(np.float32)
        ws = tuple(float(v) for v in rng.random(oc) * 0.004 + 0.001)
        for relu, relu6, u8 in [(False, False, False), (True, False, True), (True, True, True), (True, True, False),
                                (False, False, True)]:
            kw = dict(x_scale=0.03 + 0.01 * k, x_zero_point=int(rng.integers(0, 20)), w_scale=ws, relu=relu,
                      relu6=relu6, stride=stride, pad_mode="pad", pad=pad, dilation=1, groups=1)
            if u8:
                kw.update(out_dtype=mycel.uint8, y_scale=0.021, y_zero_point=int(rng.integers(0, 9)))
            cases.append(("qconv2d", [x, w, b], kw))
    for rows in (1, 3, 9):  # the matrix-vector rows (batch 1) and the GEMM / reference
        x = rng.integers(0, 256, (rows, 96)).astype(np.uint8)
        w = rng.integers(-63, 64, (20, 96)).astype(np.int8)
        b = rng.standard_normal(20).astype(np.float32)
        ws = tuple(float(v) for v in rng.random(20) * 0.004 + 0.001)
        for u8 in (False, True):
            kw = dict(x_scale=0.05, x_zero_point=5, w_scale=ws, relu=u8)
            if u8:
                kw.update(out_dtype=mycel.uint8, y_scale=0.07, y_zero_point=2)
            cases.append(("qdense", [x, w, b], kw))
    with open(tmp_path / "cases.pkl", "wb") as f:
        pickle.dump(cases, f)
    got = {}
    for name in ("lenet5", "resnet18"):
        net, x = _ptq(name)
        mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / name), file_format="MINDIR")
        np.save(tmp_path / (name + "_x.npy"), x)
        got[name] = lite.Session.from_file(str(tmp_path / (name + ".mindir")), num_threads=1).run(
            [Tensor(x)])[0].asnumpy()
    env = dict(os.environ, MYCEL_INT8_EXACT="1")
    r = subprocess.run([sys.executable, "-c", _EXACT_CHILD, str(tmp_path)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    exact = np.load(tmp_path / "exact.npz")
    onednn_ran = 0
    for i, (op, arrays, kw) in enumerate(cases):
        y, path = lite.run_int8(op, [Tensor(a) for a in arrays], kw)
        assert str(exact["path%d" % i]) in ("reference", "small", "rows", "direct"), exact["path%d" % i]
        onednn_ran += path.startswith("onednn:")
        np.testing.assert_array_equal(y.asnumpy(), exact["layer%d" % i], err_msg=f"{op} {kw} ({path})")
    assert onednn_ran == len(cases) - 4  # all but the dense cases over 1 and 3 rows (rows loops)
    for name in ("lenet5", "resnet18"):
        np.testing.assert_array_equal(got[name], exact[name], err_msg=name)


@pytest.mark.parametrize("bits", [7, 8])
def test_relu6_is_fused_and_clips_before_requantizing(bits):
    """relu6 (MobileNetV2's activation) inside qconv2d and qdense: clipped to [0, 6] in float
    before the requantization, on oneDNN (7-bit weights, a clip post-op in output-scale units)
    and on the exact loops (8-bit weights without VNNI)."""
    rng = np.random.default_rng(20 + bits)
    qmax = 2 ** (bits - 1) - 1
    x = rng.integers(0, 256, (1, 8, 9, 9)).astype(np.uint8)
    w = rng.integers(-qmax, qmax + 1, (16, 8, 3, 3)).astype(np.int8)
    b = rng.standard_normal(16).astype(np.float32)
    ws = (rng.random(16) * 0.004 + 0.001).astype(np.float32)
    yf = np.clip(_conv_ref(x, w, b, 0.05, 4, ws, 1, 1, 1, 1), 0, 6)
    assert (yf == 6).mean() > 0.05 and (yf == 0).mean() > 0.05  # both ends of the clip are hit
    kw = dict(x_scale=0.05, x_zero_point=4, w_scale=tuple(float(s) for s in ws), relu6=True,
              stride=1, pad_mode="pad", pad=1)
    np.testing.assert_allclose(ops.qconv2d(Tensor(x), Tensor(w), Tensor(b), **kw).asnumpy(), yf,
                               rtol=1e-5, atol=1e-4)
    for ys, yz in ((0.03, 10), (0.05, 0)):  # 6 / 0.03 = 200 steps (+10): inside uint8; 120 steps
        got = ops.qconv2d(Tensor(x), Tensor(w), Tensor(b), out_dtype=mycel.uint8, y_scale=ys,
                          y_zero_point=yz, **kw).asnumpy().astype(np.int64)
        want = _epilogue(yf, False, True, ys, yz)
        assert np.abs(got - want).max() <= 1 and np.mean(got == want) > 0.999
        assert got.max() == round(6 / ys) + yz
    xd = rng.integers(0, 256, (2, 72)).astype(np.uint8)
    wd = w.reshape(16, 72)
    yd = np.clip((xd.astype(np.int64) - 4) @ wd.astype(np.int64).T * (0.05 * ws.astype(np.float64)) + b, 0, 6)
    got = ops.qdense(Tensor(xd), Tensor(wd), Tensor(b), x_scale=0.05, x_zero_point=4,
                     w_scale=tuple(float(s) for s in ws), relu6=True).asnumpy()
    np.testing.assert_allclose(got, yd, rtol=1e-5, atol=1e-4)


def test_int8_mobilenet_v2_runs_int8_end_to_end(tmp_path):
    """MobileNetV2: relu6 fused into its qconv2d; a residual sum only quantized layers read is an
    int8 add, one a shortcut reads too stays float32 (exact, as the fake quant has it); the
    global average pooling runs on uint8. Within 2 steps of the fake quant (half a step at the
    median); the residual sums rounded to the next block's scale (int8.EXACT_RESIDUAL = False)
    were about 4 steps off at most and one at the median."""
    net, x = _ptq("mobilenet_v2", batches=2)
    x = x[:4]
    want = _fake_quant_logits(net, x)
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "mb"), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=1)
    ops_run = s.node_ops
    assert "relu6" not in ops_run and ops_run.count("quantize_linear") == 11, ops_run
    assert ops_run.count("qadd") == 5 and ops_run.count("add") == 5 and ops_run.count("qconv2d") == 52, ops_run
    assert ops_run.count("qavg_pool2d") == 1 and "mean" not in ops_run, ops_run
    got = s.run([Tensor(x)])[0].asnumpy()
    _check_steps(got, want, 2, 0.5)
    plain = lite.Session.from_file(path, num_threads=1, blocked_layout=False)
    np.testing.assert_array_equal(plain.run([Tensor(x)])[0].asnumpy(), got)


def test_fake_quant_export_is_still_available(tmp_path):
    net, x = _ptq("lenet5")
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "fq"), file_format="MINDIR",
                        quant_mode="NONQUANT")
    s = lite.Session.from_file(path)
    assert "qconv2d" not in s.node_ops and any(o.startswith("conv2d") for o in s.node_ops)
    np.testing.assert_allclose(s.run([Tensor(x)])[0].asnumpy(), _fake_quant_logits(net, x), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="quant_mode"):
        mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "fq"), quant_mode="AUTO")


def _qdense_file(w, w_scale=(0.1, 0.1), x_zero_point=0, wdtype="int8"):
    values = [("x", "uint8", [-1, 4], -1), ("w", wdtype, list(w.shape), 0), ("y", "float32", [-1, 2], -1)]
    node = ("qdense", "", [0, 1], [2], {"x_scale": 0.5, "x_zero_point": x_zero_point, "w_scale": w_scale})
    return lite.serialize(values, [Tensor(w)], [node], [0], [2])


def test_loader_checks_int8_nodes():
    good = _qdense_file(np.ones((2, 4), np.int8))
    s = lite.Session.from_bytes(good)
    y = s.run([Tensor(np.full((1, 4), 3, np.uint8))])[0].asnumpy()
    np.testing.assert_allclose(y, [[0.5 * 3 * 4 * 0.1] * 2], rtol=1e-6)
    cases = [
        (_qdense_file(np.ones((2, 4), np.int8), w_scale=(0.1,)), "one scale per output channel"),
        (_qdense_file(np.ones((2, 4), np.int8), w_scale=(0.1, float("inf"))), "positive finite"),
        (_qdense_file(np.ones((2, 4), np.int8), x_zero_point=300), r"must lie in \[0, 255\]"),
        (_qdense_file(np.ones((2, 4), np.float32), wdtype="float32"), "stored int8 constant"),
    ]
    for data, msg in cases:
        with pytest.raises(ValueError, match=r"MINDIR: node 0 \(qdense\).*" + msg):
            lite.verify(data)


def test_fuzz_int8_model_no_crash(tmp_path):
    """The MINDIR fuzzer (test_lite.py) on an int8 model: mutated int8 nodes and weights are
    rejected or run, never crash."""
    import subprocess
    import sys
    net, x = _ptq("lenet5")
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "q"), file_format="MINDIR")
    script = os.path.join(os.path.dirname(__file__), "lite_fuzz_worker.py")
    out = subprocess.run([sys.executable, script, path, "120", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "crashes 0" in out.stdout and "hangs 0" in out.stdout, out.stdout


@pytest.mark.parametrize("name,blocked", [("lenet5", 4), ("resnet18", 8)])
def test_int8_activations_stay_nhwc_between_int8_ops(name, blocked, tmp_path):
    """uint8 activations between int8 convolutions (and 2x2 max pooling) stay in oneDNN's NHWC
    int8 layout: no reorder per layer, the same integers as the all-NCHW plan."""
    make, shape = MODELS[name]
    net = randomize(make())
    x = np.random.default_rng(2).standard_normal((2,) + shape[1:]).astype(np.float32)
    quant.quantize(net, [Tensor(x)], method="minmax")
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / name), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=1)
    plain = lite.Session.from_file(path, num_threads=1, blocked_layout=False)
    for batch in (1, 2):
        xb = Tensor(x[:batch])
        np.testing.assert_array_equal(s.run([xb])[0].asnumpy(), plain.run([xb])[0].asnumpy())
    assert s.stats()["num_blocked"] >= blocked and plain.stats()["num_blocked"] == 0
