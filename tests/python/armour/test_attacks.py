"""White-box attacks against closed forms: on a linear softmax classifier the input gradient of
the summed cross entropy is W^T (softmax(Wx + b) - onehot), so FGSM/FGM are known exactly;
DeepFool's minimal perturbation to the nearest linear boundary is |f_k - f_y| / ||w_k - w_y||.
A small tanh network checks the gradient against central finite differences."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.armour import (BasicIterativeMethod, CarliniWagnerL2Attack, DeepFool, FastGradientMethod,
                          FastGradientSignMethod, LeastLikelyClassMethod, MomentumIterativeMethod,
                          ProjectedGradientDescent, RandomFastGradientSignMethod)

D, K, N = 6, 4, 8


def linear_net(seed=0):
    rng = np.random.default_rng(seed)
    net = nn.Dense(D, K)
    w = rng.standard_normal((K, D)).astype(np.float32)
    b = rng.standard_normal(K).astype(np.float32) * 0.1
    net.weight.set_data(Tensor(w))
    net.bias.set_data(Tensor(b))
    return net, w.astype(np.float64), b.astype(np.float64)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def closed_grad(w, b, x, y):
    p = softmax(x.astype(np.float64) @ w.T + b)
    return (p - np.eye(K)[y]) @ w


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    return rng.uniform(0.2, 0.8, (N, D)).astype(np.float32), rng.integers(0, K, N).astype(np.int32)


def test_fgsm_is_eps_sign_grad_exactly(data):
    x, y = data
    net, w, b = linear_net()
    eps = 0.05
    adv = FastGradientSignMethod(net, eps=eps, bounds=(0.0, 1.0)).generate(x, y)
    want = x + np.float32(eps) * np.sign(closed_grad(w, b, x, y)).astype(np.float32)
    np.testing.assert_array_equal(adv, np.clip(want, 0, 1))
    # one-hot labels give the same result; targeted steps the other way
    np.testing.assert_array_equal(FastGradientSignMethod(net, eps=eps).generate(x, np.eye(K, dtype=np.float32)[y]), adv)
    tgt = FastGradientSignMethod(net, eps=eps, is_targeted=True).generate(x, y)
    np.testing.assert_array_equal(tgt, np.clip(x - np.float32(eps) * np.sign(closed_grad(w, b, x, y)).astype(np.float32), 0, 1))


@pytest.mark.parametrize("norm", [1, 2])
def test_fgm_normalized_step(data, norm):
    x, y = data
    net, w, b = linear_net()
    g = closed_grad(w, b, x, y)
    g = g / np.linalg.norm(g, ord=norm, axis=1, keepdims=True)
    adv = FastGradientMethod(net, eps=0.1, norm_level=norm, bounds=(-10.0, 10.0)).generate(x, y)
    # eps is a fraction of the bounds' range (20 here), as in MindArmour
    np.testing.assert_allclose(adv, x + 0.1 * 20 * g, rtol=1e-5, atol=1e-5)


def test_gradient_matches_finite_differences():
    mycel.set_seed(3)
    net = nn.SequentialCell([nn.Dense(D, 5), nn.Tanh(), nn.Dense(5, K)])
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (3, D)).astype(np.float32)
    y = np.array([0, 2, 3], np.int32)
    attack = FastGradientMethod(net, eps=0.1, norm_level=2, bounds=None)
    onehot = np.eye(K, dtype=np.float32)[y]
    g = attack._loss_grad(x, onehot)

    def loss(xx):
        z = net(Tensor(xx.astype(np.float32))).asnumpy().astype(np.float64)
        return -(np.log(softmax(z)) * onehot).sum()
    h, fd = 1e-2, np.zeros_like(x, dtype=np.float64)
    for i in range(x.shape[0]):
        for j in range(D):
            e = np.zeros_like(x)
            e[i, j] = h
            fd[i, j] = (loss(x + e) - loss(x - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=2e-3)


def test_least_likely_targets_the_argmin_class(data):
    x, y = data
    net, w, b = linear_net()
    ll = (x.astype(np.float64) @ w.T + b).argmin(axis=1)
    adv = LeastLikelyClassMethod(net, eps=0.05).generate(x, y)
    np.testing.assert_array_equal(adv, np.clip(x - np.float32(0.05) * np.sign(closed_grad(w, b, x, ll)).astype(np.float32), 0, 1))


def test_random_fgsm_stays_in_eps_ball(data):
    x, y = data
    net, _, _ = linear_net()
    np.random.seed(0)
    adv = RandomFastGradientSignMethod(net, eps=0.1, alpha=0.04).generate(x, y)
    assert np.abs(adv - x).max() <= 0.1 + 1e-6
    assert not np.allclose(adv, x)


@pytest.mark.parametrize("cls,kw", [(ProjectedGradientDescent, {"norm_level": "inf"}),
                                    (ProjectedGradientDescent, {"norm_level": 2}),
                                    (BasicIterativeMethod, {}),
                                    (MomentumIterativeMethod, {"norm_level": 2}),
                                    (MomentumIterativeMethod, {})])
def test_iterative_attacks_stay_inside_the_ball_and_raise_the_loss(data, cls, kw):
    x, y = data
    net, w, b = linear_net()
    eps = 0.1
    adv = cls(net, eps=eps, eps_iter=0.04, nb_iter=6, **kw).generate(x, y)
    d = (adv - x).reshape(N, -1).astype(np.float64)
    norm = np.abs(d).max(axis=1) if kw.get("norm_level", "inf") == "inf" else np.sqrt((d * d).sum(axis=1))
    assert (norm <= eps + 1e-6).all(), norm
    assert adv.min() >= 0 and adv.max() <= 1

    def ce(z):
        return -np.log(softmax(z.astype(np.float64) @ w.T + b)[np.arange(N), y])
    assert (ce(adv) > ce(x)).all()


def test_pgd_linf_reaches_the_ball_corner_on_a_linear_model(data):
    """For a linear model the sign of the input gradient is fixed per sample while the label's
    logit stays lowest... so enough steps end at x + eps * sign(grad) (unless the sign flips)."""
    x, y = data
    net, w, b = linear_net()
    adv = ProjectedGradientDescent(net, eps=0.02, eps_iter=0.02, nb_iter=1).generate(x, y)
    np.testing.assert_array_equal(adv, FastGradientSignMethod(net, eps=0.02).generate(x, y))


def test_deepfool_finds_the_closed_form_minimal_perturbation(data):
    x, _ = data
    net, w, b = linear_net()
    z = x.astype(np.float64) @ w.T + b
    y = z.argmax(axis=1)
    overshoot = 0.02
    adv = DeepFool(net, num_classes=K, overshoot=overshoot).generate(x, y.astype(np.int32))
    idx = np.arange(N)
    want = np.empty_like(x, dtype=np.float64)
    for i in idx:  # the reference: distance to each facet of the linear region of class y
        dw = w - w[y[i]]
        df = z[i] - z[i, y[i]]
        dist = np.where(np.arange(K) == y[i], np.inf, (np.abs(df) + 1e-4) / np.linalg.norm(dw, axis=1).clip(1e-30))
        k = dist.argmin()
        want[i] = x[i] + (1 + overshoot) * (np.abs(df[k]) + 1e-4) / (dw[k] @ dw[k]) * dw[k]
    np.testing.assert_allclose(adv, want, rtol=1e-4, atol=1e-5)
    assert ((adv.astype(np.float64) @ w.T + b).argmax(axis=1) != y).all()


def test_carlini_wagner_finds_small_successful_examples(data):
    x, _ = data
    net, w, b = linear_net()
    y = (x.astype(np.float64) @ w.T + b).argmax(axis=1).astype(np.int32)
    adv = CarliniWagnerL2Attack(net, num_classes=K, bin_search_steps=4, max_iterations=60, learning_rate=0.05,
                                initial_const=1.0).generate(x, y)
    pred = (adv.astype(np.float64) @ w.T + b).argmax(axis=1)
    hit = pred != y
    assert hit.mean() >= 0.75
    # no successful CW example can be closer than the closed-form minimal (unboxed) distance
    z = x.astype(np.float64) @ w.T + b
    for i in np.nonzero(hit)[0]:
        dw = w - w[y[i]]
        dist = min(abs(z[i, k] - z[i, y[i]]) / np.linalg.norm(dw[k]) for k in range(K) if k != y[i])
        got = np.linalg.norm(adv[i] - x[i])
        assert dist - 1e-4 <= got <= 3 * dist + 1e-3, (got, dist)


def test_bad_arguments_are_named(data):
    x, y = data
    net, _, _ = linear_net()
    with pytest.raises(ValueError, match="eps must be >= 0"):
        FastGradientSignMethod(net, eps=-0.1)
    with pytest.raises(ValueError, match="norm_level must be one of"):
        ProjectedGradientDescent(net, norm_level=3)
    with pytest.raises(ValueError, match="bounds must have min < max"):
        FastGradientMethod(net, bounds=(1.0, 0.0))
    with pytest.raises(ValueError, match="alpha must be <= eps"):
        FastGradientMethod(net, eps=0.1, alpha=0.2)
    with pytest.raises(TypeError, match="network must be a Cell"):
        FastGradientMethod(lambda t: t)
    with pytest.raises(ValueError, match="one entry per input"):
        FastGradientSignMethod(net).generate(x, y[:3])
    with pytest.raises(ValueError, match=r"must lie in \[0, 4\)"):
        FastGradientSignMethod(net).generate(x, y + 10)
    with pytest.raises(ValueError, match="one-hot labels must have shape"):
        FastGradientSignMethod(net).generate(x, np.zeros((N, K + 1), np.float32))
    with pytest.raises(ValueError, match="nb_iter must be >= 1"):
        BasicIterativeMethod(net, nb_iter=0)
    with pytest.raises(ValueError, match="num_classes is 3"):
        DeepFool(net, num_classes=3).generate(x, y)
    with pytest.raises(ValueError, match="inputs must lie in"):
        CarliniWagnerL2Attack(net, num_classes=K).generate(x + 2, y)


def test_fgsm_and_deepfool_in_graph_mode(data):
    from mycel import context
    old = context.get_context("mode")
    context.set_context(mode=context.GRAPH_MODE)
    try:
        x, _ = data
        net, w, b = linear_net()
        y = (x.astype(np.float64) @ w.T + b).argmax(axis=1).astype(np.int32)
        adv = FastGradientSignMethod(net, eps=0.05).generate(x, y)
        np.testing.assert_array_equal(adv, np.clip(x + np.float32(0.05) * np.sign(closed_grad(w, b, x, y)).astype(np.float32), 0, 1))
        adv = DeepFool(net, num_classes=K).generate(x, y)
        assert ((adv.astype(np.float64) @ w.T + b).argmax(axis=1) != y).all()
    finally:
        context.set_context(mode=old)


def test_jsma_first_pair_is_the_brute_force_saliency_argmax():
    """On a linear model the Jacobian is W for every input: the first pair JSMA moves is the
    argmax over all pairs of (w_t,p + w_t,q) * |sum_other,p + sum_other,q| among the pairs with the
    right signs; further iterations keep raising the target's margin."""
    from mycel.armour import JSMAAttack
    d, k, n = 20, 3, 6
    rng = np.random.default_rng(6)
    net = nn.Dense(d, k)
    w = rng.standard_normal((k, d)).astype(np.float32)
    net.weight.set_data(Tensor(w))
    net.bias.set_data(Tensor(np.zeros(k, np.float32)))
    w = w.astype(np.float64)
    x = rng.uniform(0, 0.5, (n, d)).astype(np.float32)
    z = x.astype(np.float64) @ w.T
    target = z.argmin(axis=1).astype(np.int32)
    one = JSMAAttack(net, num_classes=k, theta=0.2, max_iteration=1, max_distortion=1.0).generate(x, target)
    other = w.sum(axis=0) - w[target]
    moved = 0
    for i in range(n):
        best, pair = -1.0, None
        for p in range(d):
            for q in range(d):
                a, bb = w[target[i], p] + w[target[i], q], other[i, p] + other[i, q]
                if p != q and a > 0 and bb < 0 and a * -bb > best:
                    best, pair = a * -bb, (p, q)
        want = x[i].copy()
        if pair is not None:
            want[list(pair)] = np.minimum(want[list(pair)] + 0.2, 1.0)
            moved += 1
        np.testing.assert_allclose(one[i], want, rtol=0, atol=1e-7)
    assert moved == n
    full = JSMAAttack(net, num_classes=k, theta=1.0, max_iteration=50, max_distortion=0.5).generate(x, target)
    zf = full.astype(np.float64) @ w.T
    hit = zf.argmax(axis=1) == target
    assert hit.mean() >= 0.5
    assert ((full != x).sum(axis=1) <= 0.5 * d + 2).all()  # stops once max_distortion is passed
    with pytest.raises(ValueError, match="theta must be <= 1"):
        JSMAAttack(net, num_classes=k, theta=2.0)


def test_salt_and_pepper_black_box(data):
    from mycel.armour import BlackModel, SaltAndPepperNoiseAttack
    x, _ = data
    _, w, b = linear_net()

    class Linear(BlackModel):
        def __init__(self):
            self.calls = 0

        def predict(self, inputs):
            self.calls += 1
            return np.asarray(inputs, np.float64).reshape(len(inputs), -1) @ w.T + b
    model = Linear()
    y = model.predict(x).argmax(axis=1)
    np.random.seed(0)
    is_adv, adv, queries = SaltAndPepperNoiseAttack(model, max_iter=20).generate(x, y)
    np.testing.assert_array_equal(is_adv, model.predict(adv).argmax(axis=1) != y)
    assert is_adv.mean() >= 0.5
    changed = adv != x
    assert np.isin(adv[changed], [0.0, 1.0]).all()            # only salt and pepper
    np.testing.assert_array_equal(adv[~is_adv], x[~is_adv])  # failures come back unchanged
    assert (queries >= 1).all() and (queries <= 20).all()

    class Constant(BlackModel):
        def predict(self, inputs):
            return np.tile([1.0, 0.0, 0.0, 0.0], (len(inputs), 1))
    is_adv, adv, queries = SaltAndPepperNoiseAttack(Constant(), max_iter=5).generate(x, np.zeros(N, np.int32))
    assert not is_adv.any() and (queries == 5).all()
    with pytest.raises(TypeError, match="model must be a BlackModel"):
        SaltAndPepperNoiseAttack(lambda t: t)
