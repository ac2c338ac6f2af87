"""Pruning (mycel.lite.prune) and knowledge distillation (mycel.lite.distill) against numpy
references: the pruned weights are exactly the smallest, masks survive training, channel pruning
equals the original net with the removed channels cut out and exports smaller; the distillation
loss equals its closed form and trains only the student."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, nn, ops
from mycel.lite import distill, prune

from edge_helpers import LeNet5, randomize


def _weights(net):
    return {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}


def test_magnitude_pruning_zeroes_exactly_the_smallest_weights():
    net = randomize(LeNet5())
    before = {n: w for n, w in _weights(net).items() if n.endswith("weight")}
    pruner = prune.MagnitudePruner(sparsity=0.7)
    pruner.apply(net)
    after = _weights(net)
    for n, w in before.items():
        k = int(0.7 * w.size)
        order = np.argsort(np.abs(w).reshape(-1), kind="stable")
        got = after[n].reshape(-1)
        assert np.all(got[order[:k]] == 0) and np.array_equal(got[order[k:]], w.reshape(-1)[order[k:]])
    assert abs(pruner.sparsity_of(net) - 0.7) < 0.01
    # global scope: one threshold over all layers
    net = randomize(LeNet5())
    allw = np.concatenate([np.abs(w).reshape(-1) for n, w in _weights(net).items() if n.endswith("weight")])
    prune.MagnitudePruner(sparsity=0.5, scope="global").apply(net)
    t = np.sort(allw)[int(0.5 * allw.size) - 1]
    for n, w in _weights(net).items():
        if n.endswith("weight"):
            assert np.all(np.abs(w[w != 0]) > t)
    with pytest.raises(ValueError, match="sparsity"):
        prune.MagnitudePruner(sparsity=1.5)


def test_masks_survive_fine_tuning():
    net = randomize(LeNet5())
    pruner = prune.MagnitudePruner(sparsity=0.6)
    pruner.apply(net)
    zero = {n: w == 0 for n, w in _weights(net).items() if n.endswith("weight")}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 1, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 32).astype(np.int32)
    data = mycel.dataset.NumpySlicesDataset({"image": x, "label": y}, shuffle=False).batch(8)
    model = mycel.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                        nn.Momentum(net.trainable_params(), 0.05, 0.9))
    model.train(1, data, callbacks=pruner.callbacks())
    after = _weights(net)
    moved = 0
    for n, z in zero.items():
        assert np.all(after[n][z] == 0), n
        moved += np.abs(after[n][~z]).sum()
    assert moved > 0


def _forward(net, x):
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        return net(Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_channel_pruning_shrinks_shapes_and_matches_the_cut_network(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 1, 32, 32)).astype(np.float32)
    net = randomize(LeNet5(), seed=1)
    ref = randomize(LeNet5(), seed=1)
    pairs = [("conv1", "conv2"), ("conv2", "fc1"), ("fc1", "fc2"), ("fc2", "fc3")]
    pruner = prune.ChannelPruner(pairs, ratio=0.5)
    pruner.apply(net)
    assert tuple(net.conv1.weight.shape) == (3, 1, 5, 5) and tuple(net.conv2.weight.shape) == (8, 3, 5, 5)
    assert tuple(net.fc1.weight.shape) == (60, 200) and tuple(net.fc2.weight.shape) == (42, 60)
    assert tuple(net.fc3.weight.shape) == (10, 42)
    # kept channels: the largest L1 filter norms
    w1 = ref.conv1.weight.asnumpy()
    want = np.sort(np.argsort(-np.abs(w1).reshape(6, -1).sum(1), kind="stable")[:3])
    np.testing.assert_array_equal(pruner.kept["conv1"], want)
    # reference: the original net with every consumer's inputs from removed channels zeroed
    w = _weights(ref)
    for prod, cons in pairs:
        drop = np.setdiff1d(np.arange(w[prod + ".weight"].shape[0]), pruner.kept[prod])
        cw = w[cons + ".weight"].copy()
        if cons.startswith("fc") and prod.startswith("conv"):
            per = cw.shape[1] // w[prod + ".weight"].shape[0]
            cols = (drop[:, None] * per + np.arange(per)).reshape(-1)
            cw[:, cols] = 0
        else:
            cw[:, drop] = 0
        getattr(ref, cons).weight.set_data(Tensor(cw))
    np.testing.assert_allclose(_forward(net, x), _forward(ref, x), rtol=1e-4, atol=1e-5)
    # it re-exports smaller, and the lite runtime runs the smaller model
    small = mycel.export(net, Tensor(x[:1]), file_name=str(tmp_path / "small"), file_format="MINDIR")
    big = mycel.export(randomize(LeNet5()), Tensor(x[:1]), file_name=str(tmp_path / "big"), file_format="MINDIR")
    import os
    assert os.path.getsize(small) < 0.5 * os.path.getsize(big)
    got = _mycel.lite.Session.from_file(small).run([Tensor(x)])[0].asnumpy()
    np.testing.assert_allclose(got, _forward(net, x), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="no cell 'conv9'"):
        prune.ChannelPruner([("conv9", "fc1")]).apply(randomize(LeNet5()))


def test_channel_pruning_with_batch_norm():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(8, 4, 3, pad_mode="pad", padding=1)

        def construct(self, x):
            return self.conv2(self.relu(self.bn1(self.conv1(x))))

    net, ref = randomize(Net(), seed=2), randomize(Net(), seed=2)
    pruner = prune.ChannelPruner([("conv1", "bn1", "conv2")], ratio=0.25)
    pruner.apply(net)
    assert tuple(net.bn1.gamma.shape) == (6,) and tuple(net.conv2.weight.shape) == (4, 6, 3, 3)
    drop = np.setdiff1d(np.arange(8), pruner.kept["conv1"])
    cw = ref.conv2.weight.asnumpy().copy()
    cw[:, drop] = 0
    ref.conv2.weight.set_data(Tensor(cw))
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(_forward(net, x), _forward(ref, x), rtol=1e-4, atol=1e-5)


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_distillation_loss_matches_closed_form():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((6, 5)).astype(np.float32) * 3
    t = rng.standard_normal((6, 5)).astype(np.float32) * 3
    y = rng.integers(0, 5, 6).astype(np.int32)
    for temp, alpha in ((4.0, 0.9), (1.0, 0.5), (2.0, 0.0)):
        got = float(distill.DistillationLoss(temp, alpha)(Tensor(s), Tensor(t), Tensor(y)).asnumpy())
        ls, lt = _log_softmax(s / temp), _log_softmax(t / temp)
        kl = (np.exp(lt) * (lt - ls)).sum() / 6
        hard = -_log_softmax(s)[np.arange(6), y].mean()
        np.testing.assert_allclose(got, alpha * temp * temp * kl + (1 - alpha) * hard, rtol=1e-5)
    # gradient of the soft term w.r.t. the student: alpha * T * (softmax(s/T) - softmax(t/T)) / N
    g = mycel.grad(lambda a: distill.DistillationLoss(3.0, 1.0)(a, Tensor(t), Tensor(y)))(Tensor(s)).asnumpy()
    want = 3.0 * (np.exp(_log_softmax(s / 3)) - np.exp(_log_softmax(t / 3))) / 6
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="temperature"):
        distill.DistillationLoss(temperature=0)


def test_distillation_trains_only_the_student():
    teacher, student = randomize(LeNet5(), seed=5), randomize(LeNet5(), seed=6)
    t0 = _weights(teacher)
    s0 = _weights(student)
    cell = distill.DistillationCell(student, teacher, distill.DistillationLoss(4.0, 0.7))
    step = nn.TrainOneStepCell(cell, nn.Momentum(student.trainable_params(), 0.05, 0.9))
    step.set_train()
    rng = np.random.default_rng(7)
    x = Tensor(rng.standard_normal((8, 1, 32, 32)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 8).astype(np.int32))
    losses = [float(step(x, y).asnumpy()) for _ in range(5)]
    assert losses[-1] < losses[0]
    assert all(np.array_equal(v, _weights(teacher)[k]) for k, v in t0.items())
    assert any(not np.array_equal(v, _weights(student)[k]) for k, v in s0.items())
    assert not teacher.training


def test_batch_norm_teacher_stays_in_inference_mode():
    class Teacher(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, pad_mode="pad", padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(4 * 32 * 32, 10)

        def construct(self, x):
            return self.fc(self.flatten(self.bn(self.conv(x))))

    teacher = randomize(Teacher(), seed=8)
    rng = np.random.default_rng(9)
    x = Tensor(rng.standard_normal((8, 1, 32, 32)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 8).astype(np.int32))
    want_logits = _forward(teacher, x.asnumpy())
    stats = {k: v for k, v in _weights(teacher).items() if "moving" in k or "mean" in k or "variance" in k}
    cell = distill.DistillationCell(randomize(LeNet5(), seed=10), teacher)
    step = nn.TrainOneStepCell(cell, nn.Momentum(cell.student.trainable_params(), 0.01, 0.9))
    step.set_train()
    step(x, y)
    assert not teacher.training and not teacher.bn.training
    for k, v in stats.items():
        np.testing.assert_array_equal(_weights(teacher)[k], v)
    np.testing.assert_allclose(_forward(teacher, x.asnumpy()), want_logits, rtol=1e-5, atol=1e-5)
