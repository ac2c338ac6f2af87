"""Optimizers against hand-written numpy references of their update formulas (one and three
steps, weight decay, variants, parameter groups, dynamic learning rates), their errors, and a
50-step linear regression trained with each one in PYNATIVE_MODE."""
import math

import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor, Parameter

SHAPES = [(3, 2), (4,)]


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(Tensor(rng.standard_normal(s).astype(np.float32)), name=f"w{i}")
            for i, s in enumerate(SHAPES)]


def make_grads(steps, seed=1):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]


def run(opt_fn, steps, seed=0, params=None):
    """Runs `steps` updates; returns (initial values, final values, grads, optimizer)."""
    params = make_params(seed) if params is None else params
    init = [p.asnumpy().astype(np.float64) for p in params]
    opt = opt_fn(params)
    grads = make_grads(steps)
    for gs in grads:
        assert opt(tuple(Tensor(g) for g in gs)) is True
    return init, [p.asnumpy() for p in params], grads, opt


def check(opt_fn, ref_fn, steps, rtol=2e-5, atol=1e-6):
    init, got, grads, opt = run(opt_fn, steps)
    want = ref_fn(init, [[g.astype(np.float64) for g in gs] for gs in grads])
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    assert opt.global_step.asnumpy().tolist() == [steps]
    return opt


# ---- numpy references: each walks the steps with its own state ----

def ref_sgd(lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        vs = [None] * len(ps)
        for gs in grads:
            for i, g in enumerate(gs):
                g = g + wd * ps[i]
                if momentum == 0.0:
                    ps[i] -= lr * g
                    continue
                vs[i] = g if vs[i] is None else momentum * vs[i] + (1 - dampening) * g
                ps[i] -= lr * (g + momentum * vs[i] if nesterov else vs[i])
        return ps
    return f


def ref_momentum(lr, momentum, wd=0.0, nesterov=False):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        vs = [np.zeros_like(p) for p in ps]
        for gs in grads:
            for i, g in enumerate(gs):
                g = g + wd * ps[i]
                vs[i] = momentum * vs[i] + g
                ps[i] -= lr * (g + momentum * vs[i]) if nesterov else lr * vs[i]
        return ps
    return f


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, nesterov=False, amsgrad=False):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        m = [np.zeros_like(p) for p in ps]
        v = [np.zeros_like(p) for p in ps]
        vmax = [np.zeros_like(p) for p in ps]
        for t, gs in enumerate(grads, start=1):
            lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            for i, g in enumerate(gs):
                g = g + wd * ps[i]
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                vmax[i] = np.maximum(vmax[i], v[i])
                num = b1 * m[i] + (1 - b1) * g if nesterov else m[i]
                den = np.sqrt(vmax[i] if amsgrad else v[i]) + eps
                ps[i] -= lr_t * num / den
        return ps
    return f


def ref_adam_weight_decay(lr, b1=0.9, b2=0.999, eps=1e-6, wd=0.0):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        m = [np.zeros_like(p) for p in ps]
        v = [np.zeros_like(p) for p in ps]
        for gs in grads:
            for i, g in enumerate(gs):
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                ps[i] -= lr * (m[i] / (np.sqrt(v[i]) + eps) + wd * ps[i])
        return ps
    return f


def ref_adamw(lr, b1=0.9, b2=0.999, eps=1e-8, wd=1e-2):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        m = [np.zeros_like(p) for p in ps]
        v = [np.zeros_like(p) for p in ps]
        for t, gs in enumerate(grads, start=1):
            for i, g in enumerate(gs):
                ps[i] *= 1 - lr * wd
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                mhat, vhat = m[i] / (1 - b1 ** t), v[i] / (1 - b2 ** t)
                ps[i] -= lr * mhat / (np.sqrt(vhat) + eps)
        return ps
    return f


def ref_rmsprop(lr, decay=0.9, momentum=0.0, eps=1e-10, centered=False, wd=0.0):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        s = [np.ones_like(p) for p in ps]
        gm = [np.zeros_like(p) for p in ps]
        mom = [np.zeros_like(p) for p in ps]
        for gs in grads:
            for i, g in enumerate(gs):
                g = g + wd * ps[i]
                s[i] = decay * s[i] + (1 - decay) * g * g
                gm[i] = decay * gm[i] + (1 - decay) * g
                den = s[i] - gm[i] ** 2 + eps if centered else s[i] + eps
                mom[i] = momentum * mom[i] + lr * g / np.sqrt(den)
                ps[i] -= mom[i]
        return ps
    return f


def ref_adagrad(lr, accum=0.1, update_slots=True, wd=0.0):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        h = [np.full_like(p, accum) for p in ps]
        for gs in grads:
            for i, g in enumerate(gs):
                g = g + wd * ps[i]
                if update_slots:
                    h[i] = h[i] + g * g
                ps[i] -= lr * g / np.sqrt(h[i])
        return ps
    return f


def ref_lamb(lr, b1=0.9, b2=0.999, eps=1e-6, wd=0.0):
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        m = [np.zeros_like(p) for p in ps]
        v = [np.zeros_like(p) for p in ps]
        for t, gs in enumerate(grads, start=1):
            for i, g in enumerate(gs):
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                r = (m[i] / (1 - b1 ** t)) / (np.sqrt(v[i] / (1 - b2 ** t)) + eps) + wd * ps[i]
                wn, rn = np.linalg.norm(ps[i]), np.linalg.norm(r)
                ratio = wn / rn if wn > 0 and rn > 0 else 1.0
                ps[i] -= lr * ratio * r
        return ps
    return f


CASES = {
    "sgd": (lambda p: nn.SGD(p, 0.1), ref_sgd(0.1)),
    "sgd_momentum_wd": (lambda p: nn.SGD(p, 0.1, momentum=0.9, dampening=0.2, weight_decay=0.01),
                        ref_sgd(0.1, 0.9, 0.2, 0.01)),
    "sgd_nesterov": (lambda p: nn.SGD(p, 0.05, momentum=0.8, nesterov=True), ref_sgd(0.05, 0.8, nesterov=True)),
    "momentum": (lambda p: nn.Momentum(p, 0.1, 0.9), ref_momentum(0.1, 0.9)),
    "momentum_wd_nesterov": (lambda p: nn.Momentum(p, 0.1, 0.9, weight_decay=0.05, use_nesterov=True),
                             ref_momentum(0.1, 0.9, 0.05, True)),
    "adam": (lambda p: nn.Adam(p, 0.01), ref_adam(0.01)),
    "adam_wd_nesterov": (lambda p: nn.Adam(p, 0.01, beta1=0.8, beta2=0.99, weight_decay=0.1, use_nesterov=True),
                         ref_adam(0.01, 0.8, 0.99, wd=0.1, nesterov=True)),
    "adam_amsgrad": (lambda p: nn.Adam(p, 0.01, use_amsgrad=True), ref_adam(0.01, amsgrad=True)),
    "adam_weight_decay": (lambda p: nn.AdamWeightDecay(p, 0.01, weight_decay=0.1), ref_adam_weight_decay(0.01, wd=0.1)),
    "adam_weight_decay_nowd": (lambda p: nn.AdamWeightDecay(p, 0.01), ref_adam_weight_decay(0.01)),
    "adamw": (lambda p: nn.AdamW(p, 0.01, weight_decay=0.1), ref_adamw(0.01, wd=0.1)),
    "rmsprop": (lambda p: nn.RMSProp(p, 0.01), ref_rmsprop(0.01)),
    "rmsprop_centered_momentum_wd": (
        lambda p: nn.RMSProp(p, 0.01, decay=0.8, momentum=0.5, epsilon=1e-6, centered=True, weight_decay=0.1),
        ref_rmsprop(0.01, 0.8, 0.5, 1e-6, centered=True, wd=0.1)),
    "adagrad": (lambda p: nn.Adagrad(p, learning_rate=0.1), ref_adagrad(0.1)),
    "adagrad_wd_noslots": (lambda p: nn.Adagrad(p, accum=0.5, learning_rate=0.1, update_slots=False,
                                                weight_decay=0.1), ref_adagrad(0.1, 0.5, False, 0.1)),
    "lamb": (lambda p: nn.Lamb(p, 0.01), ref_lamb(0.01)),
    "lamb_wd": (lambda p: nn.Lamb(p, 0.01, beta1=0.8, weight_decay=0.1), ref_lamb(0.01, 0.8, wd=0.1)),
}


@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_update_matches_numpy(name, steps):
    opt_fn, ref = CASES[name]
    check(opt_fn, ref, steps)


def test_loss_scale_divides_gradients():
    check(lambda p: nn.Momentum(p, 0.1, 0.9, loss_scale=8.0),
          lambda ps, gs: ref_momentum(0.1, 0.9)(ps, [[g / 8.0 for g in s] for s in gs]), 3)


def test_adam_bias_correction_first_step_is_lr_times_sign():
    # With bias correction the first Adam step is lr * g / (|g| + eps'), i.e. about lr * sign(g).
    init, got, grads, _ = run(lambda p: nn.Adam(p, 0.01, eps=1e-12), 1)
    for p0, p1, g in zip(init, got, grads[0]):
        np.testing.assert_allclose(p1, p0 - 0.01 * np.sign(g), rtol=1e-4, atol=1e-6)


# ---- groups ----

def test_groups_with_own_lr_and_weight_decay():
    params = make_params()
    groups = [{"params": [params[0]], "lr": 0.05, "weight_decay": 0.1},
              {"params": [params[1]]},
              {"order_params": params}]
    init = [p.asnumpy().astype(np.float64) for p in params]
    opt = nn.Momentum(groups, learning_rate=0.2, momentum=0.9, weight_decay=0.0)
    grads = make_grads(3)
    for gs in grads:
        opt(tuple(Tensor(g) for g in gs))
    g64 = [[g.astype(np.float64) for g in gs] for gs in grads]
    w0 = ref_momentum(0.05, 0.9, wd=0.1)([init[0]], [[gs[0]] for gs in g64])[0]
    w1 = ref_momentum(0.2, 0.9)([init[1]], [[gs[1]] for gs in g64])[0]
    np.testing.assert_allclose(params[0].asnumpy(), w0, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(params[1].asnumpy(), w1, rtol=2e-5, atol=1e-6)
    lrs = opt.get_lr()  # a tuple with one lr per parameter when groups set lr
    assert len(lrs) == 2
    np.testing.assert_allclose([float(lrs[0].asnumpy()), float(lrs[1].asnumpy())], [0.05, 0.2], rtol=1e-6)


def test_groups_decoupled_weight_decay_adamw():
    params = make_params()
    groups = [{"params": [params[0]], "weight_decay": 0.0}, {"params": [params[1]], "weight_decay": 0.3}]
    init = [p.asnumpy().astype(np.float64) for p in params]
    opt = nn.AdamW(groups, learning_rate=0.01)
    grads = make_grads(2)
    for gs in grads:
        opt(tuple(Tensor(g) for g in gs))
    g64 = [[g.astype(np.float64) for g in gs] for gs in grads]
    w0 = ref_adamw(0.01, wd=0.0)([init[0]], [[gs[0]] for gs in g64])[0]
    w1 = ref_adamw(0.01, wd=0.3)([init[1]], [[gs[1]] for gs in g64])[0]
    np.testing.assert_allclose(params[0].asnumpy(), w0, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(params[1].asnumpy(), w1, rtol=2e-5, atol=1e-6)


# ---- dynamic learning rates ----

def sgd_with_lrs(lrs_per_step):
    """Plain SGD reference where step k uses lrs_per_step[k]."""
    def f(ps, grads):
        ps = [p.copy() for p in ps]
        for k, gs in enumerate(grads):
            for i, g in enumerate(gs):
                ps[i] -= lrs_per_step[k] * g
        return ps
    return f


def test_dynamic_lr_list_indexed_by_global_step_and_held_at_the_end():
    lrs = [0.1, 0.05, 0.01]
    check(lambda p: nn.SGD(p, lrs), sgd_with_lrs([0.1, 0.05, 0.01, 0.01, 0.01]), 5)


def test_dynamic_lr_tensor_and_get_lr():
    opt = nn.SGD(make_params(), Tensor(np.array([0.3, 0.2, 0.1], np.float32)))
    got = [float(opt.get_lr().asnumpy()) for _ in range(4)]  # get_lr advances global_step
    np.testing.assert_allclose(got, [0.3, 0.2, 0.1, 0.1], rtol=1e-6)
    assert opt.global_step.asnumpy().tolist() == [4]


def test_schedule_cell_as_learning_rate():
    sched = nn.ExponentialDecayLR(0.1, 0.5, 2)
    want = [0.1 * 0.5 ** (k / 2) for k in range(4)]
    check(lambda p: nn.SGD(p, sched), sgd_with_lrs(want), 4)


def test_group_with_schedule_and_list():
    params = make_params()
    sched = nn.WarmUpLR(0.2, 2)
    opt = nn.SGD([{"params": [params[0]], "lr": sched}, {"params": [params[1]], "lr": [0.3, 0.1]}])
    init = [p.asnumpy().astype(np.float64) for p in params]
    grads = make_grads(3)
    for gs in grads:
        opt(tuple(Tensor(g) for g in gs))
    lr0 = [0.2 * min(k, 2) / 2 for k in range(3)]
    lr1 = [0.3, 0.1, 0.1]
    w0 = init[0] - sum(lr0[k] * grads[k][0] for k in range(3))
    w1 = init[1] - sum(lr1[k] * grads[k][1] for k in range(3))
    np.testing.assert_allclose(params[0].asnumpy(), w0, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(params[1].asnumpy(), w1, rtol=2e-5, atol=1e-6)


# ---- state ----

def test_state_is_registered_for_checkpoints(tmp_path):
    params = make_params()
    opt = nn.Adam(params, 0.01)
    names = [n for n, _ in opt.parameters_and_names()]
    for want in ["global_step", "beta1_power", "beta2_power", "moment1.w0", "moment1.w1", "moment2.w0"]:
        assert want in names
    assert "w0" not in names  # the network's weights belong to the network, not the optimizer
    opt(tuple(Tensor(g) for g in make_grads(1)[0]))
    path = str(tmp_path / "opt.ckpt")
    mycel.save_checkpoint(opt, path)
    loaded = mycel.load_checkpoint(path)
    np.testing.assert_array_equal(loaded["moment1.w0"].asnumpy(), opt.moment1[0].asnumpy())
    assert loaded["global_step"].asnumpy().tolist() == [1]


def test_global_step_increments_every_step():
    opt = nn.Momentum(make_params(), 0.1, 0.9)
    for k in range(1, 4):
        opt(tuple(Tensor(g) for g in make_grads(1, seed=k)[0]))
        assert opt.global_step.asnumpy().tolist() == [k]
    assert str(opt.global_step.dtype) == "Int32" or "int32" in str(opt.global_step.dtype).lower()


# ---- clipping ----

@pytest.mark.parametrize("clip_norm", [0.5, 100.0])
def test_clip_by_global_norm(clip_norm):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), ()]]
    got = ops.clip_by_global_norm(tuple(Tensor(x) for x in xs), clip_norm)
    norm = math.sqrt(sum(float((x.astype(np.float64) ** 2).sum()) for x in xs))
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g.asnumpy(), x * clip_norm / max(norm, clip_norm), rtol=1e-5)
    assert isinstance(got, tuple) and len(got) == 3


def test_clip_by_global_norm_use_norm():
    xs = (Tensor(np.array([3.0, 4.0], np.float32)),)
    got = ops.clip_by_global_norm(xs, 1.0, use_norm=10.0)
    np.testing.assert_allclose(got[0].asnumpy(), [0.3, 0.4], rtol=1e-6)


def test_clip_by_global_norm_errors():
    with pytest.raises(TypeError, match="clip_by_global_norm.*'x'"):
        ops.clip_by_global_norm(Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="clip_by_global_norm.*'clip_norm'"):
        ops.clip_by_global_norm((Tensor(np.ones(2, np.float32)),), -1.0)


# ---- errors ----

@pytest.mark.parametrize("make,exc,pattern", [
    (lambda p: nn.SGD(p, "fast"), TypeError, r"SGD: argument 'learning_rate'"),
    (lambda p: nn.SGD(p, -0.1), ValueError, r"SGD: argument 'learning_rate' must be >= 0"),
    (lambda p: nn.Momentum(p, [], 0.9), TypeError, r"Momentum: argument 'learning_rate'"),
    (lambda p: nn.Adam(p, Tensor(np.ones((2, 2), np.float32))), ValueError, r"Adam: argument 'learning_rate'"),
    (lambda p: nn.Momentum(p, 0.1, -0.9), ValueError, r"Momentum: argument 'momentum'"),
    (lambda p: nn.SGD(p, 0.1, nesterov=True), ValueError, r"SGD: nesterov=True needs momentum > 0"),
    (lambda p: nn.Adam(p, 0.1, beta1=1.0), ValueError, r"Adam: argument 'beta1'"),
    (lambda p: nn.Adam(p, 0.1, eps=0.0), ValueError, r"Adam: argument 'eps'"),
    (lambda p: nn.RMSProp(p, 0.1, centered=1), TypeError, r"RMSProp: argument 'centered'"),
    (lambda p: nn.Adagrad(p, weight_decay=-1.0), ValueError, r"Adagrad: argument 'weight_decay'"),
    (lambda p: nn.Lamb(p, 0.1, weight_decay="x"), TypeError, r"Lamb: argument 'weight_decay'"),
    (lambda p: nn.Momentum(p, 0.1, 0.9, loss_scale=0.0), ValueError, r"Momentum: argument 'loss_scale'"),
    (lambda p: nn.Momentum([{"params": [p[0]], "lr": "x"}], 0.1, 0.9), TypeError,
     r"Momentum: argument 'params\[0\]\['lr'\]'"),
    (lambda p: nn.Momentum([{"lr": 0.1}], 0.1, 0.9), ValueError, r"Momentum: group 0 must have the key 'params'"),
    (lambda p: nn.Momentum([{"params": [p[0]], "momentum": 1}], 0.1, 0.9), ValueError, r"unknown keys \['momentum'\]"),
])
def test_bad_hyper_parameters(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make(make_params())


@pytest.mark.parametrize("params,exc,pattern", [
    (None, TypeError, r"SGD: argument 'params'"),
    ([], ValueError, r"SGD: argument 'params' must not be empty"),
    ([Tensor(np.ones(2, np.float32))], TypeError, r"SGD: argument 'params' item 0 must be a Parameter"),
    ("w", TypeError, r"SGD: argument 'params'"),
])
def test_bad_params(params, exc, pattern):
    with pytest.raises(exc, match=pattern):
        nn.SGD(params, 0.1)


def test_duplicate_and_integer_params():
    p = make_params()
    with pytest.raises(ValueError, match="SGD: Parameter 'w0' appears more than once"):
        nn.SGD([p[0], p[0]], 0.1)
    ip = Parameter(Tensor(np.ones(2, np.int32)), name="count")
    with pytest.raises(TypeError, match="SGD: Parameter 'count' must be floating point"):
        nn.SGD([ip], 0.1)


def test_wrong_gradients():
    opt = nn.Adam(make_params(), 0.1)
    grads = tuple(Tensor(g) for g in make_grads(1)[0])
    with pytest.raises(ValueError, match=r"Adam: argument 'gradients' must have one gradient per parameter \(2\), got 1"):
        opt(grads[:1])
    with pytest.raises(TypeError, match="Adam: argument 'gradients' must be a tuple"):
        opt(grads[0])
    with pytest.raises(ValueError, match=r"Adam: gradients\[1\] must have the shape \(4,\)"):
        opt((grads[0], grads[0]))
    assert opt.global_step.asnumpy().tolist() == [0]  # nothing was applied


# ---- end to end ----

class _Regression(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 1)

    def construct(self, x, y):
        return ops.mean((self.fc(x) - y) ** 2)


TRAINERS = {
    "SGD": lambda p: nn.SGD(p, 0.1, momentum=0.9),
    "Momentum": lambda p: nn.Momentum(p, 0.05, 0.9),
    "Adam": lambda p: nn.Adam(p, 0.1),
    "AdamWeightDecay": lambda p: nn.AdamWeightDecay(p, 0.1, weight_decay=1e-4),
    "AdamW": lambda p: nn.AdamW(p, 0.1, weight_decay=1e-4),
    "RMSProp": lambda p: nn.RMSProp(p, 0.05, momentum=0.5),
    "Adagrad": lambda p: nn.Adagrad(p, learning_rate=0.5),
    "Lamb": lambda p: nn.Lamb(p, 0.1),
    "SGD+cosine": lambda p: nn.SGD(p, nn.CosineDecayLR(0.01, 0.1, 50), momentum=0.9),
}


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_linear_regression_trains(name):
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    mycel.set_seed(1)  # the initial weights must not depend on which tests ran before
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    net = _Regression()
    opt = TRAINERS[name](net.trainable_params())
    step = mycel.value_and_grad(net, None, opt.parameters)
    xt, yt = Tensor(x), Tensor(y)
    first = None
    for _ in range(50):
        loss, grads = step(xt, yt)
        first = float(loss.asnumpy()) if first is None else first
        opt(grads)
    last = float(net(xt, yt).asnumpy())
    assert last < first / 20, (first, last)
    assert opt.global_step.asnumpy().tolist() == [50]
