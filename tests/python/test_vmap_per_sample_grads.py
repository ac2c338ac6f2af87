"""Per-sample gradients (DESIGN.md section 9, Armour): vmap(grad(loss_fn), in_axes=(None, 0, 0))
over a LeNet5 batch, one compiled program, equals the per-sample loop of grad (each sample its own
call), for every weight, in both modes."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, context, nn, ops
from train_helpers import LeNet5


@pytest.mark.parametrize("mode", [context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_lenet5_per_sample_gradients_equal_the_loop(mode):
    old = context.get_context("mode")
    context.set_context(mode=mode)
    try:
        mycel.set_seed(0)
        net = LeNet5()
        ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        weights = net.trainable_params()

        def loss_fn(scale, x, y):  # one sample: x (1, 32, 32), y a 0-d label
            return ce(net(ops.expand_dims(x, 0)), ops.expand_dims(y, 0)) * scale

        rng = np.random.default_rng(0)
        b = 6
        x = rng.standard_normal((b, 1, 32, 32)).astype(np.float32)
        y = rng.integers(0, 10, b).astype(np.int32)
        scale = Tensor(np.float32(1.5))
        grad_fn = ops.grad(loss_fn, grad_position=None, weights=weights)
        per_sample = ops.vmap(grad_fn, in_axes=(None, 0, 0))(scale, Tensor(x), Tensor(y))
        loop = [grad_fn(scale, Tensor(x[i]), Tensor(y[i])) for i in range(b)]
        assert len(per_sample) == len(weights)
        for k, w in enumerate(weights):
            want = np.stack([loop[i][k].asnumpy() for i in range(b)])
            assert per_sample[k].shape == (b,) + tuple(w.shape)
            np.testing.assert_allclose(per_sample[k].asnumpy(), want, rtol=1e-4, atol=1e-6, err_msg=w.name)
        # the mean of the per-sample gradients is the batch gradient (times the scale)
        batch_loss = nn.WithLossCell(net, ce)
        gb = ops.grad(batch_loss, grad_position=None, weights=weights)(Tensor(x), Tensor(y))
        for k in range(len(weights)):
            np.testing.assert_allclose(per_sample[k].asnumpy().mean(0), gb[k].asnumpy() * 1.5,
                                       rtol=1e-4, atol=1e-6)
    finally:
        context.set_context(mode=old)


def test_per_sample_gradients_are_one_program_without_a_loop():
    """The batched program has no per-item loop (split / stack) and computes the per-sample conv
    filter gradients as forward convolutions (the rule's trick), so its size does not grow with
    the batch."""
    from mycel import _mycel
    from mycel.common import vmap as vmap_module
    mycel.set_seed(0)
    net = LeNet5()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def loss_fn(x, y):
        return ce(net(ops.expand_dims(x, 0)), ops.expand_dims(y, 0))

    per_sample = ops.vmap(ops.grad(loss_fn, grad_position=None, weights=net.trainable_params()))
    base, chain = vmap_module.transform_chain(per_sample, 2)
    assert [c["kind"] for c in chain] == ["grad", "vmap"]
    program = _mycel.graph.transformed(base, chain)
    texts = []
    for b in (4, 16):
        x = Tensor(np.zeros((b, 1, 32, 32), np.float32))
        y = Tensor(np.zeros((b,), np.int32))
        program(x, y)
        texts.append(program.program_text(x, y))
    for text in texts:
        assert " split(" not in text and " stack(" not in text
        assert "conv2d_backprop_filter" not in text
    assert len(texts[0].splitlines()) == len(texts[1].splitlines())


class _TokenMixer(nn.Cell):
    """Dense -> LayerNorm -> GELU -> Dense over a sequence of tokens (a transformer block's MLP)."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Dense(6, 8)
        self.norm = nn.LayerNorm((8,))
        self.out = nn.Dense(8, 3)

    def construct(self, x):
        return self.out(ops.gelu(self.norm(self.inp(x))))


@pytest.mark.parametrize("mode", [context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_layer_norm_model_per_sample_gradients_equal_the_loop(mode):
    old = context.get_context("mode")
    context.set_context(mode=mode)
    try:
        mycel.set_seed(2)
        net = _TokenMixer()
        for p in net.trainable_params():  # LayerNorm's gamma/beta away from 1/0, so both matter
            p.set_data(Tensor(p.asnumpy() + np.random.default_rng(3).standard_normal(p.shape).astype(np.float32) * 0.1))
        weights = net.trainable_params()

        def loss_fn(x, t):  # one sample: 4 tokens of 6 features
            d = net(x) - t
            return (d * d).mean()
        rng = np.random.default_rng(1)
        x = rng.standard_normal((5, 4, 6)).astype(np.float32)
        t = rng.standard_normal((5, 4, 3)).astype(np.float32)
        grad_fn = ops.grad(loss_fn, grad_position=None, weights=weights)
        per_sample = ops.vmap(grad_fn)(Tensor(x), Tensor(t))
        loop = [grad_fn(Tensor(x[i]), Tensor(t[i])) for i in range(5)]
        for k, w in enumerate(weights):
            want = np.stack([loop[i][k].asnumpy() for i in range(5)])
            np.testing.assert_allclose(per_sample[k].asnumpy(), want, rtol=1e-4, atol=1e-6, err_msg=w.name)
    finally:
        context.set_context(mode=old)
