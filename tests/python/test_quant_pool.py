"""int8 average pooling (qavg_pool2d: calibrated input scale, exact int32 window sums, requantized
output) and exact residual sums in the lite runtime's int8 graphs (mycel.lite.int8), checked
against numpy references (bit for bit where the kernel's float32 steps are replayed, within one
unit of the float64 quantize(mean(dequantize)) otherwise) and against the fake-quant net."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, lite, nn, ops
from mycel.lite import int8, quant
from edge_helpers import randomize
from op_cases.quant import qavg_pool2d_ref, quantize_ref

GEOMS = [  # kernel, stride, pad_mode, pad, count_include_pad
    (3, 2, "valid", 0, False), (3, 1, "pad", 1, False), (3, 1, "pad", 1, True), (2, 2, "valid", 0, False),
    ((7, 5), (1, 1), "valid", 0, False),  # a whole-image window: global average pooling
]


def _float64_ref(x, kernel, stride, pad, include, xs, xz, ys, yz):
    """quantize(avg_pool(dequantize(x))) in float64."""
    kh, kw = (kernel, kernel) if np.isscalar(kernel) else kernel
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    d = np.pad((x.astype(np.float64) - xz) * xs, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    inside = np.pad(np.ones(x.shape[2:]), pad)
    oh, ow = (d.shape[2] - kh) // sh + 1, (d.shape[3] - kw) // sw + 1
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = (slice(i * sh, i * sh + kh), slice(j * sw, j * sw + kw))
            y[:, :, i, j] = d[(Ellipsis,) + win].sum(axis=(2, 3)) / (kh * kw if include else inside[win].sum())
    return np.clip(np.round(y / ys) + yz, 0, 255)


@pytest.mark.parametrize("geom", GEOMS)
def test_qavg_pool2d_matches_numpy(geom):
    kernel, stride, mode, pad, include = geom
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (2, 5, 7, 5)).astype(np.uint8)
    q = dict(x_scale=0.037, x_zero_point=121, y_scale=0.021, y_zero_point=40)
    got = ops.qavg_pool2d(Tensor(x), kernel_size=kernel, strides=stride, pad_mode=mode, pad=pad,
                          count_include_pad=include, **q).asnumpy()
    want = qavg_pool2d_ref(x, kernel, stride, mode, pad, include, **q)
    np.testing.assert_array_equal(got, want)
    exact = _float64_ref(x, kernel, stride, pad, include, q["x_scale"], q["x_zero_point"], q["y_scale"],
                         q["y_zero_point"])
    assert np.abs(got.astype(np.int64) - exact).max() <= 1


def test_qavg_pool2d_saturates_and_names_bad_input():
    x = np.full((1, 2, 4, 4), 255, np.uint8)
    y = ops.qavg_pool2d(Tensor(x), kernel_size=2, strides=2, x_scale=1.0, y_scale=0.5).asnumpy()
    assert (y == 255).all()  # 255 / 0.5 saturates
    with pytest.raises(TypeError, match=r"\[qavg_pool2d\] input 'x' has unsupported dtype int8; supported: uint8"):
        ops.qavg_pool2d(Tensor(x.astype(np.int8)), kernel_size=2)
    with pytest.raises(ValueError, match=r"\[qavg_pool2d\] attribute 'x_scale' must be a positive"):
        ops.qavg_pool2d(Tensor(x), kernel_size=2, x_scale=-1.0)
    with pytest.raises(ValueError, match=r"\[qavg_pool2d\] attribute 'y_zero_point' must lie in \[0, 255\]"):
        ops.qavg_pool2d(Tensor(x), kernel_size=2, y_zero_point=256)
    with pytest.raises(ValueError, match=r"\[qavg_pool2d\] padding .* at most half the kernel size"):
        ops.qavg_pool2d(Tensor(x), kernel_size=2, pad_mode="pad", pad=2)


def _conv_pool_graph(pool_attrs, out_is_pool=True):
    """x (uint8) -> qconv2d (uint8 out) -> qavg_pool2d: the pool's input is NHWC in the lite
    runtime's blocked plan and NCHW in its plain one."""
    sh = [-1, 8, 6, 6]
    rng = np.random.default_rng(1)
    w = Tensor(rng.integers(-20, 21, (8, 8, 3, 3)).astype(np.int8))
    conv = dict(pad_mode="pad", pad=[1], x_scale=0.05, x_zero_point=3, w_scale=(0.01,) * 8, out_dtype=mycel.uint8,
                y_scale=0.04, y_zero_point=20)
    values = [("x", "uint8", sh, -1), ("w", "int8", [8, 8, 3, 3], 0), ("c", "uint8", sh, -1),
              ("p", "uint8", [-1, 8, -1, -1], -1)]
    nodes = [("qconv2d", "", [0, 1], [2], conv), ("qavg_pool2d", "", [2], [3], pool_attrs)]
    return _mycel.lite.serialize(values, [w], nodes, [0], [3]), w, conv


@pytest.mark.parametrize("geom", GEOMS[:3] + [((6, 6), 1, "valid", 0, False)])
def test_qavg_pool2d_in_the_lite_runtime_nhwc_and_nchw(geom):
    kernel, stride, mode, pad, include = geom
    attrs = dict(kernel_size=kernel, strides=stride, pad_mode=mode, pad=[pad], count_include_pad=include,
                 x_scale=0.04, x_zero_point=20, y_scale=0.03, y_zero_point=7)
    blob, w, conv = _conv_pool_graph(attrs)
    x = np.random.default_rng(2).integers(0, 256, (2, 8, 6, 6)).astype(np.uint8)
    c = ops.qconv2d(Tensor(x), w, None, **conv).asnumpy()
    want = qavg_pool2d_ref(c, kernel, stride, mode, pad, include, **{k: attrs[k] for k in (
        "x_scale", "x_zero_point", "y_scale", "y_zero_point")})
    blocked = lite.Session.from_bytes(blob, num_threads=1)
    plain = lite.Session.from_bytes(blob, num_threads=1, blocked_layout=False)
    np.testing.assert_array_equal(blocked.run([Tensor(x)])[0].asnumpy(), want)
    np.testing.assert_array_equal(plain.run([Tensor(x)])[0].asnumpy(), want)
    assert blocked.stats()["num_blocked"] >= 1 and plain.stats()["num_blocked"] == 0


def test_nhwc_value_whose_only_reader_takes_a_copy():
    """A qconv2d output stored NHWC (a qadd reads it) whose qadd runs on NCHW copies (its output is
    a model output): the copy must not take the source's buffer (it did: garbage)."""
    sh = [-1, 8, 6, 6]
    rng = np.random.default_rng(0)
    w = Tensor(rng.integers(-20, 21, (8, 8, 3, 3)).astype(np.int8))
    x = Tensor(rng.integers(0, 256, (1, 8, 6, 6)).astype(np.uint8))
    conv = dict(pad_mode="pad", pad=[1], x_scale=0.05, x_zero_point=3, w_scale=(0.01,) * 8)
    qa = dict(y_scale=0.1, y_zero_point=100)
    values = [("x", "uint8", sh, -1), ("w", "int8", [8, 8, 3, 3], 0), ("y", "float32", sh, -1),
              ("r", "uint8", sh, -1)]
    blob = _mycel.lite.serialize(values, [w], [("qconv2d", "", [0, 1], [2], conv), ("qadd", "", [2, 2], [3], qa)],
                                 [0], [3])
    y = ops.qconv2d(x, w, None, **conv)
    s = lite.Session.from_bytes(blob, num_threads=1)
    np.testing.assert_array_equal(s.run([x])[0].asnumpy(), ops.qadd(y, y, **qa).asnumpy())
    assert s.stats()["num_reorders"] == 1


class _PoolNet(nn.Cell):
    """conv -> relu -> AvgPool2d (a cell) -> conv -> relu -> spatial mean (a call) -> dense."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, pad_mode="same", has_bias=True)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)
        self.c2 = nn.Conv2d(8, 16, 3, pad_mode="same", has_bias=True)
        self.fc = nn.Dense(16, 5)
        self.relu = nn.ReLU()

    def construct(self, x):
        x = self.pool(self.relu(self.c1(x)))
        x = self.relu(self.c2(x))
        return self.fc(ops.mean(x, axis=(2, 3)))


def test_ptq_records_pool_scales_and_runs_them_int8(tmp_path):
    net = randomize(_PoolNet(), seed=4)
    rng = np.random.default_rng(4)
    calib = [Tensor(rng.standard_normal((8, 3, 12, 12)).astype(np.float32)) for _ in range(3)]
    # the first pooling's input over the calibration batches, from the float net
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    try:
        a1 = np.concatenate([np.maximum(net.c1(c).asnumpy(), 0) for c in calib])
    finally:
        mycel.set_context(mode=old)
    quant.quantize(net, calib, method="minmax")
    pools = net._quant_pools
    assert [(p["op"], p["shape"]) for p in pools] == [("avg_pool2d", (8, 12, 12)), ("mean", (16, 6, 6))]
    scale, zp = quant.act_qparams(a1.min(), a1.max())
    assert pools[0]["scale"] == pytest.approx(scale, rel=1e-6) and pools[0]["zero_point"] == int(zp) + 128
    x = rng.standard_normal((6, 3, 12, 12)).astype(np.float32)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        want = net(Tensor(x)).asnumpy()  # the fake-quant net (float32 poolings)
    finally:
        mycel.set_context(mode=old)
    report = {}
    from mycel.lite import mindir
    with quant.int8_mode(net):
        from importlib import import_module
        data = import_module("mycel.lite.export").inference_graph(net, Tensor(x[:1]))
    mindir.graph_to_mindir(data, report, pools=pools)
    assert report["pools_quantized"] == 2 and report["pool_requantizes_fused"] == 2, report
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "pool"), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=1)
    assert s.node_ops.count("qavg_pool2d") == 2 and not {"avg_pool2d", "mean"} & set(s.node_ops), s.node_ops
    got = s.run([Tensor(x)])[0].asnumpy()
    step = (want.max() - want.min()) / 255
    assert np.abs(got - want).max() <= 2 * step, np.abs(got - want).max() / step
    # without the recorded scales the poolings stay float32, as before
    object.__setattr__(net, "_quant_pools", [])
    path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "float_pool"), file_format="MINDIR")
    ops_run = lite.Session.from_file(path, num_threads=1).node_ops
    assert "qavg_pool2d" not in ops_run and "avg_pool2d" in ops_run and "mean" in ops_run, ops_run


def test_pool_scales_that_do_not_match_the_graph_are_ignored():
    g = int8._Graph([("x", mycel.float32, [-1, 4, 3, 3], -1), ("y", mycel.float32, [-1, 4], -1)], [],
                    [("mean", "", [0], [1], {"axis": (2, 3), "keep_dims": False})], [0], [1])
    bad_shape = [{"op": "mean", "shape": (4, 5, 5), "scale": 0.1, "zero_point": 0}]
    assert int8.quantize_pools(g, bad_shape) == 0 and int8.quantize_pools(g, bad_shape * 2) == 0
    assert int8.quantize_pools(g, [dict(bad_shape[0], shape=(4, 3, 3))]) == 1
    assert [n["op"] for n in g.nodes] == ["quantize_linear", "qavg_pool2d", "flatten", "dequantize_linear"]


def test_exact_residual_sums_equal_the_float_chain(tmp_path, monkeypatch):
    """The int8 ResNet's shortcuts read the float32 sums (int8.EXACT_RESIDUAL): the lite graph is the
    fake-quant net's arithmetic, so it is closer to it than the fused form, whose shortcuts carry
    the sums rounded to the next block's scale. The float chain sums its convolutions directly
    (MYCEL_WINOGRAD_NCHW=0): Winograd's transforms would round the fake-quant products, which
    direct float32 sums keep exact."""
    monkeypatch.setenv("MYCEL_WINOGRAD_NCHW", "0")
    from edge_helpers import MODELS
    make, shape = MODELS["resnet18"]
    net = randomize(make(), seed=0)
    rng = np.random.default_rng(0)
    quant.quantize(net, [Tensor(rng.standard_normal((8,) + shape[1:]).astype(np.float32)) for _ in range(2)])
    object.__setattr__(net, "_quant_pools", [])  # the pooling as the fake quant has it
    x = rng.standard_normal((8,) + shape[1:]).astype(np.float32)
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        want = net(Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=old)
    step = (want.max() - want.min()) / 255
    err = {}
    try:
        for exact in (True, False):
            int8.EXACT_RESIDUAL = exact
            path = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / f"r{exact}"), file_format="MINDIR")
            s = lite.Session.from_file(path, num_threads=1)
            got = s.run([Tensor(x)])[0].asnumpy()
            err[exact] = np.abs(got - want) / step
            if exact:
                assert "dequantize_linear" not in s.node_ops and s.node_ops.count("add+relu") == 5, s.node_ops
    finally:
        int8.EXACT_RESIDUAL = True
    assert err[True].max() <= 3 and np.median(err[True]) <= 0.5, (err[True].max(), np.median(err[True]))
    assert np.median(err[True]) < np.median(err[False])


def test_loader_checks_qavg_pool2d_nodes():
    """A qavg_pool2d node's attributes are checked when the file loads (as the other int8 nodes')."""
    def model(**q):
        attrs = dict(kernel_size=[2, 2], strides=[2, 2], x_scale=0.1, y_scale=0.1)
        attrs.update(q)
        return _mycel.lite.serialize([("x", "uint8", [1, 3, 4, 4], -1), ("y", "uint8", [1, 3, 2, 2], -1)], [],
                                     [("qavg_pool2d", "", [0], [1], attrs)], [0], [1])
    x = np.arange(48, dtype=np.uint8).reshape(1, 3, 4, 4)
    got = lite.Session.from_bytes(model()).run([Tensor(x)])[0].asnumpy()
    np.testing.assert_array_equal(got, qavg_pool2d_ref(x, 2, 2, x_scale=0.1, y_scale=0.1))
    for bad, msg in ((dict(x_scale=0.0), "'x_scale' must be a positive"), (dict(y_zero_point=999), r"\[0, 255\]"),
                     (dict(pad_mode="pad", pad=[3]), "at most half the kernel size")):
        with pytest.raises(ValueError, match=r"MINDIR: node 0 \(qavg_pool2d\).*" + msg):
            lite.verify(model(**bad))
