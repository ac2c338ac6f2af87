"""Adversarial training: one defense() step equals a plain training step on the batch with the
chosen samples replaced by the attack's examples (same np.random draw, attack run on a copy)."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.armour import (AdversarialDefense, AdversarialDefenseWithAttacks, FastGradientSignMethod,
                          NaturalAdversarialDefense, ProjectedAdversarialDefense)


def net_and_copy():
    mycel.set_seed(5)
    a = nn.SequentialCell([nn.Dense(6, 8), nn.Tanh(), nn.Dense(8, 3)])
    b = nn.SequentialCell([nn.Dense(6, 8), nn.Tanh(), nn.Dense(8, 3)])
    for p, q in zip(a.trainable_params(), b.trainable_params()):
        q.set_data(Tensor(p.asnumpy().copy()))
    return a, b


def plain_step(net, x, y, lr):
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, ce), nn.SGD(net.trainable_params(), lr))
    return step(Tensor(x), Tensor(y)).asnumpy()


@pytest.fixture
def batch():
    rng = np.random.default_rng(5)
    return rng.uniform(0, 1, (10, 6)).astype(np.float32), rng.integers(0, 3, 10).astype(np.int32)


def test_plain_defense_is_a_training_step(batch):
    x, y = batch
    a, b = net_and_copy()
    loss = AdversarialDefense(a, optimizer=nn.SGD(a.trainable_params(), 0.1)).defense(x, y)
    want = plain_step(b, x, y, 0.1)
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    for p, q in zip(a.trainable_params(), b.trainable_params()):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-6)


def test_defense_with_attacks_trains_on_the_replaced_batch(batch):
    x, y = batch
    a, b = net_and_copy()
    np.random.seed(7)
    d = AdversarialDefenseWithAttacks(a, [FastGradientSignMethod(a, eps=0.2)], optimizer=nn.SGD(a.trainable_params(), 0.1),
                                      replace_ratio=0.4)
    d.defense(x, y)
    np.random.seed(7)
    ids = np.random.choice(10, size=4, replace=False)
    mixed = x.copy()
    mixed[ids] = FastGradientSignMethod(b, eps=0.2).generate(x[ids], y[ids])
    assert not np.allclose(mixed, x)
    plain_step(b, mixed, y, 0.1)
    for p, q in zip(a.trainable_params(), b.trainable_params()):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-7)


def test_named_defenses_and_errors(batch):
    x, y = batch
    a, _ = net_and_copy()
    assert np.isfinite(NaturalAdversarialDefense(a).defense(x, y))
    assert np.isfinite(ProjectedAdversarialDefense(a, nb_iter=2).batch_defense(x, y, batch_size=5, epochs=1))
    with pytest.raises(ValueError, match="replace_ratio must be <= 1"):
        AdversarialDefenseWithAttacks(a, [FastGradientSignMethod(a)], replace_ratio=1.5)
    with pytest.raises(TypeError, match="attacks must be a non-empty list"):
        AdversarialDefenseWithAttacks(a, [])
    with pytest.raises(ValueError, match="one entry per input"):
        AdversarialDefense(a).defense(x, y[:3])
