"""Inference-time folding of batch_norm into the convolution before it (src/mycel/backend/
fold_batch_norm.cc): in eval mode a conv2d -> BatchNorm2d (-> ReLU/ReLU6) chain compiles to one
"conv2d+batch_norm(+relu6)" instruction whose output equals the unfolded path (eager mode, and a
numpy reference) within float32 rounding; the folded weights follow every change of a source
Parameter (set_data, a graph-mode training step, a write through an asnumpy() view) and training
mode is untouched (no fold, gradients equal to eager mode's)."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel._mycel import graph as G

RTOL, ATOL = 1e-4, 1e-5


def rand(*shape, seed=0, low=None, high=None):
    rng = np.random.default_rng(seed)
    a = rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)
    return a.astype(np.float32)


class ConvBN(nn.Cell):
    """conv (optionally grouped, with bias) -> BatchNorm2d -> activation (or none)."""

    def __init__(self, cin=3, cout=8, k=3, stride=1, group=1, has_bias=False, act="relu6"):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=stride, pad_mode="pad", padding=k // 2, group=group,
                              has_bias=has_bias)
        self.bn = nn.BatchNorm2d(cout)
        self.act = {"relu": nn.ReLU(), "relu6": nn.ReLU6(), None: None}[act]

    def construct(self, x):
        y = self.bn(self.conv(x))
        if self.act is not None:
            y = self.act(y)
        return y


def randomize_bn(net, seed=1):
    """Batch-norm parameters and statistics far from the identity, so that folding matters."""
    rng = np.random.default_rng(seed)
    for p in net.get_parameters():
        shape = tuple(p.shape)
        if p.name.endswith("gamma"):
            p.set_data(Tensor(rng.uniform(0.5, 2.0, shape).astype(np.float32)))
        elif p.name.endswith("beta"):
            p.set_data(Tensor(rng.normal(0, 0.5, shape).astype(np.float32)))
        elif p.name.endswith("moving_mean"):
            p.set_data(Tensor(rng.normal(0, 0.5, shape).astype(np.float32)))
        elif p.name.endswith("moving_variance"):
            p.set_data(Tensor(rng.uniform(0.3, 3.0, shape).astype(np.float32)))
        elif p.name.endswith("bias"):
            p.set_data(Tensor(rng.normal(0, 0.5, shape).astype(np.float32)))


def eager(net, x):
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    try:
        return net(x).asnumpy()
    finally:
        mycel.set_context(mode=mycel.GRAPH_MODE)


def numpy_reference(net, x, act):
    """conv2d (stride 1, 'same' padding, groups) + batch norm + activation in float64 numpy."""
    w = net.conv.weight.asnumpy().astype(np.float64)
    b = net.conv.bias.asnumpy().astype(np.float64) if net.conv.has_bias else 0.0
    xs = x.asnumpy().astype(np.float64)
    n, c, h, wd = xs.shape
    oc, cg, k, _ = w.shape
    groups = c // cg
    p = k // 2
    xp = np.pad(xs, ((0, 0), (0, 0), (p, p), (p, p)))
    y = np.zeros((n, oc, h, wd))
    for o in range(oc):
        g = o // (oc // groups)
        for i in range(k):
            for j in range(k):
                y[:, o] += np.einsum("nchw,c->nhw", xp[:, g * cg:(g + 1) * cg, i:i + h, j:j + wd], w[o, :, i, j])
    y += np.reshape(b, (1, -1, 1, 1)) if net.conv.has_bias else 0.0
    bn = net.bn
    s = bn.gamma.asnumpy().astype(np.float64) / np.sqrt(bn.moving_variance.asnumpy().astype(np.float64) + bn.eps)
    y = (y - bn.moving_mean.asnumpy().reshape(1, -1, 1, 1)) * s.reshape(1, -1, 1, 1) + \
        bn.beta.asnumpy().reshape(1, -1, 1, 1)
    if act == "relu":
        y = np.maximum(y, 0)
    elif act == "relu6":
        y = np.clip(y, 0, 6)
    return y


@pytest.mark.parametrize("group,has_bias,act", [(1, False, "relu6"), (1, True, "relu"), (8, False, "relu6"),
                                                (1, False, None)])
def test_folded_equals_unfolded_and_numpy(group, has_bias, act):
    mycel.set_seed(3)
    net = ConvBN(cin=8 if group > 1 else 3, cout=8, group=group, has_bias=has_bias, act=act)
    randomize_bn(net)
    net.set_train(False)
    x = Tensor(rand(2, net.conv.in_channels, 9, 11, seed=4))
    ref = eager(net, x)
    np.testing.assert_allclose(ref, numpy_reference(net, x, act), rtol=1e-4, atol=1e-4)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    out = net(x).asnumpy()
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
    text = G.compile(net).program_text(x)
    fused = "conv2d+batch_norm" + ("+" + act if act else "")
    assert fused + "(" in text and " batch_norm(" not in text, text
    os.environ["MYCEL_FUSE"] = "0"
    plain = G.compile(net).program_text(x)
    assert " batch_norm(" in plain and "+batch_norm" not in plain, plain


def test_fold_follows_every_write_to_its_sources():
    mycel.set_seed(5)
    net = ConvBN(act="relu6")
    randomize_bn(net)
    net.set_train(False)
    x = Tensor(rand(1, 3, 8, 8, seed=6))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    first = net(x).asnumpy()
    np.testing.assert_allclose(first, eager(net, x), rtol=RTOL, atol=ATOL)
    rng = np.random.default_rng(7)
    # Parameter.set_data on each of the six sources, one at a time.
    for p in (net.conv.weight, net.bn.gamma, net.bn.beta, net.bn.moving_mean, net.bn.moving_variance):
        old = p.asnumpy().copy()
        new = (old * rng.uniform(0.5, 1.5, old.shape) + (old == 0)).astype(np.float32)
        p.set_data(Tensor(new))
        out = net(x).asnumpy()
        np.testing.assert_allclose(out, eager(net, x), rtol=RTOL, atol=ATOL, err_msg=p.name)
        assert not np.allclose(out, first), p.name
        first = out
    # A write through a numpy view of the weights (asnumpy shares memory), with the view alive
    # across the call and after it is gone.
    view = net.conv.weight.asnumpy()
    view *= 0.5
    held = net(x).asnumpy()
    np.testing.assert_allclose(held, eager(net, x), rtol=RTOL, atol=ATOL)
    view *= 2.0
    del view
    np.testing.assert_allclose(net(x).asnumpy(), first, rtol=RTOL, atol=ATOL)
    # Unchanged sources: repeated calls give the same result (the folded weights are kept).
    np.testing.assert_array_equal(net(x).asnumpy(), net(x).asnumpy())


def test_eval_after_graph_training_steps_sees_the_new_weights():
    mycel.set_seed(8)
    net = ConvBN(cin=3, cout=4, act="relu")
    randomize_bn(net)
    head = nn.Dense(4 * 6 * 6, 3)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.body, self.head = net, head

        def construct(self, x):
            return self.head(ops.reshape(self.body(x), (x.shape[0], -1)))

    model = Net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(model.trainable_params(), learning_rate=0.1, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(model, loss), opt)
    x = Tensor(rand(4, 3, 6, 6, seed=9))
    y = Tensor(np.array([0, 1, 2, 1], np.int32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    model.set_train(False)
    before = model(x).asnumpy()
    step.set_train(True)
    for _ in range(3):
        step(x, y)  # updates the conv weights, gamma, beta and the moving statistics in place
    model.set_train(False)
    after = model(x).asnumpy()
    assert not np.allclose(after, before)
    np.testing.assert_allclose(after, eager(model, x), rtol=RTOL, atol=ATOL)


def test_training_mode_is_not_folded_and_gradients_match_eager():
    mycel.set_seed(10)
    net = ConvBN(act="relu6")
    randomize_bn(net)
    net.set_train(True)
    x = Tensor(rand(4, 3, 6, 6, seed=11))
    params = net.trainable_params()

    class SquareLoss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, x):
            y = self.net(x)
            return ops.sum(y * y)

    loss = SquareLoss()
    value_e, grads_e = mycel.value_and_grad(loss, None, params)(x)  # eager: recorded
    mycel.set_context(mode=mycel.GRAPH_MODE)
    g = mycel.value_and_grad(loss, None, params)
    value_g, grads_g = g(x)
    text = list(g._compiled.values())[0].program_text(x)
    assert "+batch_norm" not in text and "batch_norm(" in text, text
    np.testing.assert_allclose(value_g.asnumpy(), value_e.asnumpy(), rtol=1e-4)
    for a, b in zip(grads_g, grads_e):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-3, atol=1e-3)


def test_mobilenet_block_folds_every_batch_norm():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from models.mobilenet import InvertedResidual
    mycel.set_seed(12)
    block = InvertedResidual(8, 8, 1, 6)
    randomize_bn(block)
    block.set_train(False)
    x = Tensor(rand(1, 8, 10, 10, seed=13))
    ref = eager(block, x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(block(x).asnumpy(), ref, rtol=RTOL, atol=1e-4)
    text = G.compile(block).program_text(x)
    assert " batch_norm(" not in text and text.count("conv2d+batch_norm") == 3, text
    assert text.count("+relu6(") == 2, text


def test_resnet_downsampling_block_folds_its_shortcut_too():
    # The shortcut's conv and batch_norm sit between conv2 and bn2: every batch norm still folds.
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from models.resnet import BasicBlock
    mycel.set_seed(14)
    block = BasicBlock(4, 8, stride=2)
    randomize_bn(block)
    block.set_train(False)
    x = Tensor(rand(1, 4, 9, 9, seed=15))
    ref = eager(block, x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(block(x).asnumpy(), ref, rtol=RTOL, atol=1e-4)
    text = G.compile(block).program_text(x)
    assert " batch_norm(" not in text and text.count("conv2d+batch_norm") == 3, text


def test_dense_batch_norm1d_folds_and_matches_numpy():
    mycel.set_seed(16)

    class DenseBN(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(12, 5)
            self.bn = nn.BatchNorm1d(5)
            self.relu = nn.ReLU()

        def construct(self, x):
            return self.relu(self.bn(self.fc(x)))

    net = DenseBN()
    randomize_bn(net)
    net.set_train(False)
    x = Tensor(rand(3, 12, seed=17))
    w, b = net.fc.weight.asnumpy().astype(np.float64), net.fc.bias.asnumpy().astype(np.float64)
    bn = net.bn
    s = bn.gamma.asnumpy() / np.sqrt(bn.moving_variance.asnumpy().astype(np.float64) + bn.eps)
    ref = np.maximum((x.asnumpy() @ w.T + b - bn.moving_mean.asnumpy()) * s + bn.beta.asnumpy(), 0)
    np.testing.assert_allclose(eager(net, x), ref, rtol=1e-4, atol=1e-5)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-4, atol=1e-5)
    text = G.compile(net).program_text(x)
    assert "dense+batch_norm+relu(" in text and " batch_norm(" not in text, text
    net.fc.weight.set_data(Tensor(rand(5, 12, seed=18)))  # a new weight version: refolded
    np.testing.assert_allclose(net(x).asnumpy(), eager(net, x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("model,side", [("resnet18", 112), ("mobilenet_v2", 96)])
def test_whole_eval_models_fold_every_batch_norm_and_equal_plain_forward(model, side):
    """The harness's batch-1 inference networks (bench/harness INFER rows) end to end: every
    batch_norm folds, and the graph (folded weights, fused relu/relu6, blocked layouts, Winograd
    where the CPU's layout allows it) equals the eager forward (unfolded batch_norm, NCHW, oneDNN
    direct convolutions) within 1e-3 of the largest |output| (the harness's agreement bound)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import models
    mycel.set_seed(20)
    net = getattr(models, model)(num_classes=100)
    randomize_bn(net, seed=21)
    net.set_train(False)
    x = Tensor(rand(1, 3, side, side, seed=22))
    ref = eager(net, x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    out = net(x).asnumpy()
    assert np.isfinite(ref).all() and np.abs(ref).max() > 0
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-3 * np.abs(ref).max())
    text = G.compile(net).program_text(x)
    norms = sum(1 for _, c in net.cells_and_names() if isinstance(c, nn.BatchNorm2d))
    assert " batch_norm(" not in text and text.count("conv2d+batch_norm") == norms, text
