"""DP-SGD: DPModel's compiled step (vmap of grad over micro-batches, clipping, noise) against a
Python loop of per-sample / per-micro-batch gradients in numpy; the noise's scale against
norm_bound * multiplier / micro_batches, AdaGaussian's decay against its schedule; the DP
optimizers; a Model.train run with an RDPMonitor callback."""
import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import Tensor, context, nn, ops
from mycel.armour.privacy.diff_privacy import (ClipMechanismsFactory, DPModel, DPOptimizerClassFactory,
                                               NoiseMechanismsFactory, RDPMonitor)
from mycel.armour.privacy.diff_privacy.monitor.monitor import noise_multipliers


@pytest.fixture(autouse=True)
def graph_mode():
    old = context.get_context("mode")
    context.set_context(mode=context.GRAPH_MODE)
    yield
    context.set_context(mode=old)


def small_net(din=5, dout=3):
    return nn.SequentialCell([nn.Dense(din, 8), nn.ReLU(), nn.Dense(8, dout)])


def loop_reference(net, ce, x, y, micro, bound, lr):
    """The clipped, averaged update from a Python loop over the micro-batches."""
    def group_loss(a, b):
        return ce(net(a), b)
    grad_fn = ops.grad(group_loss, None, net.trainable_params())
    size = len(x) // micro
    per = [[g.asnumpy().astype(np.float64) for g in grad_fn(Tensor(x[i * size:(i + 1) * size]),
                                                             Tensor(y[i * size:(i + 1) * size]))]
           for i in range(micro)]
    norms = np.array([np.sqrt(sum((g ** 2).sum() for g in gs)) for gs in per])
    scales = np.minimum(1.0, bound / norms)
    before = [p.asnumpy().astype(np.float64) for p in net.trainable_params()]
    return [w - lr * sum(per[i][k] * scales[i] for i in range(micro)) / micro for k, w in enumerate(before)], norms


@pytest.mark.parametrize("micro", [8, 2], ids=["per-sample", "micro-batches"])
@pytest.mark.parametrize("mode", [context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_clipping_matches_the_loop(micro, mode):
    context.set_context(mode=mode)
    mycel.set_seed(0)
    net = small_net()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5)).astype(np.float32) * 2
    y = rng.integers(0, 3, 8).astype(np.int32)
    lr = 0.1
    _, norms = loop_reference(net, ce, x, y, micro, 1.0, lr)
    bound = float(np.median(norms))  # groups on both sides: some clipped, some left as they are
    want, _ = loop_reference(net, ce, x, y, micro, bound, lr)
    assert (norms > bound).any() and (norms < bound).any()
    model = DPModel(micro_batches=micro, norm_bound=bound, noise_mech=None, network=net, loss_fn=ce,
                    optimizer=nn.SGD(net.trainable_params(), learning_rate=lr))
    model.train_network(Tensor(x), Tensor(y))
    for p, w in zip(net.trainable_params(), want):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-4, atol=1e-6, err_msg=p.name)


def _noise_of(model_maker, net, x, y):
    """The update minus the noiseless update: lr * noise / micro_batches, for every weight."""
    snap = [p.asnumpy().copy() for p in net.trainable_params()]
    model_maker(None).train_network(Tensor(x), Tensor(y))
    clean = [p.asnumpy().copy() for p in net.trainable_params()]
    for p, s in zip(net.trainable_params(), snap):
        p.set_data(Tensor(s))
    noisy_model = model_maker(True)
    noisy_model.train_network(Tensor(x), Tensor(y))
    return np.concatenate([(p.asnumpy() - c).ravel() for p, c in zip(net.trainable_params(), clean)]), noisy_model


@pytest.mark.parametrize("via", ["noise_mech", "dp_optimizer"])
def test_gaussian_noise_has_the_stated_scale(via):
    mycel.set_seed(1)
    net = nn.Dense(40, 30)
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 40)).astype(np.float32)
    y = rng.integers(0, 30, 4).astype(np.int32)
    lr, bound, sigma, micro = 0.5, 0.7, 1.3, 4

    def make(noisy):
        if not noisy:
            return DPModel(micro, bound, None, network=net, loss_fn=ce, optimizer=nn.SGD(net.trainable_params(), lr))
        if via == "noise_mech":
            mech = NoiseMechanismsFactory.create("Gaussian", norm_bound=bound, initial_noise_multiplier=sigma)
            return DPModel(micro, bound, mech, network=net, loss_fn=ce, optimizer=nn.SGD(net.trainable_params(), lr))
        factory = DPOptimizerClassFactory(micro_batches=micro)
        factory.set_mechanisms("Gaussian", norm_bound=bound, initial_noise_multiplier=sigma)
        opt = factory.create("SGD")(net.trainable_params(), learning_rate=lr)
        return DPModel(micro, bound, network=net, loss_fn=ce, optimizer=opt)
    noise, _ = _noise_of(make, net, x, y)
    # -lr * N(0, (C sigma)^2) / micro per entry; ~1500 entries: the sample std within 7 %
    assert noise.size > 1000
    np.testing.assert_allclose(noise.std(), lr * bound * sigma / micro, rtol=0.07)
    assert abs(noise.mean()) < 4 * lr * bound * sigma / micro / np.sqrt(noise.size)


def test_ada_gaussian_decays_on_the_monitor_schedule():
    mycel.set_seed(2)
    mech = NoiseMechanismsFactory.create("AdaGaussian", norm_bound=2.0, initial_noise_multiplier=1.5,
                                         noise_decay_rate=0.3, decay_policy="Time")

    class Draw(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mech = mech

        def construct(self, g):
            return self.mech((g,))[0]
    draw = Draw()
    zeros = Tensor(np.zeros((200, 100), np.float32))
    want = 2.0 * noise_multipliers(1.5, "Time", 0.3, 0, 4)
    got = [draw(zeros).asnumpy().std() for _ in range(4)]
    np.testing.assert_allclose(got, want, rtol=0.03)
    assert float(mech.step.asnumpy()) == 4.0


def test_dp_model_trains_with_a_monitor():
    mycel.set_seed(3)
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((3, 5)).astype(np.float32) * 3
    y = rng.integers(0, 3, 240).astype(np.int32)
    x = (centers[y] + rng.standard_normal((240, 5))).astype(np.float32)
    net = small_net()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    mech = NoiseMechanismsFactory.create("Gaussian", norm_bound=1.0, initial_noise_multiplier=1.0)
    model = DPModel(micro_batches=16, norm_bound=1.0, noise_mech=mech, network=net, loss_fn=ce,
                    optimizer=nn.Momentum(net.trainable_params(), 0.1, 0.9), metrics={"acc"})
    monitor = RDPMonitor(240, 16, initial_noise_multiplier=1.0, max_eps=50.0, target_delta=1e-5,
                         noise_decay_mode=None)
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=True).batch(16, drop_remainder=True)
    model.train(3, data, callbacks=[monitor], dataset_sink_mode=False)
    assert [h[0] for h in monitor.history] == [1, 2, 3]
    eps = [h[1] for h in monitor.history]
    assert 0 < eps[0] < eps[1] < eps[2]
    acc = model.eval(ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(16))["acc"]
    assert acc > 0.8


def test_dp_model_errors():
    net = small_net()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.1)
    with pytest.raises(ValueError, match="norm_bound must be > 0"):
        DPModel(2, -1.0, None, network=net, loss_fn=ce, optimizer=opt)
    with pytest.raises(ValueError, match="micro_batches must be >= 1"):
        DPModel(0, 1.0, None, network=net, loss_fn=ce, optimizer=opt)
    with pytest.raises(ValueError, match="mech_name must be"):
        NoiseMechanismsFactory.create("Laplace")
    with pytest.raises(ValueError, match="initial_noise_multiplier must be >= 0"):
        NoiseMechanismsFactory.create("Gaussian", initial_noise_multiplier=-1.0)
    with pytest.raises(ValueError, match="decay_policy must be one of"):
        NoiseMechanismsFactory.create("AdaGaussian", decay_policy="Linear")
    factory = DPOptimizerClassFactory(micro_batches=2)
    with pytest.raises(ValueError, match="call set_mechanisms"):
        factory.create("SGD")
    factory.set_mechanisms("Gaussian", norm_bound=1.0, initial_noise_multiplier=1.0)
    with pytest.raises(ValueError, match="policy must be one of"):
        factory.create("Lamb")
    dp_opt = factory.create("Adam")(net.trainable_params(), learning_rate=0.01)
    with pytest.raises(ValueError, match="noise_mech must be None"):
        DPModel(2, 1.0, NoiseMechanismsFactory.create("Gaussian"), network=net, loss_fn=ce, optimizer=dp_opt)
    with pytest.raises(ValueError, match="must equal the DP optimizer's"):
        DPModel(4, 1.0, None, network=net, loss_fn=ce, optimizer=dp_opt)


@pytest.mark.parametrize("policy", ["Linear", "Geometric"])
def test_adaptive_clipping_moves_the_bound(policy):
    mycel.set_seed(4)
    net = small_net()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 5)).astype(np.float32) * 2
    y = rng.integers(0, 3, 8).astype(np.int32)
    _, norms = loop_reference(net, ce, x, y, 8, 1.0, 0.1)
    bound = float(np.sort(norms)[2:4].mean())  # 3 of 8 unclipped, none on the bound
    want, _ = loop_reference(net, ce, x, y, 8, bound, 0.1)
    clip = ClipMechanismsFactory.create("Gaussian", decay_policy=policy, learning_rate=0.5,
                                        target_unclipped_quantile=0.9, fraction_stddev=0.0)
    model = DPModel(8, bound, None, clip, network=net, loss_fn=ce, optimizer=nn.SGD(net.trainable_params(), 0.1))
    model.train_network(Tensor(x), Tensor(y))
    for p, w in zip(net.trainable_params(), want):  # this step clipped to the old bound
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-4, atol=1e-6)
    frac = (norms <= bound).mean()
    nxt = bound - 0.5 * (frac - 0.9) if policy == "Linear" else bound * np.exp(-0.5 * (frac - 0.9))
    np.testing.assert_allclose(float(model.train_network.norm_bound.asnumpy()), nxt, rtol=1e-5)
