"""nn.CTCLoss and ops.ctc_loss as MindSpore defines them (log_probs (T, N, C), padded targets,
blank, reduction, zero_infinity), in both modes, against a brute-force sum over every alignment
of tiny cases and against finite differences of that sum for the gradient."""
import itertools

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(21)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def brute_nll(lp, target, blank):
    """-log of the sum over all C**T paths that collapse to target (merge repeats, drop blanks)."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        if _collapse(path, blank) == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


def brute_loss(lp, targets, il, tl, blank, reduction, zero_infinity=False):
    nll = np.array([brute_nll(lp[:il[i], i], targets[i, :tl[i]], blank) for i in range(lp.shape[1])])
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    return np.mean(nll / np.maximum(tl, 1))


def _batch(t=5, n=3, c=3, s=2, blank=0):
    logits = R.normal(size=(t, n, c))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    classes = [k for k in range(c) if k != blank]
    targets = R.choice(classes, size=(n, s)).astype(np.int64)
    targets[0] = classes[0]  # a repeated label: needs a blank between the two
    tl = np.array([s] + list(R.integers(0, s + 1, size=n - 1)), np.int64)
    il = np.array([t] + list(R.integers(3, t + 1, size=n - 1)), np.int64)
    return lp, targets, il, tl


@MODES
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_loss_equals_brute_force_alignment_sum(mode, reduction, blank):
    ms.set_context(mode=mode)
    lp, targets, il, tl = _batch(blank=blank)
    loss = nn.CTCLoss(blank=blank, reduction=reduction)
    got = loss(Tensor(lp), Tensor(targets), Tensor(il), Tensor(tl)).asnumpy()
    np.testing.assert_allclose(got, brute_loss(lp, targets, il, tl, blank, reduction), rtol=1e-10)


@MODES
def test_impossible_alignment_and_zero_infinity(mode):
    ms.set_context(mode=mode)
    lp, targets, il, tl = _batch(t=4)
    targets[1] = [1, 1]
    tl[1], il[1] = 2, 2  # "1 1" needs 3 frames
    inf = nn.CTCLoss(reduction="none")(Tensor(lp), Tensor(targets), Tensor(il), Tensor(tl)).asnumpy()
    assert np.isinf(inf[1]) and np.isfinite(inf[0])
    z = nn.CTCLoss(reduction="sum", zero_infinity=True)(Tensor(lp), Tensor(targets), Tensor(il), Tensor(tl))
    np.testing.assert_allclose(z.asnumpy(), brute_loss(lp, targets, il, tl, 0, "sum", True), rtol=1e-10)


def test_ops_ctc_loss_returns_loss_and_log_alpha_and_unbatched():
    lp, targets, il, tl = _batch()
    loss, log_alpha = ops.ctc_loss(Tensor(lp), Tensor(targets), Tensor(il), Tensor(tl), reduction="none")
    assert log_alpha.shape == (3, 5, 2 * 2 + 1)
    a = log_alpha.asnumpy()
    # The loss is read off alpha's last two states at the item's last frame.
    for i in range(3):
        last = a[i, il[i] - 1, 2 * tl[i] - 1:2 * tl[i] + 1] if tl[i] else a[i, il[i] - 1, :1]
        np.testing.assert_allclose(-np.logaddexp.reduce(last), loss.asnumpy()[i], rtol=1e-12)
    one = nn.CTCLoss(reduction="none")(Tensor(lp[:, 0]), Tensor(targets[0]), Tensor(np.int64(il[0])),
                                       Tensor(np.int64(tl[0])))
    assert one.shape == ()
    np.testing.assert_allclose(one.asnumpy(), loss.asnumpy()[0], rtol=1e-12)


class _CTCNet(nn.Cell):
    """CTC over log_softmax of logits: the usual training use."""

    def __init__(self, reduction):
        super().__init__()
        self.loss = nn.CTCLoss(reduction=reduction)

    def construct(self, logits, targets, il, tl):
        return self.loss(ops.log_softmax(logits, -1), targets, il, tl)


@MODES
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_gradient_matches_finite_differences_of_brute_force(mode, reduction):
    ms.set_context(mode=mode)
    _, targets, il, tl = _batch(t=4, n=2, c=3)
    logits = R.normal(size=(4, 2, 3))
    net = _CTCNet(reduction)
    g = ms.grad(net)(Tensor(logits), Tensor(targets), Tensor(il), Tensor(tl)).asnumpy()

    def f(z):
        lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        return brute_loss(lp, targets, il, tl, 0, reduction)
    num = np.zeros_like(logits)
    for idx in np.ndindex(logits.shape):
        hi, lo = logits.copy(), logits.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        num[idx] = (f(hi) - f(lo)) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-8)


def test_gradient_with_respect_to_log_probs_is_the_true_one():
    """d nll / d log_probs (not through a softmax): -(posterior occupancy of class c at t)."""
    lp, targets, il, tl = _batch(t=4, n=1, c=3)
    g = ms.grad(lambda x: ops.ctc_loss(x, Tensor(targets), Tensor(il), Tensor(tl), reduction="sum")[0])(Tensor(lp))
    num = np.zeros_like(lp)
    for idx in np.ndindex(lp.shape):
        hi, lo = lp.copy(), lp.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        num[idx] = (brute_loss(hi, targets, il, tl, 0, "sum") - brute_loss(lo, targets, il, tl, 0, "sum")) / 2e-6
    np.testing.assert_allclose(g.asnumpy(), num, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(g.asnumpy().sum(-1), -1.0, rtol=1e-10)  # one class per frame


def test_bad_input_names_the_op_and_argument():
    lp, targets, il, tl = _batch()
    args = [Tensor(lp), Tensor(targets), Tensor(il), Tensor(tl)]
    with pytest.raises(ValueError, match=r"ctc_loss.*targets\[0, 0\].*blank"):
        ops.ctc_loss(args[0], Tensor(np.zeros_like(targets)), args[2], args[3])
    with pytest.raises(ValueError, match=r"ctc_loss.*input_lengths\[1\]"):
        ops.ctc_loss(args[0], args[1], Tensor(np.array([5, 9, 3], np.int64)), args[3])
    with pytest.raises(ValueError, match=r"ctc_loss.*target_lengths\[2\]"):
        ops.ctc_loss(args[0], args[1], args[2], Tensor(np.array([1, 1, 3], np.int64)))
    with pytest.raises(TypeError, match=r"ctc_loss.*targets"):
        ops.ctc_loss(args[0], Tensor(targets.astype(np.float32)), args[2], args[3])
    with pytest.raises(ValueError, match=r"ctc_loss.*blank"):
        ops.ctc_loss(*args, blank=3)
    with pytest.raises(ValueError, match="CTCLoss"):
        nn.CTCLoss(reduction="avg")
