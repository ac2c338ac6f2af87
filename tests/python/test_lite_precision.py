"""The lite runtime's bf16 precision and its per-node profile.

bf16 runs where oneDNN has bf16 convolutions and matmuls (AVX-512 BF16, AMX); elsewhere (this
AVX2 development machine) the session stays float32 and says why. With emulate_bf16 the bf16
graph runs anyway (through the kernels' float32 fallbacks), so its numerics are checked here too:
against a numpy LeNet5 that rounds to bf16 where the bf16 graph stores values, and against
float32 within bf16's tolerance."""
import time

import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel
from edge_helpers import MODELS, randomize
from bf16_reference import bf16_round

lite = _mycel.lite


def _export(name, tmp_path):
    make, shape = MODELS[name]
    net = randomize(make())
    x = np.random.default_rng(1).standard_normal((2,) + shape[1:]).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / name), file_format="MINDIR")
    return net, x, path


def _conv(x, w, b=None):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    cols = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))  # n c oh ow kh kw
    y = np.einsum("nchwij,ocij->nohw", cols.astype(np.float64), w.astype(np.float64))
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def _pool(x):
    n, c, h, w = x.shape
    return x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def _lenet5(net, x, r):
    """LeNet5 in numpy, with r applied to weights, the input and each stored activation."""
    p = {name: r(v.asnumpy()) for name, v in net.parameters_and_names()}
    h = r(x)
    for conv in ("conv1", "conv2"):
        h = _pool(np.maximum(r(_conv(h, p[conv + ".weight"], p.get(conv + ".bias"))), 0))
    h = h.reshape(h.shape[0], -1)
    for i, fc in enumerate(("fc1", "fc2", "fc3")):
        h = r(h @ p[fc + ".weight"].T.astype(np.float64) + p[fc + ".bias"])
        h = np.maximum(h, 0) if i < 2 else h
    return h


def test_bf16_where_native_else_float32_with_a_reason(tmp_path):
    net, x, path = _export("lenet5", tmp_path)
    want = lite.Session.from_file(path, num_threads=1).run([Tensor(x)])[0].asnumpy()
    s = lite.Session.from_file(path, num_threads=1, precision="bfloat16", bf16_min_work=0)
    got = s.run([Tensor(x)])[0].asnumpy()
    native, why = lite.native_bf16()
    st = s.stats()
    assert got.dtype == np.float32  # the model's interface stays float32
    if native:
        assert st["precision"] == "bfloat16" and why == ""
        np.testing.assert_allclose(got, want, atol=0.03 * np.abs(want).max())
    else:
        assert st["precision"] == "float32"
        assert st["precision_note"].startswith("bf16 requested, running float32: oneDNN ")
        assert "has no bf16" in why and why in st["precision_note"]
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="precision must be 'float32' or 'bfloat16', got 'fp8'"):
        lite.Session.from_file(path, precision="fp8")


def test_bf16_graph_numerics_lenet5(tmp_path):
    net, x, path = _export("lenet5", tmp_path)
    s = lite.Session.from_file(path, num_threads=1, precision="bfloat16", emulate_bf16=True,
                               bf16_min_work=0)
    assert s.stats()["precision"] == "bfloat16"
    assert s.node_ops[0] == "cast" and s.node_ops[-1] == "cast"
    got = s.run([Tensor(x)])[0].asnumpy()
    f32 = _lenet5(net, x, lambda a: np.asarray(a, np.float64))
    ref = _lenet5(net, x, bf16_round)
    scale = np.abs(f32).max()
    # bf16 keeps 8 significant bits: each stored value is within 2^-9 relative of float32
    np.testing.assert_allclose(got, f32, atol=0.03 * scale)
    assert np.abs(got - f32).max() > 1e-6 * scale  # it really rounded
    # the same roundings as the numpy model, up to a rounding boundary crossed the other way
    np.testing.assert_allclose(got, ref, atol=0.01 * scale)
    assert np.abs(got - ref).max() < np.abs(got - f32).max() + 0.01 * scale


@pytest.mark.parametrize("name,tol", [("resnet18", 0.05), ("mobilenet_v2", 0.1)])
def test_bf16_graph_close_to_float32(name, tol, tmp_path):
    net, x, path = _export(name, tmp_path)
    want = lite.Session.from_file(path, num_threads=1).run([Tensor(x)])[0].asnumpy()
    s = lite.Session.from_file(path, num_threads=1, precision="bfloat16", emulate_bf16=True,
                               bf16_min_work=0)
    assert s.stats()["precision"] == "bfloat16"
    got = s.run([Tensor(x)])[0].asnumpy()
    # each of the 20 (ResNet-18) or 52 (MobileNetV2) layers rounds its output to 8 significant
    # bits (2^-9 relative); with random weights the errors grow through depth
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert 1e-4 < rel < tol, rel


@pytest.mark.parametrize("name", ["lenet5", "resnet18", "mobilenet_v2"])
def test_native_bf16_activations_stay_blocked(name, tmp_path):
    """Where oneDNN has bf16 convolutions (AVX512-BF16: Zen 4, Cooper Lake, Sapphire Rapids) the
    bf16 graph keeps its activations in oneDNN's bf16 layout (NHWC there) between convolutions,
    poolings and residual adds, as the float32 graph keeps nChw8c: plain NCHW bf16 reordered
    twice around every convolution (MobileNetV2 ran slower in bf16 than in float32). The layout
    changes no value: the same primitives run, with or without the reorders around them."""
    native, _ = lite.native_bf16()
    if not native:
        pytest.skip("no bf16 convolution on this CPU: the bf16 graph stays float32")
    net, x, path = _export(name, tmp_path)
    s = lite.Session.from_file(path, num_threads=1, precision="bfloat16", bf16_min_work=0)
    plain = lite.Session.from_file(path, num_threads=1, precision="bfloat16", blocked_layout=False,
                                   bf16_min_work=0)
    assert s.stats()["precision"] == "bfloat16"
    got = s.run([Tensor(x)])[0].asnumpy()  # plans on the first run
    np.testing.assert_array_equal(got, plain.run([Tensor(x)])[0].asnumpy())
    convs = s.node_ops.count("conv2d") + sum(op.startswith("conv2d+") for op in s.node_ops)
    assert s.stats()["num_blocked"] >= convs, (s.stats()["num_blocked"], convs)
    assert plain.stats()["num_blocked"] == 0
    # one copy back to NCHW for LeNet5's flatten; the global average pooling reads the bf16
    # layout itself (infer_small_bf16.h)
    assert s.stats()["num_reorders"] == (1 if name == "lenet5" else 0), s.stats()["num_reorders"]
    want = lite.Session.from_file(path, num_threads=1).run([Tensor(x)])[0].asnumpy()
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert 1e-4 < rel < {"lenet5": 0.03, "resnet18": 0.05, "mobilenet_v2": 0.1}[name], rel


def test_int8_models_stay_int8_under_bf16(tmp_path):
    from mycel.lite import quant
    make, shape = MODELS["lenet5"]
    net = randomize(make())
    x = np.random.default_rng(0).standard_normal((4,) + shape[1:]).astype(np.float32)
    quant.quantize(net, [Tensor(x)], method="minmax")
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "q"), file_format="MINDIR")
    s = lite.Session.from_file(path, precision="bfloat16", emulate_bf16=True,
                               bf16_min_work=0)
    st = s.stats()
    assert st["precision"] == "float32" and "quantize_linear) pins its dtypes" in st["precision_note"]
    want = lite.Session.from_file(path).run([Tensor(x)])[0].asnumpy()
    np.testing.assert_array_equal(s.run([Tensor(x)])[0].asnumpy(), want)


def test_profile_times_every_node(tmp_path):
    net, x, path = _export("lenet5", tmp_path)
    s = lite.Session.from_file(path, num_threads=1, profile=True)
    assert s.stats()["node_us"] == []  # nothing run yet
    s.run([Tensor(x)])
    s.reset_profile()
    t0 = time.perf_counter()
    for _ in range(5):
        s.run([Tensor(x)])
    wall_us = (time.perf_counter() - t0) / 5 * 1e6
    us = s.stats()["node_us"]
    assert len(us) == s.stats()["num_nodes"] == len(s.node_ops)
    assert all(t > 0 for t in us) and sum(us) < wall_us
    assert lite.Session.from_file(path).stats()["node_us"] == []  # off by default


@pytest.mark.parametrize("batch", [1, 3, 5])
def test_small_layer_kernels_match_numpy_and_onednn(batch, tmp_path):
    """Dense over <= 4 rows, 2x2 max pooling of blocked tensors and the unblocking before flatten
    run infer_small.h's loops; more rows go back to oneDNN's GEMM."""
    net, _, path = _export("lenet5", tmp_path)
    x = np.random.default_rng(batch).standard_normal((batch, 1, 32, 32)).astype(np.float32)
    fast = lite.Session.from_file(path, num_threads=1)
    got = fast.run([Tensor(x)])[0].asnumpy()
    dnnl = lite.Session.from_file(path, num_threads=1, small_kernels=False)
    want = dnnl.run([Tensor(x)])[0].asnumpy()
    ref = _lenet5(net, x, lambda a: np.asarray(a, np.float64))
    assert dnnl.stats()["num_small"] == 0
    blocked = fast.stats()["num_blocked"] > 0  # pooling on the small kernel only when blocked
    assert fast.stats()["num_small"] == (3 if batch <= 4 else 0) + (2 if blocked else 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_bf16_small_layer_loops_match_the_generic_kernels(name, tmp_path):
    """In a bf16 graph the input's cast, the residual adds (with their relu), the global average
    pooling and the classifier run infer_small_bf16.h's loops: float32 arithmetic rounded to bf16
    once, as the generic kernels round, so the outputs are the generic path's
    (small_kernels=False) up to the classifier's summation order (bit for bit on the development
    machine), and close to float32."""
    native, _ = lite.native_bf16()
    net, x, path = _export(name, tmp_path)
    opts = dict(num_threads=1, precision="bfloat16", emulate_bf16=not native, bf16_min_work=0)
    fast = lite.Session.from_file(path, **opts)
    generic = lite.Session.from_file(path, small_kernels=False, **opts)
    got = fast.run([Tensor(x)])[0].asnumpy()
    want = generic.run([Tensor(x)])[0].asnumpy()
    assert fast.stats()["precision"] == "bfloat16"
    # cast, adds, the dense layer (and the pooling where the bf16 layout is blocked) on the loops
    adds = sum(op.split("+")[0] == "add" for op in fast.node_ops)
    assert fast.stats()["num_small"] >= 2 + adds, (fast.stats()["num_small"], adds)
    assert generic.stats()["num_small"] <= 1  # only the pooling, which runs its loop either way
    # one bf16 unit (2^-8 relative) of the largest logit for a different summation order
    np.testing.assert_allclose(got, want, rtol=0, atol=2.0**-7 * np.abs(want).max())
    f32 = lite.Session.from_file(path, num_threads=1).run([Tensor(x)])[0].asnumpy()
    rel = np.linalg.norm(got - f32) / np.linalg.norm(f32)
    assert rel < {"resnet18": 0.05, "mobilenet_v2": 0.1}[name], rel
