"""Privacy evaluation on constructed cases: membership inference against a target that memorizes
its training set (an RBF lookup of the stored samples) must beat chance clearly, and its metrics
agree with scikit-learn's on the attack's own predictions; a model with no memorization gives
chance; image inversion from an injective linear representation recovers the images; a trained
inverse network reconstructs split-learning features far better than an untrained one."""
import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.metrics import accuracy_score, precision_score, recall_score  # noqa: E402

import mycel.dataset as ds  # noqa: E402
from mycel import Model, Tensor, context, nn, ops  # noqa: E402
from mycel.armour import ImageInversionAttack, MembershipInference, ModelInversionAttack  # noqa: E402


@pytest.fixture(autouse=True)
def graph_mode():
    old = context.get_context("mode")
    context.set_context(mode=context.GRAPH_MODE)
    yield
    context.set_context(mode=old)


class Memorizer(nn.Cell):
    """logits = scale * sum_i exp(-||x - x_i||^2 / h) onehot(y_i): confident only near stored samples."""

    def __init__(self, xs, ys, k, h=0.5, scale=8.0):
        super().__init__()
        self.xs = Tensor(xs.T.astype(np.float32).copy())
        self.sq = Tensor((xs ** 2).sum(axis=1)[None].astype(np.float32))
        self.onehot = Tensor((np.eye(k)[ys] * scale).astype(np.float32))
        self.h = h

    def construct(self, x):
        d2 = (x * x).sum(axis=1, keepdims=True) - 2.0 * ops.matmul(x, self.xs) + self.sq
        return ops.matmul(ops.exp(d2 * (-1.0 / self.h)), self.onehot)


def sets(seed, n=120, d=10, k=4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4 * n, d)).astype(np.float32)
    y = rng.integers(0, k, 4 * n).astype(np.int32)       # random labels: only memorization fits them
    return [(x[i * n:(i + 1) * n], y[i * n:(i + 1) * n]) for i in range(4)]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_membership_inference_beats_chance_on_a_memorizing_model():
    members, others, members_eval, others_eval = sets(0)
    # the target was trained on members and members_eval (both memorized); others are unseen
    xs = np.vstack([members[0], members_eval[0]])
    ys = np.r_[members[1], members_eval[1]]
    target = Model(Memorizer(xs, ys, 4))
    mi = MembershipInference(target, n_jobs=1, seed=0)
    train_ds = ds.NumpySlicesDataset({"x": members[0], "y": members[1]}, shuffle=False).batch(32)
    mi.train(train_ds, others, [{"method": "lr", "params": {"C": [1.0]}},
                                {"method": "KNN", "params": {"n_neighbors": [5]}},
                                {"method": "mlp", "params": {"hidden_layer_sizes": [(16,)], "solver": ["lbfgs"]}}])
    results = mi.eval(members_eval, others_eval, ["precision", "recall", "accuracy"])
    assert len(results) == 3
    for r in results:
        assert r["accuracy"] > 0.9 and r["precision"] > 0.85 and r["recall"] > 0.85, results
    # the metrics are the standard ones, on the attack's own predictions
    feats, truth = MembershipInference(target, n_jobs=1, seed=5)._transform(members_eval, others_eval)
    pred = mi._attack_list[0].predict(feats)
    mi._rng = np.random.RandomState(5)
    r = mi.eval(members_eval, others_eval, ["precision", "recall", "accuracy"])[0]
    assert r["precision"] == pytest.approx(precision_score(truth, pred))
    assert r["recall"] == pytest.approx(recall_score(truth, pred))
    assert r["accuracy"] == pytest.approx(accuracy_score(truth, pred))


def test_membership_inference_is_chance_without_memorization():
    a, b, c, d = sets(1)
    target = nn.Dense(10, 4)          # untrained: members and others look alike
    mi = MembershipInference(target, n_jobs=1, seed=1)
    mi.train(a, b, [{"method": "lr", "params": {"C": [1.0]}}])
    acc = mi.eval(c, d, ["accuracy"])[0]["accuracy"]
    assert 0.35 < acc < 0.65


def test_membership_inference_bad_arguments():
    a, b, _, _ = sets(2, n=10)
    mi = MembershipInference(nn.Dense(10, 4), n_jobs=1)
    with pytest.raises(KeyError, match="keys 'method' and 'params'"):
        mi.train(a, b, [{"method": "lr"}])
    with pytest.raises(NameError, match="method must be one of"):
        mi.train(a, b, [{"method": "svm", "params": {}}])
    with pytest.raises(ValueError, match="call train"):
        mi.eval(a, b, ["accuracy"])
    with pytest.raises(ValueError, match="n_jobs must be -1 or a positive int"):
        MembershipInference(nn.Dense(10, 4), n_jobs=0)
    with pytest.raises(ValueError, match="labels must be one class index per input"):
        mi.train((a[0], a[1] + 10), b, [{"method": "lr", "params": {}}])


def linear_features(d_in, d_out, seed):
    w = np.random.default_rng(seed).standard_normal((d_out, d_in)).astype(np.float32) / np.sqrt(d_in)
    net = nn.SequentialCell([nn.Flatten(), nn.Dense(d_in, d_out, has_bias=False)])
    net[1].weight.set_data(Tensor(w))
    return net


def smooth_images(n, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:8, 0:8] / 7.0
    a, b, c = rng.uniform(0.2, 0.8, (3, n, 1, 1))
    return (0.5 * a + 0.3 * b * xx + 0.2 * c * yy)[:, None].astype(np.float32)


def test_image_inversion_recovers_images_from_injective_features():
    net = linear_features(64, 96, 0)
    imgs = smooth_images(4, 1)
    feats = net(Tensor(imgs)).asnumpy()
    attack = ImageInversionAttack(net, (1, 8, 8), (0.0, 1.0), loss_weights=(1.0, 1e-3, 1e-4), step_size=0.005,
                                  seed=0)
    inv = attack.generate(feats, iters=250)
    assert inv.shape == imgs.shape and inv.min() >= 0 and inv.max() <= 1
    l2, ssim, confi = attack.evaluate(imgs, inv)
    chance = attack.evaluate(imgs, smooth_images(4, 9))
    assert l2 < 0.05 and ssim > 0.9 and confi is None
    assert l2 < chance[0] / 4
    clf = nn.SequentialCell([nn.Flatten(), nn.Dense(64, 3)])
    _, _, confi = attack.evaluate(imgs, inv, labels=np.array([0, 1, 2, 0]), new_network=clf)
    z = clf(Tensor(inv)).asnumpy()
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    assert confi == pytest.approx(p[np.arange(4), [0, 1, 2, 0]].mean(), rel=1e-5)
    with pytest.raises(ValueError, match="target_features must have the network's output shape"):
        attack.generate(feats[:, :10])


class Unflatten(nn.Cell):
    def construct(self, x):
        return ops.reshape(x, (x.shape[0], 1, 8, 8))


def test_model_inversion_trains_an_inverse_network():
    net = nn.SequentialCell([nn.Flatten(), nn.Dense(64, 96), nn.ReLU(), nn.Dense(96, 10)])
    inv = nn.SequentialCell([nn.Dense(96, 64), Unflatten()])
    attack = ModelInversionAttack(net, inv, (1, 8, 8), split_layer="1")
    train = ds.NumpySlicesDataset({"x": smooth_images(256, 2), "y": np.zeros(256, np.int32)},
                                  shuffle=False).batch(32)
    test = (smooth_images(32, 3), np.zeros(32, np.int32))
    ssim0, psnr0 = attack.evaluate(test)
    loss = attack.train_inversion_model(train, epochs=30, learningrate=1e-2)
    ssim, psnr = attack.evaluate(test)
    feats = net[1](net[0](Tensor(test[0])))
    rec = attack.inverse(feats).asnumpy()
    mse = ((np.clip(rec, 0, 1) - test[0]) ** 2).mean()
    assert loss < 1e-3 and psnr > 30 and psnr > psnr0 + 15 and ssim > 0.9 > ssim0
    assert psnr == pytest.approx(np.mean([10 * np.log10(1 / ((np.clip(r, 0, 1) - t) ** 2).mean())
                                          for r, t in zip(rec.astype(np.float64), test[0])]), rel=1e-3)
    assert mse < 1e-3
    with pytest.raises(ValueError, match="split_layer must name a child"):
        ModelInversionAttack(net, inv, (1, 8, 8), split_layer="conv1")
