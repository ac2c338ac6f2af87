"""A bf16 relu mask product folded into the matmul that produces its dy (backend/
fuse_mask_product.cc, cpu::matmul_rows_then): dx = (a @ b) * cast(y > t) as one launch, each
thread masking the rows of the product it has just written. Against a float64 numpy product of
the same bf16 values (within bf16 rounding), at 1, 2 and 3 threads, row counts the threads do and
do not divide, 2-d and 3-d a; the same bits as the unfolded program (MYCEL_FUSE_MASK_MATMUL=0);
and a small bf16 O2 network's training steps with the fold on and off."""
import numpy as np
import pytest

import mycel
from mycel import amp, nn, ops, Tensor
from bf16_reference import bf16_round


pytestmark = pytest.mark.usefixtures("graph_mode")


class MaskedMatmul(nn.Cell):
    """dx = (a @ b) * cast(y > 0) in bf16: a relu's backward after a dense layer's dx."""

    def __init__(self, less=False):
        super().__init__()
        self.less = less

    def construct(self, a, b, y):
        t = ops.zeros((), y.dtype)
        m = ops.less(y, t) if self.less else ops.greater(y, t)
        return ops.mul(ops.matmul(a, b), ops.cast(m, mycel.bfloat16))


def _case(a_shape, n, seed):
    rng = np.random.default_rng(seed)
    k = a_shape[-1]
    a = bf16_round(rng.standard_normal(a_shape).astype(np.float32))
    b = bf16_round(rng.standard_normal((k, n)).astype(np.float32))
    y = bf16_round(rng.standard_normal(a_shape[:-1] + (n,)).astype(np.float32))
    y.flat[:3] = [0.0, -0.0, np.nan]  # not > 0, not < 0
    return a, b, y


def _run(monkeypatch, fold, a, b, y, less=False):
    monkeypatch.setenv("MYCEL_FUSE_MASK_MATMUL", "1" if fold else "0")
    f = MaskedMatmul(less)
    args = [Tensor(v).astype(mycel.bfloat16) for v in (a, b, y)]
    got = [f(*args).astype(mycel.float32).asnumpy() for _ in range(2)]  # and the warm launch
    np.testing.assert_array_equal(got[1], got[0])
    return got[0], f.__dict__["_compiled"]._graph.program_text(*args)


# a's shape and N: the transformer's FFN dx (batch_first, 2048 rows of 128 -> 512) scaled down,
# rows no thread count divides (37, 3 x 25), rows below the split's 16 a thread.
SHAPES = [((4, 32, 128), 512), ((37, 64), 96), ((3, 25, 40), 33), ((16, 24), 20), ((96, 130), 64)]


@pytest.mark.parametrize("a_shape,n", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("less", [False, True])
def test_fold_matches_numpy_and_the_unfolded_program(monkeypatch, a_shape, n, threads, less):
    mycel.set_context(num_threads=threads)
    a, b, y = _case(a_shape, n, seed=sum(a_shape) + n)
    got, text = _run(monkeypatch, True, a, b, y, less)
    plain, before = _run(monkeypatch, False, a, b, y, less)
    assert "matmul+mask_product" in text and "matmul+mask_product" not in before, text
    np.testing.assert_array_equal(got, plain)
    with np.errstate(invalid="ignore"):
        mask = (y < 0) if less else (y > 0)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = np.abs(ref) * 2.0 ** -8 + a.shape[-1] * 2.0 ** -22 * (np.abs(a) @ np.abs(b))
    assert (got[~mask] == 0).all()
    err = np.abs(got - ref)[mask]
    assert (err <= tol[mask]).all(), (err - tol[mask]).max()


class FFN(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(24, 64), nn.ReLU(), nn.Dense(64, 48), nn.ReLU(),
                                      nn.Dense(48, 10))

    def construct(self, x):
        return self.body(x)


def _train(monkeypatch, fold, threads):
    monkeypatch.setenv("MYCEL_FUSE_MASK_MATMUL", "1" if fold else "0")
    mycel.set_context(num_threads=threads)
    mycel.set_seed(5)
    net = FFN()
    step = amp.build_train_network(net, nn.Momentum(net.trainable_params(), 0.05, 0.9),
                                   nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                                   level="O2")
    step.set_train(True)
    rng = np.random.default_rng(6)
    x = Tensor(rng.standard_normal((64, 24)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 64).astype(np.int32))
    losses = [float(step(x, y).asnumpy()) for _ in range(5)]
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    return losses, [p.asnumpy() for p in net.trainable_params()], text


@pytest.mark.parametrize("threads", [1, 2])
def test_o2_training_steps_equal_with_the_fold_off(monkeypatch, threads):
    on, off = _train(monkeypatch, True, threads), _train(monkeypatch, False, threads)
    assert on[2].count("matmul+mask_product") == 2 and "matmul+mask_product" not in off[2], on[2]
    assert on[0][-1] < on[0][0]  # it trains
    np.testing.assert_array_equal(on[0], off[0])
    for u, v in zip(on[1], off[1]):
        np.testing.assert_array_equal(u, v)
