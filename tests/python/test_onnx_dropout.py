"""ONNX Dropout imported in training mode: with a seed, the mask of ONNX's reference
implementation (onnx.reference, the peer here); without one, a fresh mask per run whose kept
values are x / (1 - ratio) and whose keep rate matches 1 - ratio (a binomial bound); ratio and
training_mode given as graph inputs specialize the model on their values; bad ratios and seeds
are named errors."""
import numpy as np
import pytest

import mycel.onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402


def _model(shape, seed=None, ratio=None, training=None, mask=True, ratio_input=False, training_input=False):
    """A one-Dropout model; ratio / training_mode as constants (initializers) or graph inputs."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
    inits, names = [], ["x"]
    for name, value, as_input, kind, np_dtype in (("r", ratio, ratio_input, TensorProto.FLOAT, np.float32),
                                                  ("t", training, training_input, TensorProto.BOOL, np.bool_)):
        if value is None and not as_input:
            names.append("")
            continue
        names.append(name)
        if as_input:
            inputs.append(helper.make_tensor_value_info(name, kind, []))
        else:
            inits.append(onnx.numpy_helper.from_array(np.array(value, np_dtype), name))
    while names and names[-1] == "":
        names.pop()
    outs = ["y", "z"] if mask else ["y"]
    attrs = {} if seed is None else {"seed": seed}
    node = helper.make_node("Dropout", names, outs, name="drop", **attrs)
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))]
    if mask:
        outputs.append(helper.make_tensor_value_info("z", TensorProto.BOOL, list(shape)))
    g = helper.make_graph([node], "g", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("seed,ratio", [(0, 0.5), (7, 0.25), (12345, 0.9)])
def test_seeded_training_dropout_equals_onnx_reference(seed, ratio):
    x = np.random.default_rng(seed).standard_normal((4, 5, 6)).astype(np.float32)
    model = _model(x.shape, seed=seed, ratio=ratio, training=True)
    want_y, want_z = ReferenceEvaluator(model).run(None, {"x": x})
    net = mycel.onnx.load_model_from_bytes(model.SerializeToString())
    for _ in range(2):  # the reference reseeds at every call: the same mask each run
        y, z = net(x)
        np.testing.assert_array_equal(z.asnumpy(), want_z)
        np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-6, atol=1e-7)


def test_unseeded_training_dropout_draws_a_new_mask_per_run():
    ratio = 0.3
    x = np.random.default_rng(1).uniform(1.0, 2.0, (64, 128)).astype(np.float32)  # no zeros in x
    net = mycel.onnx.load_model_from_bytes(_model(x.shape, ratio=ratio, training=True).SerializeToString())
    masks = []
    for _ in range(2):
        y, z = net(x)
        y, z = y.asnumpy(), z.asnumpy()
        assert z.dtype == np.bool_
        np.testing.assert_allclose(y, np.where(z, x / (1 - ratio), 0.0), rtol=1e-6)
        n = z.size  # the kept count is Binomial(n, 1 - ratio): within 5 standard deviations
        assert abs(z.sum() - n * (1 - ratio)) <= 5 * np.sqrt(n * ratio * (1 - ratio)), z.mean()
        masks.append(z)
    assert (masks[0] != masks[1]).any()


def test_ratio_and_training_mode_as_graph_inputs():
    x = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    model = _model(x.shape, seed=3, ratio_input=True, training_input=True)
    net = mycel.onnx.load_model_from_bytes(model.SerializeToString())
    ref = ReferenceEvaluator(model)
    for r, t in ((0.5, True), (0.75, True), (0.5, False), (0.0, True)):
        r, t = np.float32(r), np.bool_(t)
        want_y, want_z = ref.run(None, {"x": x, "r": r, "t": t})
        y, z = net(x, r, t)
        np.testing.assert_array_equal(z.asnumpy(), want_z)
        np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-6, atol=1e-7)


def test_inference_mode_is_the_identity():
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    for training in (None, False):
        net = mycel.onnx.load_model_from_bytes(_model(x.shape, seed=1, ratio=0.5, training=training)
                                               .SerializeToString())
        y, z = net(x)
        np.testing.assert_array_equal(y.asnumpy(), x)
        assert z.asnumpy().all()


@pytest.mark.parametrize("kw,msg", [(dict(ratio=1.0), r"ratio must lie in \[0, 1\), got 1.0"),
                                    (dict(ratio=-0.1), r"ratio must lie in \[0, 1\)"),
                                    (dict(ratio=0.5, seed=-1), r"seed must lie in \[0, 2\*\*32\)")])
def test_bad_ratio_or_seed_names_the_node(kw, msg):
    data = _model((2, 3), training=True, **kw).SerializeToString()
    with pytest.raises(mycel.onnx.Unsupported, match=r"'Dropout' \(node 'drop'\).*" + msg):
        mycel.onnx.load_model_from_bytes(data)


@pytest.mark.parametrize("ratio", [np.zeros(0, np.float32), np.array([0.1, 0.2], np.float32)], ids=["empty", "two"])
def test_a_scalar_input_holding_no_value_or_several_is_a_value_error(ratio):
    """A malformed file (found by the onnx fuzz target): ratio as an initializer of 0 or 2 values."""
    model = _model((2, 3), seed=0, ratio=ratio, training=True)
    with pytest.raises(ValueError, match=r"Dropout.*'r' \(ratio\) must hold one value, got " + str(ratio.size)):
        mycel.onnx.load_model_from_bytes(model.SerializeToString())
