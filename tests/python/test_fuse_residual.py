"""The residual add (+relu) of a ResNet block fused into the convolution before it (graph mode,
src/mycel/backend/fuse_post_ops.cc): in eval mode conv -> BatchNorm2d -> add(shortcut) -> ReLU
compiles to one "conv2d+batch_norm+add+relu" instruction, whose kernels add the shortcut in their
output pass (Winograd's output transform, the brgconv's reorder loop) or by one loop. Its output
equals a float64 numpy forward of the same block and eager mode within float32 rounding, at 1, 2
and 3 threads, on every kernel path (Winograd F(4x4) and F(2x2), oneDNN with and without the
NHWC reorder, a 1x1 and a 5x5 conv, channels that pad the 8-lane blocks); a shortcut with other
readers is only read; MYCEL_FUSE_RESIDUAL=0 keeps the separate add."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel._mycel import graph as G

RTOL, ATOL = 2e-4, 2e-4


class ConvBN(nn.Cell):
    def __init__(self, cin, cout, k, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=stride, pad_mode="pad", padding=k // 2)
        self.bn = nn.BatchNorm2d(cout)

    def construct(self, x):
        return self.bn(self.conv(x))


class Net(nn.Cell):
    """A stem conv (so that the block input is a blocked tensor, as in ResNet), then a basic block
    (conv-bn-relu, conv-bn, + shortcut, relu) whose shortcut is the identity or a 1x1 projection
    (stride 2). `twice`: the shortcut is read again after the block."""

    def __init__(self, cin, c, k=3, stride=1, projection=False, twice=False):
        super().__init__()
        self.stem = ConvBN(cin, c, 3)
        self.c1 = ConvBN(c, c, k, stride)
        self.c2 = ConvBN(c, c, k)
        self.short = ConvBN(c, c, 1, stride) if projection else None
        self.relu = nn.ReLU()
        self.twice = twice

    def construct(self, x):
        x = self.relu(self.stem(x))
        y = self.relu(self.c1(x))
        y = self.c2(y)
        s = self.short(x) if self.short is not None else x
        y = self.relu(y + s)
        return y + s if self.twice else y


def randomize(net, seed):
    rng = np.random.default_rng(seed)
    for p in net.get_parameters():
        shape = tuple(p.shape)
        if p.name.endswith("weight"):
            fan = np.prod(shape[1:])
            a = rng.standard_normal(shape) / np.sqrt(fan)
        elif p.name.endswith("gamma"):
            a = rng.uniform(0.5, 2.0, shape)
        elif p.name.endswith("moving_variance"):
            a = rng.uniform(0.3, 3.0, shape)
        else:  # beta, moving_mean, bias
            a = rng.normal(0, 0.5, shape)
        p.set_data(Tensor(a.astype(np.float32)))


def conv_bn64(m, x):
    """ConvBN m on x in float64 numpy."""
    w = m.conv.weight.asnumpy().astype(np.float64)
    oc, c, k, _ = w.shape
    s, p = m.conv.stride[0] if isinstance(m.conv.stride, tuple) else m.conv.stride, k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh = (x.shape[2] + 2 * p - k) // s + 1
    ow = (x.shape[3] + 2 * p - k) // s + 1
    y = np.zeros((x.shape[0], oc, oh, ow))
    for i in range(k):
        for j in range(k):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + s * oh:s, j:j + s * ow:s], w[:, :, i, j])
    if m.conv.has_bias:
        y += m.conv.bias.asnumpy().reshape(1, -1, 1, 1)
    bn = m.bn
    sc = bn.gamma.asnumpy().astype(np.float64) / np.sqrt(bn.moving_variance.asnumpy().astype(np.float64) + bn.eps)
    return (y - bn.moving_mean.asnumpy().reshape(1, -1, 1, 1)) * sc.reshape(1, -1, 1, 1) + \
        bn.beta.asnumpy().reshape(1, -1, 1, 1)


def reference(net, x):
    x = np.maximum(conv_bn64(net.stem, x.astype(np.float64)), 0)
    y = np.maximum(conv_bn64(net.c1, x), 0)
    y = conv_bn64(net.c2, y)
    s = conv_bn64(net.short, x) if net.short is not None else x
    y = np.maximum(y + s, 0)
    return y + s if net.twice else y


def eager(net, x):
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    try:
        return net(x).asnumpy()
    finally:
        mycel.set_context(mode=mycel.GRAPH_MODE)


# (input channels, channels, side, kernel, stride, projection): the second conv's kernel path
CASES = [
    (3, 64, 20, 3, 1, False),   # Winograd F(4x4)
    (3, 256, 8, 3, 1, False),   # Winograd F(2x2) (F(4x4)'s weights past 8 MiB)
    (3, 512, 7, 3, 1, False),   # oneDNN (brgconv on NHWC on AVX-512 Zen 4: the reorder loop adds)
    (3, 512, 4, 3, 1, False),   # oneDNN, 4x4 (ResNet-18 CIFAR's last stage)
    (3, 24, 9, 3, 1, False),    # Winograd F(2x2), 24 channels
    (3, 12, 9, 3, 1, False),    # channels that pad the 8-lane blocks: not Winograd (< 16)
    (5, 32, 10, 5, 1, False),   # a 5x5 conv: oneDNN's jit on the blocked layout, the loop adds
    (3, 32, 9, 1, 1, False),    # a 1x1 conv (a bottleneck block's last): the loop adds
    (3, 64, 16, 3, 2, True),    # projection shortcut (1x1, stride 2): the 3x3 takes the add
]


@pytest.mark.parametrize("cin,c,side,k,stride,projection", CASES)
def test_fused_block_equals_numpy_and_eager(cin, c, side, k, stride, projection):
    mycel.set_seed(1)
    net = Net(cin, c, k, stride, projection)
    randomize(net, seed=c + side + k)
    net.set_train(False)
    x = Tensor(np.random.default_rng(side).standard_normal((1, cin, side, side)).astype(np.float32))
    ref = reference(net, x.asnumpy())
    scale = np.abs(ref).max()
    np.testing.assert_allclose(eager(net, x), ref, rtol=RTOL, atol=ATOL * scale)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    text = G.compile(net).program_text(x)
    fused = [line for line in text.splitlines() if "+add+relu(" in line]
    assert len(fused) == 1 and " add(" not in text, text
    for threads in (1, 2, 3):
        mycel.set_context(num_threads=threads)
        out = net(x).asnumpy()
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL * scale, err_msg=f"{threads} threads")
    os.environ["MYCEL_FUSE_RESIDUAL"] = "0"
    plain = G.compile(net).program_text(x)
    assert "+add+relu(" not in plain and "add(" in plain, plain
    np.testing.assert_allclose(net(x).asnumpy(), out, rtol=RTOL, atol=ATOL * scale)


@pytest.mark.parametrize("cin,c,side,k,stride,projection", CASES)
def test_fused_add_relu_keeps_nan_and_inf_as_eager(cin, c, side, k, stride, projection):
    """relu(NaN) is NaN in eager mode (x < 0 ? 0 : x), relu(-inf) 0 and relu(inf) inf: so is the
    fused add+relu, whichever loop applies it (the branch-free clamp of relu_clamp.h). The second
    conv's batch-norm beta carries them into whole channels of the sum (its fold puts them in the
    bias), so no conv's window spreads them."""
    mycel.set_seed(1)
    net = Net(cin, c, k, stride, projection)
    randomize(net, seed=c + side + k)
    beta = net.c2.bn.beta.asnumpy().copy()
    beta[0], beta[1], beta[c - 1] = np.nan, -np.inf, np.inf
    net.c2.bn.beta.set_data(Tensor(beta))
    net.set_train(False)
    x = Tensor(np.random.default_rng(side).standard_normal((1, cin, side, side)).astype(np.float32))
    want = eager(net, x)
    assert np.isnan(want[:, 0]).all() and (want[:, 1] == 0).all() and np.isposinf(want[:, c - 1]).all()
    assert np.isfinite(want[:, 2:c - 1]).all()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    assert "+add+relu(" in G.compile(net).program_text(x)
    scale = np.abs(want[:, 2:c - 1]).max()
    for threads in (1, 2):
        mycel.set_context(num_threads=threads)
        out = net(x).asnumpy()
        assert np.isnan(out[:, 0]).all(), f"{threads} threads"
        np.testing.assert_array_equal(out[:, 1], 0, err_msg=f"{threads} threads")
        assert np.isposinf(out[:, c - 1]).all(), f"{threads} threads"
        np.testing.assert_allclose(out[:, 2:c - 1], want[:, 2:c - 1], rtol=RTOL, atol=ATOL * scale)


def test_projection_takes_add_into_3x3():
    """With a projection, the add's two operands both come from convs: the 3x3 (second) conv
    takes it, the 1x1 stays plain conv2d+batch_norm."""
    net = Net(3, 16, 3, 2, projection=True)
    randomize(net, seed=3)
    net.set_train(False)
    x = Tensor(np.random.default_rng(0).standard_normal((1, 3, 12, 12)).astype(np.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    text = G.compile(net).program_text(x)
    lines = [line.strip() for line in text.splitlines()]
    fused = [line for line in lines if "+add+relu(" in line]
    assert len(fused) == 1, text
    # its input is the first conv's output (relu'd), its last operand the 1x1's output
    first = next(line for line in lines if "conv2d+batch_norm+relu(" in line and "(r0" not in line)
    short = next(line for line in lines if "conv2d+batch_norm(" in line)
    args = fused[0].split("(", 1)[1].rstrip(")").split(", ")
    assert args[0] == first.split(" = ")[0] and args[-1] == short.split(" = ")[0], text
    np.testing.assert_allclose(net(x).asnumpy(), reference(net, x.asnumpy()), rtol=RTOL, atol=ATOL * 10)


@pytest.mark.parametrize("c,side", [(64, 12), (512, 7), (12, 6)])
def test_shortcut_read_again_after_the_block(c, side):
    """The shortcut has another reader after the fused conv: the kernels only read it, so it is
    intact for that reader (y + s equals numpy)."""
    mycel.set_seed(2)
    net = Net(3, c, twice=True)
    randomize(net, seed=c)
    net.set_train(False)
    x = Tensor(np.random.default_rng(1).standard_normal((1, 3, side, side)).astype(np.float32))
    ref = reference(net, x.asnumpy())
    scale = np.abs(ref).max()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    text = G.compile(net).program_text(x)
    assert "+add+relu(" in text, text
    for threads in (1, 2, 3):
        mycel.set_context(num_threads=threads)
        np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=RTOL, atol=ATOL * scale)


def test_training_mode_is_untouched():
    """Training mode: no fold and no fusion (the batch norm updates its statistics)."""
    net = Net(3, 16)
    net.set_train(True)
    x = Tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    text = G.compile(net).program_text(x)
    assert "+add" not in text, text


class AddOnly(Net):
    """The sum has two readers (its relu and the output): the conv takes the add alone."""

    def construct(self, x):
        x = self.relu(self.stem(x))
        y = self.c2(self.relu(self.c1(x))) + x
        return self.relu(y) * 0.5 + y


@pytest.mark.parametrize("c,side", [(64, 12), (512, 7), (12, 6)])
def test_residual_without_activation(c, side):
    mycel.set_seed(6)
    net = AddOnly(3, c)
    randomize(net, seed=c + 1)
    net.set_train(False)
    x = Tensor(np.random.default_rng(2).standard_normal((1, 3, side, side)).astype(np.float32))
    xs = np.maximum(conv_bn64(net.stem, x.asnumpy().astype(np.float64)), 0)
    y = conv_bn64(net.c2, np.maximum(conv_bn64(net.c1, xs), 0)) + xs
    ref = np.maximum(y, 0) * 0.5 + y
    scale = np.abs(ref).max()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    text = G.compile(net).program_text(x)
    assert "conv2d+batch_norm+add(" in text, text
    for threads in (1, 2, 3):
        mycel.set_context(num_threads=threads)
        np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=RTOL, atol=ATOL * scale)


class PlainBlock(nn.Cell):
    """A block without batch norm: conv -> relu -> conv (bias) -> + x -> relu."""

    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, pad_mode="pad", padding=1)
        self.c2 = nn.Conv2d(c, c, 3, pad_mode="pad", padding=1, has_bias=True)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.c2(self.relu(self.c1(x))) + x)


def test_training_graph_with_fused_residual_matches_eager_gradients():
    """A training step's graph fuses the residual too (weights that change: no Winograd of
    constant weights; the launch's loop adds): value and gradients equal eager mode's."""
    mycel.set_seed(4)
    net = PlainBlock(16)
    randomize(net, seed=4)
    x = Tensor(np.random.default_rng(5).standard_normal((2, 16, 8, 8)).astype(np.float32))
    params = net.trainable_params()

    class SquareLoss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, x):
            y = self.net(x)
            return ops.sum(y * y)

    loss = SquareLoss()
    value_e, grads_e = mycel.value_and_grad(loss, None, params)(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    g = mycel.value_and_grad(loss, None, params)
    value_g, grads_g = g(x)
    text = list(g._compiled.values())[0].program_text(x)
    assert "conv2d+add+relu(" in text, text
    np.testing.assert_allclose(value_g.asnumpy(), value_e.asnumpy(), rtol=1e-4)
    for a, b in zip(grads_g, grads_e):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("tag", ["nhwc", "nChw16c"])
def test_other_layout_tags(tag):
    """The CPU picks one activation layout per process; MYCEL_LAYOUT_TAG forces the others (no
    Winograd there: the fused launch's loop adds over the padded buffers), and the tests above
    pass with them."""
    env = dict(os.environ, MYCEL_LAYOUT_TAG=tag)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", __file__,
                        "-k", "not other_layout_tags"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-3000:]
