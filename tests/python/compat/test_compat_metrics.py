"""MindSpore's ROC, auc, Dice, CosineSimilarity and Perplexity metrics: ROC and auc against
scikit-learn, the others against numpy written from MindSpore's definitions; by name through
get_metric_fn and Model(metrics=...)'s names."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel.train import metrics

sk = pytest.importorskip("sklearn.metrics")
R = np.random.default_rng(21)


def test_binary_roc_and_auc_vs_sklearn():
    scores = np.round(R.random(40), 1)  # ties between scores, as real scores have
    labels = (R.random(40) < 0.5).astype(np.int64)
    roc = metrics.ROC()
    roc.update(ms.Tensor(scores[:25]), ms.Tensor(labels[:25]))  # float64: the ties stay ties
    roc.update(scores[25:], labels[25:])
    fpr, tpr, thr = roc.eval()
    want_fpr, want_tpr, want_thr = sk.roc_curve(labels, scores, drop_intermediate=False)
    np.testing.assert_allclose(fpr, want_fpr, atol=1e-6)
    np.testing.assert_allclose(tpr, want_tpr, atol=1e-6)
    # MindSpore's first threshold is the highest score + 1 (scikit-learn's newer ones use inf)
    np.testing.assert_allclose(thr[1:], want_thr[1:], atol=1e-6)
    assert thr[0] == pytest.approx(thr[1] + 1)
    assert metrics.auc(fpr, tpr) == pytest.approx(sk.roc_auc_score(labels, scores), abs=1e-9)
    x, y = R.random(10), R.random(10)
    assert metrics.auc(x, y, reorder=True) == pytest.approx(sk.auc(np.sort(x), y[np.argsort(x)]))
    assert metrics.auc(x[::-1].cumsum()[::-1], y) == pytest.approx(sk.auc(x[::-1].cumsum()[::-1], y))
    with pytest.raises(ValueError, match="neither increasing nor decreasing"):
        metrics.auc([0, 1, 0.5], [0, 1, 1])


def test_multiclass_roc_per_class_vs_sklearn():
    scores = R.random((30, 3))
    labels = R.integers(0, 3, 30)
    roc = ms.train.get_metric_fn("roc")
    roc.update(scores, labels)
    fprs, tprs, _ = roc.eval()
    for c in range(3):
        want_fpr, want_tpr, _ = sk.roc_curve(labels == c, scores[:, c], drop_intermediate=False)
        np.testing.assert_allclose(fprs[c], want_fpr)
        np.testing.assert_allclose(tprs[c], want_tpr)


def test_dice_cosine_perplexity_vs_numpy():
    dice = metrics.Dice(smooth=1e-5)
    batches = [(R.random((2, 4, 4)), (R.random((2, 4, 4)) > 0.5).astype(np.float64)) for _ in range(3)]
    for p, y in batches:
        dice.update(ms.Tensor(p.astype(np.float32)), y)
    want = sum(2 * (p * y).sum() / ((p * p).sum() + (y * y).sum() + 1e-5) for p, y in batches) / 6
    assert dice.eval() == pytest.approx(want, rel=1e-6)

    x = R.normal(size=(4, 3))
    cos = ms.train.get_metric_fn("cosine_similarity", reduction="mean")
    cos.update(x)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    m = u @ u.T
    np.fill_diagonal(m, 0)
    np.testing.assert_allclose(cos.eval(), m.mean(-1))
    dot = metrics.CosineSimilarity(similarity="dot", zero_diagonal=False)
    dot.update(x)
    np.testing.assert_allclose(dot.eval(), x @ x.T)

    probs = R.dirichlet(np.ones(5), size=(2, 6))  # (N, T, C)
    labels = R.integers(0, 5, (2, 6))
    labels[0, 0] = -1
    ppl = metrics.Perplexity(ignore_label=-1)
    ppl.update(ms.Tensor(probs.astype(np.float32)), labels)
    keep = labels != -1
    nll = -np.log(np.take_along_axis(probs, np.where(keep, labels, 0)[..., None], -1)[..., 0])[keep]
    assert ppl.eval() == pytest.approx(math.exp(nll.mean()), rel=1e-5)


def test_metric_errors():
    with pytest.raises(RuntimeError, match="Dice.eval: no samples"):
        metrics.Dice().eval()
    with pytest.raises(ValueError, match=r"Dice.update: y_pred \(2,\) and y \(3,\)"):
        metrics.Dice().update(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="similarity must be 'cosine' or 'dot'"):
        metrics.CosineSimilarity(similarity="l2")
    with pytest.raises(ValueError, match="3 labels for 2 prediction rows"):
        metrics.Perplexity().update(np.ones((2, 4)) / 4, np.zeros(3))
    assert {"dice", "roc", "perplexity", "cosine_similarity"} <= set(ms.train.names())
