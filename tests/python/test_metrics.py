"""train.metrics against direct counts computed independently with numpy."""
import numpy as np
import pytest

import mycel
from mycel.train.metrics import (Accuracy, ConfusionMatrix, F1, Loss, Precision, Recall,
                                 Top1CategoricalAccuracy, Top5CategoricalAccuracy, TopKCategoricalAccuracy)

RNG = np.random.default_rng(9)
SCORES = RNG.standard_normal((40, 6)).astype(np.float32)
LABELS = RNG.integers(0, 6, 40)


def batches():
    """Two batches, the first as Tensors, the second as numpy with one-hot labels."""
    yield mycel.Tensor(SCORES[:25]), mycel.Tensor(LABELS[:25].astype(np.int32))
    yield SCORES[25:], np.eye(6)[LABELS[25:]]


def run(metric, onehot=True):
    metric.clear()
    for p, y in batches():
        metric.update(p, y if onehot or np.ndim(y) == 1 else np.argmax(y, axis=1))
    return metric.eval()


def test_accuracy_and_topk():
    pred = SCORES.argmax(1)
    assert run(Accuracy()) == pytest.approx((pred == LABELS).mean())
    assert run(Top1CategoricalAccuracy()) == pytest.approx((pred == LABELS).mean())
    order = np.argsort(-SCORES, axis=1)
    for k, metric in ((5, Top5CategoricalAccuracy()), (3, TopKCategoricalAccuracy(3))):
        assert run(metric) == pytest.approx(np.mean([LABELS[i] in order[i, :k] for i in range(40)]))
    multi = Accuracy("multilabel")
    multi.update(np.array([[0.9, 0.2], [0.6, 0.7], [0.1, 0.1]]), np.array([[1, 0], [1, 0], [0, 0]]))
    assert multi.eval() == pytest.approx(2 / 3)


def test_clear_resets_and_eval_needs_data():
    acc = Accuracy()
    acc.update(SCORES, LABELS)
    acc.clear()
    with pytest.raises(RuntimeError, match="no samples"):
        acc.eval()
    with pytest.raises(ValueError, match="expects 2 inputs"):
        acc.update(SCORES)
    with pytest.raises(ValueError, match="y must be"):
        acc.update(SCORES, LABELS[:5])


def test_loss_metric_averages():
    m = Loss()
    for v in (1.0, mycel.Tensor(np.float32(2.0)), np.array([4.5])):
        m.update(v)
    assert m.eval() == pytest.approx(7.5 / 3)
    with pytest.raises(ValueError, match="one element"):
        m.update(np.ones(3))


def test_confusion_precision_recall_f1():
    pred = SCORES.argmax(1)
    cm = np.zeros((6, 6), np.int64)
    for y, p in zip(LABELS, pred):
        cm[y, p] += 1
    np.testing.assert_array_equal(run(ConfusionMatrix(6), onehot=False), cm)
    np.testing.assert_allclose(run(ConfusionMatrix(6, normalize="target"), onehot=False),
                               np.nan_to_num(cm / cm.sum(1, keepdims=True)))
    tp = np.diag(cm).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.nan_to_num(tp / cm.sum(0))
        rec = np.nan_to_num(tp / cm.sum(1))
        f1 = np.nan_to_num(2 * prec * rec / (prec + rec))
    np.testing.assert_allclose(run(Precision()), prec)
    np.testing.assert_allclose(run(Recall()), rec)
    np.testing.assert_allclose(run(F1()), f1)
    r = Recall()
    run(r)
    assert r.eval(average=True) == pytest.approx(rec.mean())


def test_confusion_matrix_bad_classes():
    m = ConfusionMatrix(2)
    with pytest.raises(ValueError, match="classes must be in"):
        m.update(np.array([0, 3]), np.array([0, 1]))
