"""Issue 14 (compat19): the MindSpore names that were still missing, against numpy references in
both modes where a mode applies. Tensor methods (choose, itemset, resize, renorm, storage_offset,
assign_value, init_data, ...), nn.SyncBatchNorm (single process; mpirun -n 2 against BatchNorm of
the concatenated batch), nn.AdaptiveMaxPool2d(return_indices=True), nn.AdamOffload, the AdaSum
wrappers, the sparse optimizer primitives and the small primitives of the 1.9 list."""
import numpy as np
import pytest

import mycel as ms
import mycel.communication as comm
from mycel import Parameter, Tensor, nn, ops
from mycel.nn.wrap.adasum import adasum_tree

from mpi_helpers import requires_mpi, run_mpi

RNG = np.random.default_rng(19)
MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


@pytest.fixture(params=MODES, ids=["eager", "graph"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


def T(a, dtype=None):
    return Tensor(np.asarray(a) if dtype is None else np.asarray(a, dtype))


class Fn(nn.Cell):
    """A Cell running fn (a lambda over its inputs) so that graph mode compiles it."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *xs):
        return self.fn(*xs)


# ---- Tensor methods -------------------------------------------------------------------------------
class _Choose(nn.Cell):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def construct(self, x, c):
        return x.choose(c, self.how)


class _ChooseSeq(nn.Cell):
    def construct(self, x, a, b, c):
        return x.choose((a, b, c))


@pytest.mark.parametrize("how", ["clip", "wrap"])
def test_choose_matches_numpy(mode, how):
    idx = np.array([[0, 2, 5], [-1, 1, 3]], np.int64)  # out of range on purpose
    choices = RNG.normal(size=(3, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(_Choose(how)(T(idx), T(choices)).asnumpy(), np.choose(idx, choices, mode=how))
    # a sequence of tensors broadcast against the index: numpy's choose does the same
    a, b, c = (RNG.normal(size=s).astype(np.float32) for s in [(1, 3), (2, 1), (3,)])
    x = np.array([[0, 1, 2], [2, 1, 0]])
    np.testing.assert_array_equal(_ChooseSeq()(T(x), T(a), T(b), T(c)).asnumpy(), np.choose(x, [a, b, c]))


def test_choose_docs_example_and_errors():
    choices = [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23], [30, 31, 32, 33]]
    x = np.array([2, 3, 1, 0])
    np.testing.assert_array_equal(T(x).choose(choices).asnumpy(), np.choose(x, choices))
    with pytest.raises(ValueError, match=r"mode='raise'.*\[0, 2\)"):
        T(np.array([0, 2])).choose([[1, 2], [3, 4]], mode="raise")
    np.testing.assert_array_equal(T(np.array([1, 0])).choose([[1, 2], [3, 4]], mode="raise").asnumpy(), [3, 2])
    with pytest.raises(ValueError, match="mode"):
        T(x).choose(choices, mode="bad")
    with pytest.raises(ValueError, match="broadcast"):
        T(np.zeros((2, 3), np.int64)).choose([np.zeros(4), np.zeros(4)])


def test_itemset_resize_renorm_match_numpy(mode):
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    for args in [((0, 1), 4.0), (5, 7.5), (-1, 2.0), ((-1, -2), 3.0)]:
        want = x.copy()
        want[np.unravel_index(args[0] % x.size, x.shape) if isinstance(args[0], int) else args[0]] = args[1]
        got = Fn(lambda t, a=args: t.itemset(a[0], a[1]))(T(x))  # graph mode: no *args calls
        np.testing.assert_array_equal(got.asnumpy(), want)
    one = T(np.array([3], np.int32))
    assert one.itemset(9).asnumpy().tolist() == [9]
    for shape in [(2, 2), (4, 4), (12,), (2, 3, 3), (0,)]:
        want = x.copy()
        want.resize(shape, refcheck=False)  # ndarray.resize: row-major, zero-padded
        np.testing.assert_array_equal(Fn(lambda t, s=shape: t.resize(s))(T(x)).asnumpy(), want)
    np.testing.assert_array_equal(Fn(lambda t: t.resize(2, 7))(T(x)).asnumpy(), _zero_resize(x, (2, 7)))
    for p, axis, maxnorm in [(1, 0, 6.0), (2, 1, 1.5), (3, -1, 0.7), (2.5, 0, 100.0)]:
        got = Fn(lambda t, a=(p, axis, maxnorm): t.renorm(a[0], a[1], a[2]))(T(x)).asnumpy()
        np.testing.assert_allclose(got, _renorm(x, p, axis, maxnorm), rtol=1e-5, atol=1e-6)


def _zero_resize(x, shape):
    out = np.zeros(int(np.prod(shape)), x.dtype)
    n = min(out.size, x.size)
    out[:n] = x.ravel()[:n]
    return out.reshape(shape)


def _renorm(x, p, axis, maxnorm):
    """Each slice along axis scaled to p-norm maxnorm when its norm is above it."""
    axis %= x.ndim
    other = tuple(d for d in range(x.ndim) if d != axis)
    norm = (np.abs(x.astype(np.float64)) ** p).sum(other, keepdims=True) ** (1.0 / p)
    return np.where(norm > maxnorm, x / norm * maxnorm, x)


def test_renorm_docs_example_gradient_and_errors():
    x = np.array([[1., 1, 1], [2, 2, 2], [3, 3, 3]], np.float32)
    np.testing.assert_array_equal(ops.renorm(T(x), 1, 0, 6.).asnumpy(), [[1, 1, 1], [2, 2, 2], [2, 2, 2]])
    # gradient against central finite differences in float64
    a = RNG.normal(size=(3, 4))
    w = RNG.normal(size=(3, 4))
    f = lambda t: (ops.renorm(t, 2, 0, 1.2) * Tensor(w)).sum()  # noqa: E731
    got = ms.grad(f)(Tensor(a)).asnumpy()
    num = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += 1e-6
        lo[i] -= 1e-6
        num[i] = ((_renorm(hi, 2, 0, 1.2) * w).sum() - (_renorm(lo, 2, 0, 1.2) * w).sum()) / 2e-6
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="'p' must be a number > 0"):
        ops.renorm(T(x), 0, 0, 1.0)
    with pytest.raises(ValueError, match="'axis' must be in"):
        T(x).renorm(2, 2, 1.0)
    with pytest.raises(IndexError, match="out of bounds"):
        T(x).itemset((0, 3), 1.0)
    with pytest.raises(IndexError, match="one int per dimension"):
        T(x).itemset((0,), 1.0)
    with pytest.raises(IndexError, match="one element"):
        T(x).itemset(1.0)
    with pytest.raises(ValueError, match="non-negative ints"):
        T(x).resize(2, -1)


def test_storage_state_methods():
    x = T(np.arange(12, dtype=np.float32).reshape(3, 4))
    base = x.asnumpy().ctypes.data
    for view in [x[1], x[1:], x[2], x]:  # leading-slice views share x's storage
        want = (view.asnumpy().ctypes.data - base) // x.itemsize
        assert view.storage_offset() == want
    assert x[1].storage_offset() == 4 and Tensor([1.0, 2.0]).storage_offset() == 0
    assert x.is_contiguous() and ops.transpose(x, (1, 0)).is_contiguous()
    # assign_value: the same object takes the value's shape, dtype and data
    y = Tensor([1, 2, 3, 4])
    v = np.array([[1.5, 2.5], [3.5, 4.5]], np.float32)
    assert y.assign_value(T(v)) is y
    np.testing.assert_array_equal(y.asnumpy(), v)
    assert y.shape == (2, 2) and y.dtype == ms.float32
    # initialization happens when a tensor is made, so init_data hands it back
    t = Tensor(shape=(2, 2), dtype=ms.float32, init=ms.common.initializer.One())
    assert t.has_init is False and t.init_data() is t
    np.testing.assert_array_equal(t.asnumpy(), np.ones((2, 2)))
    with pytest.raises(ValueError, match="Tensor.init_data: argument 'shape'"):
        t.init_data(shape=(4,))
    assert t.const_arg is False and t.set_const_arg() is t and t.const_arg is True
    with pytest.raises(TypeError, match="'const_arg' must be a bool"):
        t.set_const_arg(1)


# ---- nn -------------------------------------------------------------------------------------------
def _numpy_bn(x, gamma, beta, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    m, v = x.mean(axes), x.var(axes)
    y = (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * gamma.reshape(shape) + beta.reshape(shape)
    return y, m, v * (x.size // x.shape[1]) / (x.size // x.shape[1] - 1)


def test_sync_batch_norm_single_process_is_batch_norm(mode):
    x = (RNG.normal(size=(4, 3, 2, 5)) * 2 + 1).astype(np.float32)
    a, b = nn.SyncBatchNorm(3), nn.BatchNorm2d(3)
    assert a.group is None
    y, m, v = _numpy_bn(x.astype(np.float64), np.ones(3), np.zeros(3))
    for net in (a, b):
        net.set_train()
        np.testing.assert_allclose(net(T(x)).asnumpy(), y, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(net.moving_mean.asnumpy(), 0.1 * m, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(net.moving_variance.asnumpy(), 0.9 + 0.1 * v, rtol=1e-5)
        net.set_train(False)
    np.testing.assert_allclose(a(T(x)).asnumpy(), b(T(x)).asnumpy(), rtol=1e-6)


class _Loss(nn.Cell):
    def __init__(self, net, w):
        super().__init__()
        self.net = net
        self.w = Tensor(w)

    def construct(self, x):
        return (self.net(x) * self.w).sum()


def test_sync_batch_norm_synced_math_on_a_world_of_one(mode):
    """The all-reduce path on one rank (the AllReduce is the identity there): numpy's batch norm,
    its moving statistics, and the gradient of the same loss as BatchNorm's."""
    comm.init()
    x = (RNG.normal(size=(5, 3, 4)) * 3 + 2).astype(np.float32)
    w = RNG.normal(size=x.shape).astype(np.float32)
    gamma = RNG.uniform(0.5, 1.5, 3).astype(np.float32)
    synced = nn.SyncBatchNorm(3, gamma_init=T(gamma))
    synced._allreduce = ops.AllReduce(op="sum")  # force the group path
    plain = nn.BatchNorm1d(3, gamma_init=T(gamma))
    y, m, v = _numpy_bn(x.astype(np.float64), gamma, np.zeros(3))
    grads = []
    for net in (synced, plain):
        net.set_train()
        np.testing.assert_allclose(net(T(x)).asnumpy(), y, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(net.moving_mean.asnumpy(), 0.1 * m, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(net.moving_variance.asnumpy(), 0.9 + 0.1 * v, rtol=1e-4)
        loss = _Loss(net, w)
        grads.append(ms.grad(loss, 0, net.trainable_params())(T(x)))
    np.testing.assert_allclose(grads[0][0].asnumpy(), grads[1][0].asnumpy(), rtol=1e-3, atol=1e-4)
    for g0, g1 in zip(grads[0][1], grads[1][1]):
        np.testing.assert_allclose(g0.asnumpy(), g1.asnumpy(), rtol=1e-4, atol=1e-4)


def test_sync_batch_norm_arguments():
    with pytest.raises(TypeError, match="'process_groups' must be a list of rank-id lists"):
        nn.SyncBatchNorm(3, process_groups=(0, 1))
    with pytest.raises(ValueError, match="momentum"):
        nn.SyncBatchNorm(3, momentum=2.0)
    with pytest.raises(ValueError, match="SyncBatchNorm: input 'x' must be 2 or 3 or 4 or 5-D"):
        nn.SyncBatchNorm(3)(T(np.zeros(3, np.float32)))
    assert nn.SyncBatchNorm(3, process_groups=0).group is None


@requires_mpi
def test_sync_batch_norm_two_ranks_equal_batch_norm_of_the_concatenation():
    import re
    rc, out = run_mpi(2, "sync_batch_norm.py", timeout=180)
    assert rc == 0, out
    done = re.findall(r"rank (\d+) ok: (\d+) checks", out)
    assert sorted(int(r) for r, _ in done) == [0, 1] and all(int(n) >= 40 for _, n in done), out


def test_adaptive_max_pool2d_return_indices(mode):
    x = RNG.normal(size=(2, 3, 7, 9)).astype(np.float32)
    for out in [(3, 4), 2, (None, 5)]:
        y, idx = nn.AdaptiveMaxPool2d(out, return_indices=True)(T(x))
        oh, ow = (out, out) if isinstance(out, int) else (out[0] or 7, out[1] or 9)
        assert y.shape == (2, 3, oh, ow) and idx.dtype == ms.int64
        for i in range(oh):
            for j in range(ow):
                h0, h1 = i * 7 // oh, -(-(i + 1) * 7 // oh)
                w0, w1 = j * 9 // ow, -(-(j + 1) * 9 // ow)
                win = x[:, :, h0:h1, w0:w1].reshape(2, 3, -1)
                np.testing.assert_allclose(y.asnumpy()[:, :, i, j], win.max(-1), rtol=1e-6)
                k = win.argmax(-1)
                want = (h0 + k // (w1 - w0)) * 9 + w0 + k % (w1 - w0)
                np.testing.assert_array_equal(idx.asnumpy()[:, :, i, j], want)
    np.testing.assert_allclose(nn.AdaptiveMaxPool2d(2)(T(x)).asnumpy(),
                               nn.AdaptiveMaxPool2d(2, True)(T(x))[0].asnumpy())
    with pytest.raises(TypeError, match="return_indices"):
        nn.AdaptiveMaxPool2d(2, return_indices=1)


def _adam_numpy(p, g, steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, nesterov=False):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t in range(1, steps + 1):
        gt = g + wd * p
        m = b1 * m + (1 - b1) * gt
        v = b2 * v + (1 - b2) * gt * gt
        num = b1 * m + (1 - b1) * gt if nesterov else m
        p = p - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * num / (np.sqrt(v) + eps)
    return p


@pytest.mark.parametrize("nesterov", [False, True])
def test_adam_offload_is_adam(mode, nesterov):
    p0 = RNG.normal(size=(3, 2))
    g = RNG.normal(size=(3, 2))
    w = Parameter(Tensor(p0.astype(np.float32)), name="w")
    opt = nn.AdamOffload([w], learning_rate=0.01, use_nesterov=nesterov, weight_decay=0.1)
    for _ in range(3):
        opt((T(g, np.float32),))
    np.testing.assert_allclose(w.asnumpy(), _adam_numpy(p0, g, 3, wd=0.1, nesterov=nesterov), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="AdamOffload.*beta1"):
        nn.AdamOffload([w], beta1=1.5)
    with pytest.raises(TypeError):
        nn.AdamOffload([w], use_amsgrad=True)


def _adasum_numpy(vs):
    vs = [np.asarray(v, np.float64).ravel() for v in vs]
    while len(vs) > 1:
        vs = [(1 - a @ b / (2 * (a @ a))) * a + (1 - a @ b / (2 * (b @ b))) * b for a, b in zip(vs[0::2], vs[1::2])]
    return vs[0]


def test_adasum_tree_rule():
    rows = RNG.normal(size=(8, 5))
    np.testing.assert_allclose(adasum_tree(Tensor(rows)).asnumpy(), _adasum_numpy(rows), rtol=1e-12)
    # the paper's two limits: orthogonal updates add, equal ones average
    e = np.eye(4)[:2] * [[2.0], [3.0]]
    np.testing.assert_allclose(adasum_tree(Tensor(e)).asnumpy(), e.sum(0), rtol=1e-12)
    same = np.tile(rows[:1], (4, 1))
    np.testing.assert_allclose(adasum_tree(Tensor(same)).asnumpy(), rows[0], rtol=1e-12)
    z = np.stack([np.zeros(5), rows[1]])  # a zero update has no direction
    np.testing.assert_allclose(adasum_tree(Tensor(z)).asnumpy(), rows[1], rtol=1e-12)


@pytest.mark.parametrize("wrap", [nn.AdaSumByGradWrapCell, nn.AdaSumByDeltaWeightWrapCell])
def test_adasum_wrappers_single_process_are_the_optimizer(mode, wrap):
    p0 = RNG.normal(size=(4, 3)).astype(np.float32)
    g = RNG.normal(size=(4, 3)).astype(np.float32)
    a, b = Parameter(T(p0), name="a"), Parameter(T(p0), name="b")
    wrap(nn.Momentum([a], 0.1, 0.9))((T(g),))
    nn.Momentum([b], 0.1, 0.9)((T(g),))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    np.testing.assert_allclose(a.asnumpy(), p0 - 0.1 * g, rtol=1e-6)
    with pytest.raises(TypeError, match="'optimizer' must be an nn.Optimizer"):
        wrap(nn.Dense(2, 2))


@requires_mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_adasum_wrappers_across_ranks(ranks):
    import re
    rc, out = run_mpi(ranks, "adasum.py", timeout=180)
    assert rc == 0, out
    done = re.findall(r"rank (\d+) ok: (\d+) checks", out)
    assert sorted(int(r) for r, _ in done) == list(range(ranks)) and all(int(n) == 18 for _, n in done), out


# ---- primitives -----------------------------------------------------------------------------------
def _params(*arrays):
    return [Parameter(T(a, np.float32), name=f"p{i}") for i, a in enumerate(arrays)]


def _dense_grad(shape, grad, idx):
    g = np.zeros(shape)
    np.add.at(g, idx, grad)  # repeated indices add up
    rows = np.zeros(shape[0], bool)
    rows[idx] = True
    return g, rows


def _ftrl_numpy(var, accum, linear, g, lr, l1, l2, lr_power, shrink=0.0):
    a_new = accum + g * g
    lin = linear + (g + 2 * shrink * var) - (a_new ** -lr_power - accum ** -lr_power) / lr * var
    quad = a_new ** -lr_power / lr + 2 * l2
    return np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / quad, 0.0), a_new, lin


def _apply(prim, ps, rest):
    """prim(*ps, *rest) in the current mode (graph mode parses no *args lambdas: one per arity)."""
    def two(a, b):
        return prim(*ps, a, b)

    def five(a, b, c, d, e):
        return prim(*ps, a, b, c, d, e)

    def seven(a, b, c, d, e, f, g):
        return prim(*ps, a, b, c, d, e, f, g)

    def eight(a, b, c, d, e, f, g, h):
        return prim(*ps, a, b, c, d, e, f, g, h)
    return Fn({2: two, 5: five, 7: seven, 8: eight}[len(rest)])(*rest)


def test_sparse_optimizer_primitives_match_numpy(mode):
    var0 = RNG.normal(size=(5, 3))
    acc0 = RNG.uniform(0.5, 1.5, size=(5, 3))
    lin0 = RNG.normal(size=(5, 3))
    grad = RNG.normal(size=(4, 3))
    idx = np.array([3, 0, 3, 1], np.int32)  # a repeat: merged by summing
    g, rows = _dense_grad((5, 3), grad, idx)

    def run(prim, *arrays_then_rest):
        n = sum(isinstance(a, np.ndarray) and a.shape == var0.shape for a in arrays_then_rest)
        ps = _params(*arrays_then_rest[:n])
        rest = [T(a, a.dtype if a.dtype.kind in "iu" else np.float32) if isinstance(a, np.ndarray) else a
                for a in arrays_then_rest[n:]]
        _apply(prim, ps, rest)
        return [p.asnumpy() for p in ps]

    def keep(new, old):
        return np.where(rows[:, None], new, old)

    a_new = acc0 + g * g
    v, a = run(ops.SparseApplyAdagradV2(0.1, 1e-6), var0, acc0, grad, idx)
    np.testing.assert_allclose(v, keep(var0 - 0.1 * g / (np.sqrt(a_new) + 1e-6), var0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, keep(a_new, acc0), rtol=1e-5)
    v, a = run(ops.SparseApplyAdagrad(0.1, update_slots=False), var0, acc0, grad, idx)
    np.testing.assert_allclose(v, keep(var0 - 0.1 * g / np.sqrt(acc0), var0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, acc0, rtol=1e-6)
    for prim in (ops.SparseApplyProximalAdagrad(), ops.FusedSparseProximalAdagrad()):
        v, a = run(prim, var0, acc0, T(0.1, np.float32), T(0.05, np.float32), T(0.2, np.float32), grad, idx)
        lr_t = 0.1 / np.sqrt(a_new)
        pv = var0 - lr_t * g
        want = np.sign(pv) * np.maximum(np.abs(pv) - lr_t * 0.05, 0) / (1 + lr_t * 0.2)
        np.testing.assert_allclose(v, keep(want, var0), rtol=1e-5, atol=1e-6)
    for prim, shrink in ((ops.SparseApplyFtrl(0.1, 0.01, 0.02, -0.5), 0.0),
                         (ops.FusedSparseFtrl(0.1, 0.01, 0.02, -0.5), 0.0),
                         (ops.SparseApplyFtrlV2(0.1, 0.01, 0.02, 0.3, -0.5), 0.3)):
        v, a, lin = run(prim, var0, acc0, lin0, grad, idx)
        wv, wa, wl = _ftrl_numpy(var0, acc0, lin0, g, 0.1, 0.01, 0.02, -0.5, shrink)
        np.testing.assert_allclose(v, keep(wv, var0), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(a, keep(wa, acc0), rtol=1e-5)
        np.testing.assert_allclose(lin, keep(wl, lin0), rtol=1e-4, atol=1e-6)
    m0, v0 = RNG.normal(size=(5, 3)) * 0.1, RNG.uniform(0.1, 0.2, size=(5, 3))
    hyper = [T([0.9 ** 2], np.float32), T([0.999 ** 2], np.float32), T([0.01], np.float32), T([0.9], np.float32),
             T([0.999], np.float32), T([1e-8], np.float32)]
    m_new, v_new = 0.9 * m0 + 0.1 * g, 0.999 * v0 + 0.001 * g * g
    step = 0.01 * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2) * m_new / (np.sqrt(v_new) + 1e-8)
    ps = _params(var0, m0, v0)
    _apply(ops.FusedSparseAdam(), ps, hyper + [T(grad, np.float32), T(idx)])
    np.testing.assert_allclose(ps[0].asnumpy(), var0 - step, rtol=1e-4, atol=1e-6)  # every row moves
    np.testing.assert_allclose(ps[1].asnumpy(), m_new, rtol=1e-5, atol=1e-7)
    ps = _params(var0, m0, v0)
    _apply(ops.FusedSparseLazyAdam(), ps, hyper + [T(grad, np.float32), T(idx)])
    np.testing.assert_allclose(ps[0].asnumpy(), keep(var0 - step, var0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ps[2].asnumpy(), keep(v_new, v0), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="SparseApplyAdagradV2: 'indices' must be 1-d"):
        ops.SparseApplyAdagradV2(0.1, 1e-6)(*_params(var0, acc0), T(grad[:, :2], np.float32), T(idx))


def test_adam_no_update_param_and_adagrad_da(mode):
    m0, v0, g = RNG.normal(size=(2, 3)) * 0.1, RNG.uniform(0.1, 0.2, (2, 3)), RNG.normal(size=(2, 3))
    m, v = _params(m0, v0)
    hyper = [T([0.9 ** 3], np.float32), T([0.999 ** 3], np.float32), T([0.01], np.float32), T([0.9], np.float32),
             T([0.999], np.float32), T([1e-8], np.float32)]
    delta = _apply(ops.AdamNoUpdateParam(), (m, v), hyper + [T(g, np.float32)]).asnumpy()
    m_new, v_new = 0.9 * m0 + 0.1 * g, 0.999 * v0 + 0.001 * g * g
    want = -0.01 * np.sqrt(1 - 0.999 ** 3) / (1 - 0.9 ** 3) * m_new / (np.sqrt(v_new) + 1e-8)
    np.testing.assert_allclose(delta, want, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(m.asnumpy(), m_new, rtol=1e-5, atol=1e-7)
    var0, ga0, gs0 = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3)), RNG.uniform(0.5, 1, (2, 3))
    for l1 in (0.0, 0.3):
        var, ga, gs = _params(var0, ga0, gs0)
        Fn(lambda gr: ops.ApplyAdagradDA()(var, ga, gs, gr, 0.1, l1, 0.05, 4))(T(g, np.float32))
        acc, sq = ga0 + g, gs0 + g * g
        tmp = np.sign(acc) * np.maximum(np.abs(acc) - l1 * 4, 0) if l1 > 0 else acc
        np.testing.assert_allclose(var.asnumpy(), -0.1 * tmp / (0.05 * 4 * 0.1 + np.sqrt(sq)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gs.asnumpy(), sq, rtol=1e-5)


def test_small_primitives(mode):
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    dims = np.array([-4, -3, -2, -1, 0, 1, 2, 3], np.int32)
    for src, dst in [("NHWC", "NCHW"), ("NCHW", "NHWC"), ("NHWC", "NHWC")]:
        want = np.array([src.index(dst[d]) for d in dims])  # MindSpore CPU: NHWC->NCHW maps 1 to 3
        got = Fn(lambda t, p=ops.DataFormatDimMap(src, dst): p(t))(T(dims)).asnumpy()
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.int32
    for a, bad in [(x, 0.0), (np.array([1.0, np.inf], np.float32), 1.0), (np.array([np.nan], np.float32), 1.0)]:
        assert Fn(lambda t: ops.FloatStatus()(t))(T(a)).asnumpy().tolist() == [bad]
    parts = [RNG.normal(size=(1, 4)).astype(np.float32) for _ in range(3)]
    np.testing.assert_array_equal(Fn(lambda a, b, c: ops.ParallelConcat()((a, b, c)))(*map(T, parts)).asnumpy(),
                                  np.concatenate(parts))
    np.testing.assert_allclose(Fn(lambda a, b, c: ops.AccumulateNV2()((a, b, c)))(*map(T, parts)).asnumpy(),
                               sum(parts), rtol=1e-6)
    idx = np.array([2, 0, 2], np.int32)
    np.testing.assert_array_equal(Fn(lambda t, i: ops.SparseGatherV2()(t, i, 1))(T(x), T(idx)).asnumpy(), x[:, idx])
    np.testing.assert_array_equal(ops.SameTypeShape()(T(x), T(x + 1)).asnumpy(), x)


def test_checks_and_errors():
    x = T(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="SameTypeShape: 'input_y' dtype"):
        ops.SameTypeShape()(x, T(np.ones((2, 3), np.int32)))
    with pytest.raises(ValueError, match="SameTypeShape: 'input_y' shape"):
        ops.SameTypeShape()(x, T(np.ones((3, 2), np.float32)))
    grads = (x, T(np.ones(3, np.float32)))
    assert ops.CheckBprop()(grads, (x, T(np.zeros(3, np.float32)))) is grads
    with pytest.raises(ValueError, match="gradient 1 has shape"):
        ops.CheckBprop("MyOp")(grads, (x, x))
    with pytest.raises(ValueError, match="returned 2 gradients for 1 arguments"):
        ops.CheckBprop()(grads, (x,))
    assert ops.IsInstance()(1, ms.int64) and not ops.IsInstance()(1.0, ms.int64)
    assert ops.IsInstance()((1,), tuple) and ops.IsInstance()(x, Tensor) and not ops.IsInstance()([1], tuple)
    assert ops.IsSubClass()(ms.float32, ms.float32) and not ops.IsSubClass()(ms.float32, ms.int32)
    assert ops.IsSubClass()(bool, int)
    assert ops.Partial()(lambda a, b, c: a * 100 + b * 10 + c, 1, 2)(3) == 123
    with pytest.raises(ValueError, match="first dim 1"):
        ops.ParallelConcat()((x, x))
    with pytest.raises(ValueError, match="'src_format' must be 'NHWC' or 'NCHW'"):
        ops.DataFormatDimMap("NCDHW")


def test_random_choice_with_mask_and_multinomial_with_replacement(mode):
    x = RNG.random((4, 5)) < 0.4
    trues = {tuple(p) for p in np.argwhere(x)}
    for count in (3, len(trues), 30):
        index, mask = Fn(lambda t, p=ops.RandomChoiceWithMask(count, 7, 1): p(t))(T(x))
        index, mask = index.asnumpy(), mask.asnumpy()
        assert index.shape == (count, 2) and index.dtype == np.int32 and mask.shape == (count,)
        assert mask.sum() == min(count, len(trues))
        picked = [tuple(p) for p in index[mask]]
        assert len(set(picked)) == len(picked) and set(picked) <= trues  # distinct True positions
        assert not index[~mask].any()
    again = ops.choice_with_mask(T(x), 3, 7, 1)[0].asnumpy()
    np.testing.assert_array_equal(again, ops.choice_with_mask(T(x), 3, 7, 1)[0].asnumpy())  # seeded: repeatable
    w = np.array([[1.0, 0.0, 3.0], [0.0, 2.0, 2.0]], np.float32)
    draws = ops.multinomial_with_replacement(T(w), 5, 0, 4000, True).asnumpy()
    assert draws.shape == (2, 4000) and draws.dtype == np.int64
    for row, weights in zip(draws, w):  # frequencies within 5 sigma of the weights
        freq = np.bincount(row, minlength=3) / 4000
        p = weights / weights.sum()
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / 4000) + 1e-12), (freq, p)
    # without replacement: the positive-weight classes, each once
    once = ops.multinomial_with_replacement(T(w), 3, 1, 2, False).asnumpy()
    assert sorted(once[0].tolist()) == [0, 2] and sorted(once[1].tolist()) == [1, 2]
    # (seed, offset) picks a repeatable stream
    a, b = (ops.multinomial_with_replacement(T(w), 5, 0, 50, True).asnumpy() for _ in range(2))
    np.testing.assert_array_equal(a, b)
    assert (ops.multinomial_with_replacement(T(w), 5, 1, 50, True).asnumpy() != a).any()


def test_compute_accidental_hits():
    true = np.array([[1, 2], [0, 4], [3, 3]])
    cand = np.array([0, 1, 2, 3, 4, 3])
    idx, ids, weights = ops.ComputeAccidentalHits(2)(T(true), T(cand))
    # brute force: every (row, label, position) whose values match, in that order
    want = [(i, j) for i in range(3) for k in range(2) for j in range(len(cand)) if cand[j] == true[i, k]]
    assert list(zip(idx.asnumpy().tolist(), ids.asnumpy().tolist())) == want
    assert idx.dtype == ms.int32 and ids.dtype == ms.int64
    np.testing.assert_array_equal(weights.asnumpy(), np.full(len(want), -np.finfo(np.float32).max, np.float32))
    with pytest.raises(ValueError, match=r"shape \(batch, 3\)"):
        ops.ComputeAccidentalHits(3)(T(true), T(cand))


def test_adaptive_max_pool2d_rank_and_renorm_primitive(mode):
    with pytest.raises(ValueError, match="AdaptiveMaxPool2d: input 'x' must be 3 or 4-D, got 0-D"):
        nn.AdaptiveMaxPool2d((2, 2))(T(np.float32(1.0)))
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    got = Fn(lambda t, p=ops.Renorm(2, 1, 1.0): p(t))(T(x)).asnumpy()
    np.testing.assert_allclose(got, _renorm(x, 2, 1, 1.0), rtol=1e-5, atol=1e-6)


def test_adam_use_lazy_and_use_offload_are_adam(mode):
    p0 = RNG.normal(size=(4,))
    g = RNG.normal(size=(4,))
    for kw in ({"use_lazy": True}, {"use_offload": True}):
        w = Parameter(T(p0, np.float32), name="w")
        nn.Adam([w], 0.01, **kw)((T(g, np.float32),))
        np.testing.assert_allclose(w.asnumpy(), _adam_numpy(p0, g, 1), rtol=1e-5, atol=1e-7)
    w = Parameter(T(p0, np.float32), name="w")
    with pytest.raises(ValueError, match="use_lazy and use_offload cannot both be True"):
        nn.Adam([w], use_lazy=True, use_offload=True)
    with pytest.raises(KeyError, match="use_lazy"):
        nn.Adam([w], use_lazzy=True)


class _Clipped(nn.Cell):
    def __init__(self):
        super().__init__()
        self.clip = ops.InsertGradientOf(lambda g: ops.clip_by_value(g, -0.5, 0.5))

    def construct(self, x, w):
        return (ops.sin(self.clip(x * 2.0)) * w).sum()


def test_insert_gradient_of(mode):
    x = RNG.normal(size=(5,)).astype(np.float32)
    w = (RNG.normal(size=(5,)) * 3).astype(np.float32)
    net = _Clipped()
    np.testing.assert_allclose(net(T(x), T(w)).asnumpy(), (np.sin(2 * x) * w).sum(), rtol=1e-5)
    # d/dx: the gradient reaching x * 2 (cos(2x) w) is clipped to [-0.5, 0.5], then times 2
    want = np.clip(np.cos(2 * x) * w, -0.5, 0.5) * 2
    np.testing.assert_allclose(ms.grad(net)(T(x), T(w)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="'f' must be callable"):
        ops.InsertGradientOf(3)


def _lev(a, b):
    """The recursive definition of MindSpore's docs, memoized."""
    import functools

    @functools.lru_cache(None)
    def lev(i, j):
        if min(i, j) == 0:
            return max(i, j)
        return min(lev(i - 1, j) + 1, lev(i, j - 1) + 1, lev(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
    return lev(len(a), len(b))


def test_edit_distance():
    # MindSpore's documented example: hypothesis indices past its own shape count in the larger one
    hi = np.array([[0, 0, 0], [1, 0, 1], [1, 1, 1]], np.int64)
    ti = np.array([[0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1]], np.int64)
    args = (T(hi), T(np.float32([1, 2, 3])), T(np.int64([1, 1, 2])), T(ti), T(np.float32([1, 3, 2, 1])),
            T(np.int64([2, 2, 2])))
    np.testing.assert_array_equal(ops.EditDistance()(*args).asnumpy(), [[1, 1], [1, 1]])
    # random batches of sequences against the recursive definition
    hyp = [list(RNG.integers(0, 3, RNG.integers(0, 5))) for _ in range(6)]
    tru = [list(RNG.integers(0, 3, RNG.integers(0, 5))) for _ in range(6)]

    def sparse(seqs):
        idx = [[b // 3, b % 3, k] for b, s in enumerate(seqs) for k in range(len(s))]
        vals = [v for s in seqs for v in s]
        return (T(np.array(idx, np.int64).reshape(-1, 3)), T(np.array(vals, np.int32)),
                T(np.int64([2, 3, max(1, max(map(len, seqs)))])))
    for normalize in (False, True):
        got = ops.EditDistance(normalize)(*sparse(hyp), *sparse(tru)).asnumpy()
        for b in range(6):
            d = _lev(tuple(tru[b]), tuple(hyp[b]))
            want = d if not normalize else (d / len(tru[b]) if tru[b] else (np.inf if hyp[b] else 0.0))
            assert got[b // 3, b % 3] == np.float32(want), (b, hyp[b], tru[b], got[b // 3, b % 3], want)
    with pytest.raises(ValueError, match="outside the output shape"):
        ops.EditDistance()(T(np.int64([[5, 0]])), T(np.float32([1])), T(np.int64([1, 1])),
                           T(np.int64([[0, 0]])), T(np.float32([1])), T(np.int64([2, 2])))
    with pytest.raises(ValueError, match="EditDistance: indices must be"):
        ops.EditDistance()(*args[:5], T(np.int64([2, 2])))


def _no_repeat_ngram(seq, logp, n):
    """Brute force: ban the token after every earlier occurrence of the last n - 1 tokens."""
    out = logp.copy()
    for pos in np.ndindex(*seq.shape[:-1]):
        s = list(seq[pos])
        tail = s[len(s) - n + 1:]
        for i in range(len(s) - n + 1):
            if s[i:i + n - 1] == tail:
                out[pos + (s[i + n - 1],)] = -np.finfo(np.float32).max
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_no_repeat_ngram(mode, n):
    seq = RNG.integers(0, 4, size=(2, 3, 7)).astype(np.int32)
    seq[0, 0] = [1, 2, 1, 2, 3, 1, 2]  # the tail (1, 2) occurs twice before
    logp = RNG.random((2, 3, 6)).astype(np.float32)
    got = Fn(lambda s, p, op=ops.NoRepeatNGram(n): op(s, p))(T(seq), T(logp)).asnumpy()
    np.testing.assert_array_equal(got, _no_repeat_ngram(seq, logp, n))
    with pytest.raises(ValueError, match="'ngram_size' must be an int >= 1"):
        ops.NoRepeatNGram(0)


def _ctc_brute(logits, labels, length, blank):
    """-log of the summed probability of every alignment that collapses to labels (enumerated)."""
    import itertools
    x = logits[:length].astype(np.float64)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(x.shape[1]), repeat=length):
        merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]
        if [c for c in merged if c != blank] == list(labels):
            total += np.prod([p[t, c] for t, c in enumerate(path)])
    return -np.log(total)


def test_ctc_loss_primitive(mode):
    t_max, batch, classes = 4, 3, 3  # blank = 2
    x = RNG.normal(size=(t_max, batch, classes))
    labels = [[0, 1], [1, 1], [0]]
    lengths = np.array([4, 4, 3], np.int32)
    indices = np.array([[b, k] for b, seq in enumerate(labels) for k in range(len(seq))], np.int64)
    values = np.array([v for seq in labels for v in seq], np.int32)
    loss, grad = Fn(lambda a, b, c, d, p=ops.CTCLoss(): p(a, b, c, d))(T(x), T(indices), T(values), T(lengths))
    want = [_ctc_brute(x[:, b], labels[b], lengths[b], 2) for b in range(batch)]
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-9)
    num = np.zeros_like(x)  # the gradient of the summed losses, by central differences
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += 1e-6
        lo[i] -= 1e-6
        num[i] = sum(_ctc_brute(hi[:, b], labels[b], lengths[b], 2) - _ctc_brute(lo[:, b], labels[b], lengths[b], 2)
                     for b in range(batch)) / 2e-6
    np.testing.assert_allclose(grad.asnumpy(), num, rtol=1e-5, atol=1e-7)
    with pytest.raises(NotImplementedError, match="ctc_merge_repeated=True"):
        ops.CTCLoss(ctc_merge_repeated=False)


class _Hooked(nn.Cell):
    def __init__(self, hook):
        super().__init__()
        self.hook = hook

    def construct(self, x, y):
        return (self.hook(x * y) * y).sum()


@pytest.mark.parametrize("scale", [None, 10.0])
def test_hook_backward(mode, scale):
    seen = []

    def hook_fn(grad):  # sees d loss / d(x * y) = y; may replace it
        seen.append(grad[0].asnumpy().copy())
        return None if scale is None else (grad[0] * scale,)
    x = RNG.normal(size=(3,)).astype(np.float32)
    y = RNG.normal(size=(3,)).astype(np.float32)
    gx, gy = ms.grad(_Hooked(ops.HookBackward(hook_fn)), (0, 1))(T(x), T(y))
    s = 1.0 if scale is None else scale
    np.testing.assert_allclose(seen[-1], y, rtol=1e-6)
    np.testing.assert_allclose(gx.asnumpy(), s * y * y, rtol=1e-5)
    np.testing.assert_allclose(gy.asnumpy(), s * y * x + x * y, rtol=1e-5)
    with pytest.raises(TypeError, match="'hook_fn' must be callable"):
        ops.HookBackward(None)


def _rnnt_brute(acts, labels, t_len, blank):
    """-log of the summed probability of every monotone lattice path (enumerated): t_len - 1
    blank steps and len(labels) label steps in some order, then the final blank."""
    import itertools
    lp = acts - np.log(np.exp(acts).sum(-1, keepdims=True))
    steps, total = t_len - 1 + len(labels), 0.0
    for emits in itertools.combinations(range(steps), len(labels)):
        t = u = 0
        logp = 0.0
        for k in range(steps):
            if k in emits:
                logp += lp[t, u, labels[u]]
                u += 1
            else:
                logp += lp[t, u, blank]
                t += 1
        total += np.exp(logp + lp[t, u, blank])
    return -np.log(total)


def test_rnnt_loss_primitive(mode):
    b, t_max, u1, v = 2, 3, 3, 4
    acts = RNG.normal(size=(b, t_max, u1, v))
    labels = np.array([[1, 2], [3, 0]], np.int32)
    t_len, l_len = np.array([3, 2], np.int32), np.array([2, 1], np.int32)

    def ref(a):
        return [_rnnt_brute(a[i], list(labels[i, :l_len[i]]), t_len[i], 0) for i in range(b)]
    costs, grads = Fn(lambda a, c, d, e, p=ops.RNNTLoss(0): p(a, c, d, e))(T(acts), T(labels), T(t_len), T(l_len))
    np.testing.assert_allclose(costs.asnumpy(), ref(acts), rtol=1e-9)
    num = np.zeros_like(acts)
    for i in np.ndindex(acts.shape):
        hi, lo = acts.copy(), acts.copy()
        hi[i] += 1e-6
        lo[i] -= 1e-6
        num[i] = (sum(ref(hi)) - sum(ref(lo))) / 2e-6
    np.testing.assert_allclose(grads.asnumpy(), num, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="RNNTLoss: 'acts' must be"):
        ops.RNNTLoss()(T(acts), T(labels[:, :1]), T(t_len), T(l_len))


def test_op_info_register_vocabulary():
    from mycel.ops import AiCPURegOp, CustomRegOp, DataType, TBERegOp, custom_info_register, op_info_register
    assert DataType.F32_Default == ("float32", "DefaultFormat") and DataType.I8_5HD == ("int8", "NC1HWC0")
    assert DataType.F16_Default_Tuple == ("float16", "DefaultFormat", "tuple") and DataType.None_None == ("", "")
    info = (CustomRegOp().input(0, "x").input(1, "y").output(0, "z").attr("scale", "required", "float", value=2.0)
            .dtype_format(DataType.F32_Default, DataType.F32_Default, DataType.F32_Default).target("CPU").get_op_info())
    assert info["imply_type"] == "Custom" and info["target"] == "CPU"
    assert [i["name"] for i in info["inputs"]] == ["x", "y"] and info["attr"][0]["value"] == 2.0
    assert info["dtype_format"] == [(("float32", "DefaultFormat"),) * 3]
    with pytest.raises(ValueError, match="one \\(dtype, format\\) pair per input and output \\(3\\), got 2"):
        CustomRegOp().input(0, "x").input(1, "y").output(0, "z").dtype_format(DataType.F32_Default, DataType.F32_Default)

    @custom_info_register(info)
    def add(x, y):
        return x + y
    assert add.reg_info == [info]  # the function itself, with its info attached
    op = ops.Custom(add, lambda a, b: a, lambda a, b: a, func_type="pyfunc", reg_info=info)
    a, b = RNG.normal(size=(3,)).astype(np.float32), RNG.normal(size=(3,)).astype(np.float32)
    np.testing.assert_allclose(op(T(a), T(b)).asnumpy(), a + b, rtol=1e-6)
    tbe = TBERegOp("MyOp").fusion_type("ELEMWISE").kernel_name("my_op").input(0, "x").output(0, "y")
    assert op_info_register(tbe)(add) is add and tbe.get_op_info()["kernel_name"] == "my_op"
    assert AiCPURegOp("Cast").get_op_info()["imply_type"] == "AiCPU"
    assert ops.get_vm_impl_fn(ops.Abs())(T(np.float32([-2.0]))).asnumpy().tolist() == [2.0]
