"""Loss ops reject bad shapes, dtypes, attribute values and labels with errors naming the op;
plus the paths the op table cannot reach (extreme logits end to end, optional inputs by keyword)."""
import numpy as np
import pytest

import mycel
from mycel import ops


def T(shape, dtype="float32", fill=None):
    a = np.zeros(shape, dtype) if fill is None else np.full(shape, fill, dtype)
    return mycel.Tensor(a)


LOGITS = T((4, 3))
IDX = T((4,), "int64", 1)

BAD_REDUCTION = [
    ("sparse_softmax_cross_entropy_with_logits", (LOGITS, IDX)),
    ("nll_loss", (LOGITS, IDX)),
    ("binary_cross_entropy", (T((4, 3), fill=0.5), T((4, 3)))),
    ("binary_cross_entropy_with_logits", (LOGITS, T((4, 3)))),
    ("mse_loss", (LOGITS, T((4, 3)))),
]


@pytest.mark.parametrize("op,args", BAD_REDUCTION, ids=[o for o, _ in BAD_REDUCTION])
def test_bad_reduction(op, args):
    with pytest.raises(ValueError, match=rf"\[{op}\].*reduction.*'avg'"):
        getattr(ops, op)(*args, reduction="avg")


@pytest.mark.parametrize("op", ["sparse_softmax_cross_entropy_with_logits", "nll_loss"])
def test_label_dtype(op):
    with pytest.raises(TypeError, match=rf"\[{op}\].*int32 or int64.*float32"):
        getattr(ops, op)(LOGITS, T((4,), "float32"))
    with pytest.raises(TypeError, match=rf"\[{op}\].*int32 or int64.*int8"):
        getattr(ops, op)(LOGITS, T((4,), "int8"))


@pytest.mark.parametrize("op", ["sparse_softmax_cross_entropy_with_logits", "nll_loss"])
def test_index_label_shapes(op):
    with pytest.raises(ValueError, match=rf"\[{op}\].*\(5,\).*\(4, 3\).*shape\[0\] \(5\)"):
        getattr(ops, op)(LOGITS, T((5,), "int64"))
    with pytest.raises(ValueError, match=rf"\[{op}\].*rank 1"):
        getattr(ops, op)(LOGITS, T((4, 1), "int64"))
    with pytest.raises(ValueError, match=rf"\[{op}\].*'logits' must have rank 2"):
        getattr(ops, op)(T((4,)), IDX)


@pytest.mark.parametrize("op", ["sparse_softmax_cross_entropy_with_logits", "nll_loss"])
@pytest.mark.parametrize("bad", [3, -1, 100])
def test_label_out_of_range(op, bad):
    labels = np.array([0, 1, bad, 2], np.int32)
    with pytest.raises(IndexError, match=rf"\[{op}\].*\[2\] = {bad}.*3 classes"):
        getattr(ops, op)(LOGITS, mycel.Tensor(labels), reduction="none")


def test_nll_ignore_index_is_not_out_of_range():
    loss, total = ops.nll_loss(LOGITS, mycel.Tensor(np.array([0, 7, 7, 2])), ignore_index=7)
    assert total.asnumpy() == 2


def test_nll_weight_errors():
    with pytest.raises(ValueError, match=r"\[nll_loss\].*'weight' shape \(4,\).*\(3,\)"):
        ops.nll_loss(LOGITS, IDX, T((4,)))
    with pytest.raises(TypeError, match=r"\[nll_loss\].*same dtype"):
        ops.nll_loss(LOGITS, IDX, T((3,), "float64"))


def test_softmax_cross_entropy_errors():
    op = "softmax_cross_entropy_with_logits"
    with pytest.raises(ValueError, match=rf"\[{op}\].*'labels' shape \(4, 2\).*\(4, 3\)"):
        ops.softmax_cross_entropy_with_logits(LOGITS, T((4, 2)))
    with pytest.raises(TypeError, match=rf"\[{op}\].*same dtype"):
        ops.softmax_cross_entropy_with_logits(LOGITS, T((4, 3), "float64"))
    with pytest.raises(ValueError, match=rf"\[{op}\].*rank 2"):
        ops.softmax_cross_entropy_with_logits(T((2, 4, 3)), T((2, 4, 3)))
    with pytest.raises(TypeError, match=rf"\[{op}\].*int32"):
        ops.softmax_cross_entropy_with_logits(T((4, 3), "int32"), T((4, 3), "int32"))


@pytest.mark.parametrize("op", ["binary_cross_entropy", "binary_cross_entropy_with_logits"])
def test_binary_cross_entropy_errors(op):
    f = getattr(ops, op)
    with pytest.raises(ValueError, match=rf"\[{op}\].*shape \(4, 2\).*\(4, 3\)"):
        f(LOGITS, T((4, 2)))
    with pytest.raises(TypeError, match=rf"\[{op}\].*same dtype"):
        f(LOGITS, T((4, 3), "float64"))
    with pytest.raises(ValueError, match=rf"\[{op}\].*'weight' shape \(2,\) does not broadcast"):
        f(LOGITS, T((4, 3)), T((2,)))
    with pytest.raises(ValueError, match=rf"\[{op}\].*'weight' shape \(1, 4, 3\)"):
        f(LOGITS, T((4, 3)), T((1, 4, 3)))
    with pytest.raises(TypeError, match=rf"\[{op}\]"):
        f(T((4, 3), "int64"), T((4, 3), "int64"))


def test_pos_weight_errors():
    op = "binary_cross_entropy_with_logits"
    with pytest.raises(ValueError, match=rf"\[{op}\].*'pos_weight' shape \(5,\)"):
        ops.binary_cross_entropy_with_logits(LOGITS, T((4, 3)), T((3,)), T((5,)))
    with pytest.raises(TypeError, match=rf"\[{op}\].*'pos_weight'.*same dtype"):
        ops.binary_cross_entropy_with_logits(LOGITS, T((4, 3)), pos_weight=T((3,), "float64"))


def test_mse_errors():
    with pytest.raises(ValueError, match=r"\[mse_loss\]"):
        ops.mse_loss(LOGITS, T((4, 2)))
    with pytest.raises(TypeError, match=r"\[mse_loss\].*same dtype"):
        ops.mse_loss(LOGITS, T((4, 3), "float64"))


def test_extreme_logits_stay_finite():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 10)) * 1e4).astype(np.float32)
    labels = rng.integers(0, 10, 64)
    probs = np.eye(10, dtype=np.float32)[labels]
    loss, grad = ops.softmax_cross_entropy_with_logits(mycel.Tensor(x), mycel.Tensor(probs))
    assert np.isfinite(loss.asnumpy()).all() and np.isfinite(grad.asnumpy()).all()
    for red in ("mean", "none"):
        s = ops.sparse_softmax_cross_entropy_with_logits(mycel.Tensor(x), mycel.Tensor(labels),
                                                         reduction=red)
        assert np.isfinite(s.asnumpy()).all()
        b = ops.binary_cross_entropy_with_logits(mycel.Tensor(x), mycel.Tensor(probs),
                                                 reduction=red)
        assert np.isfinite(b.asnumpy()).all()


def test_pos_weight_without_weight_by_keyword():
    from op_cases.loss import bce_logits_ref
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = (rng.random((5, 4)) < 0.5).astype(np.float32)
    pw = rng.uniform(0.5, 3.0, 4).astype(np.float32)
    got = ops.binary_cross_entropy_with_logits(mycel.Tensor(x), mycel.Tensor(y),
                                               pos_weight=mycel.Tensor(pw), reduction="none")
    np.testing.assert_allclose(got.asnumpy(), bce_logits_ref(x, y, None, pw, reduction="none"),
                               rtol=1e-5, atol=1e-6)
