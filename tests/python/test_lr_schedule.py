"""Learning-rate schedule Cells and dynamic_lr lists against closed-form numpy/math references
written from their definitions, plus argument errors."""
import math

import numpy as np
import pytest

import mycel
from mycel import nn, Tensor

STEPS = [0, 1, 2, 5, 7, 10, 13, 25]


def lr_at(sched, step, shape=(1,)):
    out = sched(Tensor(np.full(shape, step, np.int32))).asnumpy()
    assert out.dtype == np.float32
    return float(out.reshape(-1)[0])


@pytest.mark.parametrize("stair", [False, True])
def test_exponential_natural_inverse_decay(stair):
    lr, rate, period = 0.1, 0.7, 4
    cells = [(nn.ExponentialDecayLR(lr, rate, period, stair), lambda p: lr * rate ** p),
             (nn.NaturalExpDecayLR(lr, rate, period, stair), lambda p: lr * math.exp(-rate * p)),
             (nn.InverseDecayLR(lr, rate, period, stair), lambda p: lr / (1 + rate * p))]
    for cell, ref in cells:
        for s in STEPS:
            p = math.floor(s / period) if stair else s / period
            assert lr_at(cell, s) == pytest.approx(ref(p), rel=1e-5), (type(cell).__name__, s)


def test_cosine_decay_holds_min_after_decay_steps():
    cell = nn.CosineDecayLR(0.01, 0.1, 10)
    for s in STEPS:
        want = 0.01 + 0.5 * (0.1 - 0.01) * (1 + math.cos(math.pi * min(s, 10) / 10))
        assert lr_at(cell, s) == pytest.approx(want, rel=1e-5)
    assert lr_at(cell, 100) == pytest.approx(0.01, rel=1e-5)


@pytest.mark.parametrize("update", [False, True])
def test_polynomial_decay(update):
    lr, end, period, power = 0.1, 0.01, 6, 2.0
    cell = nn.PolynomialDecayLR(lr, end, period, power, update)
    for s in STEPS:
        if update:
            horizon = period * max(math.ceil(s / period), 1)
            p = s / horizon
        else:
            p = min(s, period) / period
        want = (lr - end) * (1 - p) ** power + end
        assert lr_at(cell, s) == pytest.approx(want, rel=1e-5, abs=1e-7), s


def test_warmup_lr():
    cell = nn.WarmUpLR(0.2, 8)
    for s in STEPS:
        assert lr_at(cell, s) == pytest.approx(0.2 * min(s, 8) / 8, rel=1e-6, abs=1e-9)


def test_schedule_accepts_scalar_step():
    assert lr_at(nn.WarmUpLR(0.2, 8), 4, shape=()) == pytest.approx(0.1, rel=1e-6)


def test_base_class_needs_construct():
    with pytest.raises(NotImplementedError, match="construct"):
        nn.LearningRateSchedule()(Tensor(np.zeros(1, np.int32)))


def test_user_schedule_drives_optimizer():
    class Halving(nn.LearningRateSchedule):
        def construct(self, global_step):
            return 0.4 / (mycel.ops.cast(global_step, mycel.float32) + 1.0)

    w = mycel.Parameter(Tensor(np.zeros(2, np.float32)), name="w")
    opt = nn.SGD([w], Halving())
    g = np.array([1.0, -2.0], np.float32)
    for _ in range(3):
        opt((Tensor(g),))
    np.testing.assert_allclose(w.asnumpy(), -(0.4 + 0.2 + 0.4 / 3) * g, rtol=1e-6)


# ---- dynamic_lr lists ----

def test_piecewise_constant_lr():
    got = nn.piecewise_constant_lr([2, 5, 6], [0.1, 0.05, 0.01])
    assert got == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.05, 0.01])


@pytest.mark.parametrize("stair", [False, True])
def test_epoch_decays(stair):
    total, spe, de = 10, 2, 3
    for fn, ref in [(nn.exponential_decay_lr, lambda p: 0.1 * 0.5 ** p),
                    (nn.natural_exp_decay_lr, lambda p: 0.1 * math.exp(-0.5 * p)),
                    (nn.inverse_decay_lr, lambda p: 0.1 / (1 + 0.5 * p))]:
        got = fn(0.1, 0.5, total, spe, de, stair)
        want = []
        for i in range(total):
            p = (i // spe) / de
            want.append(ref(math.floor(p) if stair else p))
        assert got == pytest.approx(want), fn.__name__


def test_cosine_decay_lr():
    got = nn.cosine_decay_lr(0.01, 0.1, 8, 2, 3)
    want = [0.01 + 0.045 * (1 + math.cos(math.pi * (i // 2) / 3)) for i in range(8)]
    assert got == pytest.approx(want)


@pytest.mark.parametrize("update", [False, True])
def test_polynomial_decay_lr(update):
    got = nn.polynomial_decay_lr(0.1, 0.01, 12, 2, 2, 0.5, update)
    want = []
    for i in range(12):
        e = i // 2
        if update:
            h = 2 * max(math.ceil(e / 2), 1)
        else:
            e, h = min(e, 2), 2
        want.append(0.09 * (1 - e / h) ** 0.5 + 0.01)
    assert got == pytest.approx(want)


def test_warmup_lr_list():
    assert nn.warmup_lr(0.1, 6, 2, 2) == pytest.approx([0.0, 0.0, 0.05, 0.05, 0.1, 0.1])


def test_dynamic_list_matches_schedule_cell():
    # The same exponential decay as a per-step list and as a Cell (step_per_epoch 1).
    lst = nn.exponential_decay_lr(0.1, 0.9, 6, 1, 2)
    cell = nn.ExponentialDecayLR(0.1, 0.9, 2)
    assert [lr_at(cell, s) for s in range(6)] == pytest.approx(lst, rel=1e-5)


@pytest.mark.parametrize("call,exc,pattern", [
    (lambda: nn.ExponentialDecayLR(0.1, 0.9, 0), ValueError, "ExponentialDecayLR: argument 'decay_steps'"),
    (lambda: nn.ExponentialDecayLR(0.1, 0.9, 2.5), TypeError, "ExponentialDecayLR: argument 'decay_steps'"),
    (lambda: nn.NaturalExpDecayLR("a", 0.9, 2), TypeError, "NaturalExpDecayLR: argument 'learning_rate'"),
    (lambda: nn.InverseDecayLR(0.1, 0.9, 2, is_stair=1), TypeError, "InverseDecayLR: argument 'is_stair'"),
    (lambda: nn.CosineDecayLR(0.2, 0.1, 5), ValueError, "CosineDecayLR: argument 'min_lr' must be < max_lr"),
    (lambda: nn.PolynomialDecayLR(0.1, 0.01, 5, -1.0), ValueError, "PolynomialDecayLR: argument 'power'"),
    (lambda: nn.WarmUpLR(0.1, 0), ValueError, "WarmUpLR: argument 'warmup_steps'"),
    (lambda: nn.piecewise_constant_lr([3, 2], [0.1, 0.2]), ValueError, "piecewise_constant_lr: argument 'milestone'"),
    (lambda: nn.piecewise_constant_lr([1, 2], [0.1]), ValueError, "piecewise_constant_lr: argument 'learning_rates'"),
    (lambda: nn.exponential_decay_lr(0.1, 0.9, 10, 0, 1), ValueError, "exponential_decay_lr: argument 'step_per_epoch'"),
    (lambda: nn.cosine_decay_lr(0.1, 0.1, 10, 1, 1), ValueError, "cosine_decay_lr: argument 'min_lr'"),
    (lambda: nn.polynomial_decay_lr(0.1, 0.0, 10, 1, 1, 1.0, update_decay_epoch="y"), TypeError,
     "polynomial_decay_lr: argument 'update_decay_epoch'"),
    (lambda: nn.warmup_lr(0.1, 10, 1, 0), ValueError, "warmup_lr: argument 'warmup_epoch'"),
])
def test_errors(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
