"""The reusable example models (examples/models): output shapes, parameter counts against their
closed forms, and one TrainOneStepCell step compiled in GRAPH_MODE equal to the same step run in
PYNATIVE_MODE from the same weights."""
import os
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models import TransformerClassifier, resnet18, resnet18_cifar  # noqa: E402


@pytest.fixture(autouse=True)
def _pynative():
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _num_params(net):
    return sum(int(np.prod(p.shape)) for p in net.trainable_params())


def _resnet18_cifar_count(num_classes, stem_kernel=3):
    """Closed form: 3x3 convs without bias, BatchNorm gamma and beta, 1x1 projections where a
    stage changes width, and the Dense classifier (the ImageNet layout: a 7x7 stem)."""
    conv = lambda cin, cout, k: cin * cout * k * k  # noqa: E731
    bn = lambda c: 2 * c  # noqa: E731
    total = conv(3, 64, stem_kernel) + bn(64)
    cin = 64
    for width in (64, 128, 256, 512):
        for block in range(2):
            total += conv(cin, width, 3) + bn(width) + conv(width, width, 3) + bn(width)
            if cin != width:
                total += conv(cin, width, 1) + bn(width)
            cin = width
    return total + 512 * num_classes + num_classes


def _transformer_count(d, ff, layers, classes, vocab=None):
    attn = 3 * d * d + 3 * d + d * d + d  # in_proj weight/bias, out_proj weight/bias
    block = attn + (d * ff + ff) + (ff * d + d) + 2 * (2 * d)  # two Dense, two LayerNorms
    return layers * block + d * classes + classes + (vocab * d if vocab else 0)


def test_resnet18_cifar_parameter_count_matches_closed_form():
    net = resnet18_cifar()
    assert _num_params(net) == _resnet18_cifar_count(10) == 11_173_962
    assert _num_params(resnet18_cifar(num_classes=100)) == _resnet18_cifar_count(100)


def test_resnet18_imagenet_layout_parameter_count_and_shape():
    net = resnet18()  # torchvision's resnet18 has 11,689,512 parameters too
    assert _num_params(net) == _resnet18_cifar_count(1000, stem_kernel=7) == 11_689_512
    small = resnet18(num_classes=7)  # 64x64: the stem and its max-pool divide by 4, stages by 8
    small.set_train(False)
    assert small(Tensor(np.zeros((1, 3, 64, 64), np.float32))).shape == (1, 7)


def test_transformer_parameter_count_matches_closed_form():
    assert _num_params(TransformerClassifier()) == _transformer_count(128, 512, 2, 10)
    net = TransformerClassifier(d_model=32, nhead=2, dim_feedforward=64, num_layers=3, num_classes=5,
                                vocab_size=50)
    assert _num_params(net) == _transformer_count(32, 64, 3, 5, vocab=50)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
def test_output_shapes(mode):
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((2, 3, 32, 32)).astype(np.float32))
    assert resnet18_cifar(num_classes=7)(x).shape == (2, 7)
    x = Tensor(rng.standard_normal((3, 5, 16)).astype(np.float32))
    net = TransformerClassifier(d_model=16, nhead=2, dim_feedforward=32, num_classes=4)
    assert net(x).shape == (3, 4)
    ids = Tensor(rng.integers(0, 20, (3, 5)).astype(np.int32))
    net = TransformerClassifier(d_model=16, nhead=2, dim_feedforward=32, num_classes=4, vocab_size=20)
    assert net(ids).shape == (3, 4)


def _one_step(make_net, init, x, y, mode):
    """One Momentum TrainOneStepCell step from the weights init: (loss, weights after)."""
    mycel.set_context(mode=mode)
    net = make_net()
    for p, a in zip(net.trainable_params(), init):
        p.set_data(Tensor(a))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    step.set_train(True)  # BatchNorm on batch statistics, moving statistics updated
    loss = float(step(Tensor(x), Tensor(y)).asnumpy())
    return loss, [p.asnumpy().copy() for p in net.trainable_params()]


@pytest.mark.parametrize("name", ["resnet18", "transformer"])
def test_train_step_graph_mode_equals_pynative(name):
    rng = np.random.default_rng(1)
    if name == "resnet18":
        make_net = lambda: resnet18_cifar(num_classes=10)  # noqa: E731
        x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)  # small images: the same network
    else:
        make_net = lambda: TransformerClassifier(d_model=32, nhead=4, dim_feedforward=64)  # noqa: E731
        x = rng.standard_normal((3, 6, 32)).astype(np.float32)
    y = rng.integers(0, 10, x.shape[0]).astype(np.int32)
    mycel.set_seed(3)
    init = [p.asnumpy().copy() for p in make_net().trainable_params()]
    loss_e, w_e = _one_step(make_net, init, x, y, mycel.PYNATIVE_MODE)
    loss_g, w_g = _one_step(make_net, init, x, y, mycel.GRAPH_MODE)
    np.testing.assert_allclose(loss_g, loss_e, rtol=1e-4)
    assert np.isfinite(loss_e) and loss_e > 0
    moved = 0
    for a, b, w0 in zip(w_g, w_e, init):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
        moved += not np.array_equal(b, w0)
    assert moved == len(init)  # every weight got a gradient and was updated
