"""MindSpore's loss zoo against numpy formulas, in both modes, with float64 gradients against
central finite differences."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

R = np.random.default_rng(11)
X1, X2 = R.normal(size=(6, 4)), R.normal(size=(6, 4))
SIGN = np.where(R.random((6, 4)) < 0.5, -1.0, 1.0)
SIGN_ROW = np.where(R.random(6) < 0.5, -1.0, 1.0)
P = 1 / (1 + np.exp(-X1))
Y01 = (R.random((6, 4)) < 0.5).astype(np.float64)
VAR = R.uniform(0.1, 2.0, size=(6, 4))
COUNTS = R.poisson(2.0, size=(6, 4)).astype(np.float64)
LABELS = R.integers(0, 4, size=6)
LOGP = np.log(R.dirichlet(np.ones(4), size=6))
Q = R.dirichlet(np.ones(4), size=6)


def _cos(a, b):
    return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


def _multi_margin(x, y, p=1, margin=1.0):
    out = np.zeros(len(y))
    for i, t in enumerate(y):
        h = np.maximum(0, margin - x[i, t] + x[i])
        h[t] = 0
        out[i] = (h ** p).sum() / x.shape[1]
    return out


def _multi_label_margin(x, y):
    """Each row: targets are y up to the first -1; sum over targets j, non-targets i of
    max(0, 1 - (x[j] - x[i])) / C (MindSpore's MultiLabelMarginLoss)."""
    out = np.zeros(len(x))
    for r in range(len(x)):
        targets = []
        for t in y[r]:
            if t == -1:
                break
            targets.append(t)
        others = [i for i in range(x.shape[1]) if i not in targets]
        out[r] = sum(max(0.0, 1 - (x[r, j] - x[r, i])) for j in targets for i in others) / x.shape[1]
    return out


ML_TARGETS = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3], [2, -1, -1, -1], [0, 0, -1, 2],
                       [1, 3, -1, 0]])


def _stirling(y):
    return np.where(y > 1, y * np.log(np.maximum(y, 1)) - y + 0.5 * np.log(2 * np.pi * np.maximum(y, 1)), 0)


CASES = [
    ("MarginRankingLoss", lambda: nn.MarginRankingLoss(0.3), (X1, X2, SIGN), np.maximum(0, -SIGN * (X1 - X2) + 0.3)),
    ("HuberLoss", lambda: nn.HuberLoss(delta=0.7), (X1, X2),
     np.where(np.abs(X1 - X2) <= 0.7, 0.5 * (X1 - X2) ** 2, 0.7 * (np.abs(X1 - X2) - 0.35))),
    ("SoftMarginLoss", lambda: nn.SoftMarginLoss(), (X1, SIGN), np.log1p(np.exp(-SIGN * X1))),
    ("HingeEmbeddingLoss", lambda: nn.HingeEmbeddingLoss(0.5), (X1, SIGN), np.where(SIGN == 1, X1, np.maximum(0, 0.5 - X1))),
    ("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(0.1), (X1, X2, SIGN_ROW),
     np.where(SIGN_ROW == 1, 1 - _cos(X1, X2), np.maximum(0, _cos(X1, X2) - 0.1))),
    ("KLDivLoss", lambda: nn.KLDivLoss(), (LOGP, Q), Q * (np.log(Q) - LOGP)),
    ("BCELoss", lambda: nn.BCELoss(), (P, Y01), -(Y01 * np.log(P) + (1 - Y01) * np.log(1 - P))),
    ("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(), (X1, COUNTS), np.exp(X1) - COUNTS * X1),
    ("PoissonNLLLoss full", lambda: nn.PoissonNLLLoss(full=True), (X1, COUNTS), np.exp(X1) - COUNTS * X1 + _stirling(COUNTS)),
    ("GaussianNLLLoss", lambda: nn.GaussianNLLLoss(), (X1, X2, VAR), 0.5 * (np.log(VAR) + (X1 - X2) ** 2 / VAR)),
    ("MultiLabelSoftMarginLoss", lambda: nn.MultiLabelSoftMarginLoss(), (X1, Y01),
     (Y01 * np.log1p(np.exp(-X1)) + (1 - Y01) * np.log1p(np.exp(X1))).mean(-1)),
    ("MultiMarginLoss", lambda: nn.MultiMarginLoss(), (X1, LABELS), _multi_margin(X1, LABELS)),
    ("MultiMarginLoss p2", lambda: nn.MultiMarginLoss(p=2, margin=0.5), (X1, LABELS), _multi_margin(X1, LABELS, 2, 0.5)),
    ("MultiLabelMarginLoss", lambda: nn.MultiLabelMarginLoss(), (X1, ML_TARGETS), _multi_label_margin(X1, ML_TARGETS)),
    ("TripletMarginLoss", lambda: nn.TripletMarginLoss(), (X1, X2, X1[::-1].copy()),
     np.maximum(0, np.linalg.norm(X1 - X2 + 1e-6, axis=-1) - np.linalg.norm(X1 - X1[::-1] + 1e-6, axis=-1) + 1.0)),
]


def _tensors(args):
    return [Tensor(a.astype(np.int32)) if a.dtype.kind == "i" else Tensor(a) for a in args]


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("name,make,args,per", CASES, ids=[c[0] for c in CASES])
def test_losses_vs_numpy(mode, name, make, args, per):
    mycel.set_context(mode=mode)
    try:
        loss = make()
        np.testing.assert_allclose(loss(*_tensors(args)).asnumpy(), per.mean(), rtol=1e-10, atol=1e-12)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("name,make,args,per", CASES[:7] + CASES[9:11], ids=[c[0] for c in CASES[:7] + CASES[9:11]])
def test_loss_gradients_vs_finite_differences(name, make, args, per):
    loss = make()
    rest = _tensors(args[1:])
    g = mycel.grad(lambda x: loss(x, *rest))(Tensor(args[0])).asnumpy()
    fd = np.zeros_like(args[0])
    for idx in np.ndindex(*args[0].shape):
        p, m = args[0].copy(), args[0].copy()
        p[idx] += 1e-6
        m[idx] -= 1e-6
        fd[idx] = (float(loss(Tensor(p), *rest).asnumpy()) - float(loss(Tensor(m), *rest).asnumpy())) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def test_reductions_and_bad_arguments():
    a, b = Tensor(X1), Tensor(X2)
    np.testing.assert_allclose(nn.HuberLoss(reduction="sum")(a, b).asnumpy(), nn.HuberLoss(reduction="none")(a, b).asnumpy().sum())
    np.testing.assert_allclose(nn.KLDivLoss("batchmean")(Tensor(LOGP), Tensor(Q)).asnumpy(), (Q * (np.log(Q) - LOGP)).sum() / 6)
    with pytest.raises(ValueError, match="delta must be a positive number"):
        nn.HuberLoss(delta=0)
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MarginRankingLoss(reduction="avg")
