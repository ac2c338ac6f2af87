"""MindSpore 2.x functional ops written over the registry ops (ops/function_more/), against
numpy/scipy-free closed forms, with gradients by finite differences and a graph-mode sample."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops

RNG = np.random.default_rng(0)


def T(a):
    return ms.Tensor(np.asarray(a))


def f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def close(got, want, tol=1e-5):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


UNARY = [
    ("asin", lambda a: np.arcsin(a), 0.9), ("arccos", np.arccos, 0.9), ("atan", np.arctan, 3),
    ("sinh", np.sinh, 2), ("cosh", np.cosh, 2), ("arcsinh", np.arcsinh, 3), ("arctanh", np.arctanh, 0.9),
    ("log2", lambda a: np.log2(np.abs(a) + 0.1), None), ("log10", lambda a: np.log10(np.abs(a) + 0.1), None),
    ("trunc", np.trunc, 3), ("exp2", np.exp2, 3), ("sinc", np.sinc, 3), ("deg2rad", np.deg2rad, 100),
    ("rad2deg", np.rad2deg, 3), ("frac", lambda a: a - np.trunc(a), 3), ("negative", np.negative, 3),
    ("hardsigmoid", lambda a: np.clip(a + 3, 0, 6) / 6, 5), ("hardswish", lambda a: a * np.clip(a + 3, 0, 6) / 6, 5),
    ("mish", lambda a: a * np.tanh(np.log1p(np.exp(a))), 3), ("logsigmoid", lambda a: -np.log1p(np.exp(-a)), 3),
    ("tanhshrink", lambda a: a - np.tanh(a), 3), ("softshrink", lambda a: np.sign(a) * np.maximum(np.abs(a) - 0.5, 0), 3),
    ("hardshrink", lambda a: np.where(np.abs(a) > 0.5, a, 0), 3), ("selu", lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a)), 3),
    ("celu", lambda a: np.maximum(a, 0) + np.minimum(np.expm1(a), 0), 3), ("fast_gelu", lambda a: a / (1 + np.exp(-1.702 * a)), 3),
]


@pytest.mark.parametrize("name, ref, scale", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_numpy(name, ref, scale):
    a = f32(4, 5) * (scale if scale else 1)
    if name in ("log2", "log10"):
        close(getattr(ops, name)(T(np.abs(a) + 0.1)), ref(a), 1e-5)
    else:
        close(getattr(ops, name)(T(a)), ref(a.astype(np.float64)), 2e-5)


BINARY = [
    ("hypot", np.hypot), ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2),
    ("remainder", lambda a, b: np.mod(a, b)), ("fmod", np.fmod), ("copysign", np.copysign),
    ("multiply", np.multiply), ("true_divide", np.true_divide), ("arctan2", np.arctan2),
    ("ldexp", lambda a, b: a * 2.0 ** b), ("float_power", np.float_power),
]


@pytest.mark.parametrize("name, ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_against_numpy(name, ref):
    a, b = f32(3, 4) * 3, f32(3, 4) * 2 + 0.1
    if name == "float_power":
        a = np.abs(a) + 0.1
    if name == "ldexp":
        b = np.round(b)
    close(getattr(ops, name)(T(a), T(b)), ref(a.astype(np.float64), b.astype(np.float64)), 1e-5)


def test_hypot_and_logaddexp_do_not_overflow_and_signbit_sees_negative_zero():
    big = np.array([3e30, 0.0], np.float32)
    close(ops.hypot(T(big), T(big)), np.hypot(big.astype(np.float64), big), 1e-5)
    close(ops.logaddexp(T(np.float32([1000.0])), T(np.float32([1000.0]))), [1000 + math.log(2)])
    assert ops.signbit(T(np.float32([-0.0, 0.0, -1.0, 2.0]))).asnumpy().tolist() == [True, False, True, False]
    assert np.isfinite(ms.grad(lambda x: ops.sinc(x).sum())(T(np.float32([0.0, 0.5]))).asnumpy()).all()


def test_divide_rounding_modes_and_subtract_alpha():
    a, b = T(np.float32([-7, 7, 5.5])), T(np.float32([2, -2, 2]))
    close(ops.divide(a, b, rounding_mode="floor"), [-4, -4, 2])
    close(ops.divide(a, b, rounding_mode="trunc"), [-3, -3, 2])
    close(ops.subtract(a, b, alpha=2), [-11, 11, 1.5])
    with pytest.raises(ValueError, match="rounding_mode must be None, 'floor' or 'trunc'"):
        ops.divide(a, b, rounding_mode="round")


def test_linear_algebra_compositions():
    a, b, c = f32(3, 4), f32(4, 5), f32(3, 5)
    v, w = f32(4), f32(3)
    close(ops.mm(T(a), T(b)), a @ b)
    close(ops.outer(T(v), T(w)), np.outer(v, w))
    close(ops.inner(T(a), T(np.ones(4, np.float32))), a.sum(1))
    close(ops.addmv(T(w), T(a), T(v), beta=0.5, alpha=2), 0.5 * w + 2 * a @ v)
    close(ops.addr(T(c[:, :4]), T(w), T(v), beta=2, alpha=3), 2 * c[:, :4] + 3 * np.outer(w, v))
    x1, x2 = f32(2, 3, 4), f32(2, 4, 5)
    close(ops.baddbmm(T(f32(2, 3, 5) * 0), T(x1), T(x2), 1, 2), 2 * x1 @ x2)
    close(ops.addbmm(T(c), T(x1), T(x2)), c + (x1 @ x2).sum(0))
    close(ops.tensor_dot(T(f32(2, 3, 4)), T(f32(4, 3, 5)), ((1, 2), (1, 0))).shape, (2, 5))
    p, q = f32(2, 3, 4), f32(4, 3, 5)
    close(ops.tensor_dot(T(p), T(q), ((1, 2), (1, 0))), np.tensordot(p, q, ((1, 2), (1, 0))))
    k1, k2 = f32(2, 3), f32(3, 2)
    close(ops.kron(T(k1), T(k2)), np.kron(k1, k2))
    u, z = f32(4, 3), f32(4, 3)
    close(ops.cross(T(u), T(z), dim=1), np.cross(u, z, axis=1))
    m = f32(4, 4)
    close(ops.trace(T(m)), np.trace(m))
    q3 = f32(2, 4, 5)
    for off in (-2, 0, 1, 4):
        close(ops.diagonal(T(q3), off, 1, 2), np.diagonal(q3, off, 1, 2))
    d = f32(2, 3)
    close(ops.diag(T(d)), np.einsum("ij,kl->ijkl", np.ones((2, 3)), np.ones((2, 3))) * 0 + np.diag(d.ravel()).reshape(2, 3, 2, 3))
    close(ops.diagflat(T(f32(3)[:2] * 0 + np.float32([1, 2])), 1), np.diagflat([1, 2], 1))
    close(ops.adjoint(T(m)), m.T)


def test_array_compositions():
    x = f32(3, 4)
    close(ops.roll(T(x), 1, 1), np.roll(x, 1, 1))
    close(ops.roll(T(x), (2, -1), (0, 1)), np.roll(x, (2, -1), (0, 1)))
    close(ops.roll(T(x), 5), np.roll(x, 5))
    close(ops.flip(T(x), (0, 1)), np.flip(x, (0, 1)))
    close(ops.fliplr(T(x)), np.fliplr(x))
    close(ops.flipud(T(x)), np.flipud(x))
    close(ops.cat([T(x), T(x)], 1), np.concatenate([x, x], 1))
    close(ops.hstack([T(x), T(x)]), np.hstack([x, x]))
    close(ops.vstack([T(x[0]), T(x)]), np.vstack([x[0], x]))
    close(ops.dstack([T(x), T(x)]), np.dstack([x, x]))
    close(ops.column_stack([T(x[0]), T(x[1])]), np.column_stack([x[0], x[1]]))
    close(ops.block_diag(T(x[:2, :2]), T(x[:1, :3])), np.block([[x[:2, :2], np.zeros((2, 3))], [np.zeros((1, 2)), x[:1, :3]]]))
    close(ops.index_select(T(x), 1, T(np.array([3, 0], np.int32))), x[:, [3, 0]])
    close(ops.index_fill(T(x), 1, T(np.array([1, 2], np.int32)), -1.0), np.where(np.isin(np.arange(4), [1, 2]), -1.0, x))
    close(ops.moveaxis(T(f32(2, 3, 4)), 0, -1).shape, (3, 4, 2))
    y = f32(2, 3, 4, 5)
    close(ops.movedim(T(y), (0, 1), (3, 0)), np.moveaxis(y, (0, 1), (3, 0)))
    for idx in ("xy", "ij"):
        got = ops.meshgrid(T(np.arange(3.0)), T(np.arange(4.0)), T(np.arange(2.0)), indexing=idx)
        want = np.meshgrid(np.arange(3.0), np.arange(4.0), np.arange(2.0), indexing=idx)
        for g, w in zip(got, want):
            close(g, w)
    close(ops.repeat_interleave(T(x), 2, 1), np.repeat(x, 2, 1))
    close(ops.repeat_interleave(T(x), 3), np.repeat(x, 3))
    close(ops.channel_shuffle(T(np.arange(12.0).reshape(1, 6, 2)), 2),
          np.arange(12.0).reshape(1, 2, 3, 2).transpose(0, 2, 1, 3).reshape(1, 6, 2))
    ids = np.array([0, 2, 0, 1], np.int32)
    seg = f32(4, 2)
    close(ops.unsorted_segment_sum(T(seg), T(ids), 3), np.stack([seg[[0, 2]].sum(0), seg[3], seg[1]]))
    close(ops.scatter_nd(T(np.array([[1], [3], [1]], np.int32)), T(np.float32([1, 2, 3])), (5,)), [0, 4, 0, 2, 0])
    close(ops.sequence_mask(T(np.array([1, 3], np.int32)), 4), [[1, 0, 0, 0], [1, 1, 1, 0]])
    close(ops.inplace_update(T(x), T(x[:2] * 0), (2, 0)), np.stack([0 * x[0], x[1], 0 * x[2]]))
    assert ops.numel(T(x)) == 12 and ops.is_floating_point(T(x)) and not ops.is_complex(T(x))


def test_reductions_and_searchsorted():
    x = f32(4, 7)
    x[1, 2] = np.nan
    close(ops.nansum(T(x), 1), np.nansum(x, 1))
    mn, mx = ops.aminmax(T(np.nan_to_num(x)), axis=1)
    close(mn, np.nan_to_num(x).min(1))
    close(mx, np.nan_to_num(x).max(1))
    y = f32(3, 6)
    v, i = ops.median(T(y), 1)
    want = np.sort(y, 1)[:, 2]
    close(v, want)
    close(np.take_along_axis(y, i.asnumpy()[:, None], 1)[:, 0], want)
    close(ops.msort(T(y)), np.sort(y, 0))
    close(ops.logcumsumexp(T(y), 1), np.log(np.cumsum(np.exp(y.astype(np.float64)), 1)))
    close(ops.count_nonzero(T(np.array([[0, 1, 2], [0, 0, 3]])), 1), [2, 1])
    seq = np.sort(f32(2, 6), 1)
    vals = f32(2, 5)
    for right in (False, True):
        want = np.stack([np.searchsorted(seq[r], vals[r], side="right" if right else "left") for r in range(2)])
        close(ops.searchsorted(T(seq), T(vals), right=right), want)
    h = f32(1000)
    close(ops.histc(T(h), bins=10, min=-2.0, max=2.0), np.histogram(h, 10, (-2, 2))[0])


def test_losses_against_formulas():
    a, b = f32(4, 3), f32(4, 3)
    d = np.abs(a - b)
    close(ops.l1_loss(T(a), T(b)), d.mean())
    close(ops.smooth_l1_loss(T(a), T(b), beta=0.5), np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25))
    close(ops.huber_loss(T(a), T(b), "sum", 0.7), np.where(d < 0.7, 0.5 * d * d, 0.7 * (d - 0.35)).sum())
    y = np.sign(f32(4, 3)).astype(np.float32)
    close(ops.soft_margin_loss(T(a), T(y)), np.log1p(np.exp(-y * a)).mean())
    close(ops.margin_ranking_loss(T(a), T(b), T(y), 0.1), np.maximum(0, -y * (a - b) + 0.1).mean())
    close(ops.hinge_embedding_loss(T(a), T(y), 0.5), np.where(y == 1, a, np.maximum(0, 0.5 - a)).mean())
    p = np.abs(f32(4, 3)) + 0.1
    p /= p.sum(1, keepdims=True)
    logq = np.log(np.abs(f32(4, 3)) + 0.1)
    close(ops.kl_div(T(logq.astype(np.float32)), T(p.astype(np.float32)), "batchmean"), (p * (np.log(p) - logq)).sum() / 4)
    cs = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-8)
    close(ops.cosine_similarity(T(a), T(b)), cs)
    close(ops.cdist(T(a), T(b)), np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)), 1e-4)
    close(ops.dist(T(a), T(b), 3), (d ** 3).sum() ** (1 / 3), 1e-4)
    var = np.abs(f32(4, 3)) + 0.5
    close(ops.gaussian_nll_loss(T(a), T(b), T(var)), (0.5 * (np.log(var) + (a - b) ** 2 / var)).mean())
    tgt = (f32(4, 3) > 0).astype(np.float32)
    sig = 1 / (1 + np.exp(-a.astype(np.float64)))
    close(ops.multilabel_soft_margin_loss(T(a), T(tgt)), (-(tgt * np.log(sig) + (1 - tgt) * np.log(1 - sig))).mean(1).mean())


def test_windows_and_constructors():
    for name, ref in (("hann_window", np.hanning), ("blackman_window", np.blackman), ("bartlett_window", np.bartlett)):
        close(getattr(ops, name)(8, periodic=False), ref(8))
        close(getattr(ops, name)(8), ref(9)[:8])
    close(ops.kaiser_window(7, False, 5.0), np.kaiser(7, 5.0))
    close(ops.hamming_window(6, False), np.hamming(6))
    close(ops.logspace(0, 2, 3), [1, 10, 100])
    close(ops.range(1, 7, 2), [1, 3, 5])
    close(ops.tril_indices(3, 4, 1), np.stack(np.tril_indices(3, 1, 4)))
    close(ops.triu_indices(4, 3, -1), np.stack(np.triu_indices(4, -1, 3)))
    assert ops.eps(T(np.float32([1.0]))).asnumpy()[0] == np.finfo(np.float32).smallest_subnormal


def test_clip_by_norm_and_assign_add():
    xs = (T(np.float32([3.0, 4.0])), T(np.float32([12.0])))
    out = ops.clip_by_norm(xs, 6.5)
    close(out[0], np.float32([3, 4]) * 6.5 / (13 + 1e-6))
    p = ms.Parameter(T(np.float32([1.0, 2.0])), name="p")
    ops.assign_add(p, T(np.float32([1.0, 1.0])))
    ops.assign_sub(p, T(np.float32([0.5, 0.5])))
    close(p, [1.5, 2.5])


@pytest.mark.parametrize("name, args", [("hypot", 2), ("logaddexp", 2), ("mish", 1), ("logit", 1),
                                        ("kron", 2), ("cross", 2), ("huber_loss", 2), ("cosine_similarity", 2)])
def test_gradients_against_finite_differences(name, args):
    shape = (2, 3)
    xs = [np.abs(f32(*shape)).astype(np.float64) * 0.4 + 0.1 for _ in range(args)]
    fn = getattr(ops, name)

    def f(*ts):
        return fn(*ts).sum()
    grads = ms.grad(f, grad_position=tuple(range(args)))(*[T(x) for x in xs])
    grads = grads if isinstance(grads, tuple) else (grads,)
    for k in range(args):
        num = np.zeros(shape)
        for idx in np.ndindex(*shape):
            hi = [x.copy() for x in xs]
            lo = [x.copy() for x in xs]
            hi[k][idx] += 1e-6
            lo[k][idx] -= 1e-6
            num[idx] = (float(f(*[T(x) for x in hi]).asnumpy()) - float(f(*[T(x) for x in lo]).asnumpy())) / 2e-6
        close(grads[k], num, 1e-5)


def test_in_graph_mode():
    class Net(nn.Cell):
        def construct(self, x, y):
            return (ops.roll(x, 1, 0) + ops.hypot(x, y) + ops.diagonal(ops.kron(x, y)[:3, :3]).sum()
                    + ops.cross(x, y, 1) + ops.mish(x) + ops.cat([x, y], 0)[:3])

    x, y = f32(3, 3), f32(3, 3)
    eager = Net()(T(x), T(y)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        graph = Net()(T(x), T(y)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    want = (np.roll(x, 1, 0) + np.hypot(x, y) + np.trace(np.kron(x, y)[:3, :3]) + np.cross(x, y, axis=1)
            + x * np.tanh(np.log1p(np.exp(x))) + x)
    close(eager, want, 1e-4)
    close(graph, want, 1e-4)


def test_addc_diff_rot90_and_tensor_methods():
    a, b, c = f32(3, 4), f32(3, 4), np.abs(f32(3, 4)) + 0.5
    close(ops.addcdiv(T(a), T(b), T(c), 0.5), a + 0.5 * b / c)
    close(ops.addcmul(T(a), T(b), T(c), 2), a + 2 * b * c)
    for n in (1, 2):
        close(ops.diff(T(a), n, 0), np.diff(a, n, 0))
    close(ops.diff(T(a), 1, 1, prepend=T(a[:, :1]), append=T(a[:, :2])), np.diff(a, 1, 1, prepend=a[:, :1], append=a[:, :2]))
    y = f32(2, 3, 4)
    for k in range(-1, 5):
        close(ops.rot90(T(y), k, (1, 2)), np.rot90(y, k, (1, 2)))
    t = T(a)
    close(t.permute(1, 0), a.T)
    close(t.permute((1, 0)), a.T)
    close(t.roll(1, 0), np.roll(a, 1, 0))
    close(t.index_select(1, T(np.array([0, 3], np.int32))), a[:, [0, 3]])
    close(T(a[0]).outer(T(b[0])), np.outer(a[0], b[0]))
    close(T(np.float32([0.25])).logit(), np.log(0.25 / 0.75))
    close(T(a[:, :3]).trace(), np.trace(a[:, :3]))


EINSUM = [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bij,bjk,k->bi", [(2, 3, 4), (2, 4, 5), (5,)]),
          ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]), ("iij->ij", [(3, 3, 2)]), ("ij->", [(3, 4)]),
          ("ij,ij->i", [(3, 4), (3, 4)]), ("i,j->ij", [(3,), (4,)]), ("bij->jb", [(2, 3, 4)]), ("ii", [(3, 3)]),
          ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)])]


@pytest.mark.parametrize("eq, shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_against_numpy(eq, shapes):
    xs = [f32(*s) for s in shapes]
    close(ops.einsum(eq, *[T(x) for x in xs]), np.einsum(eq, *xs), 1e-5)
    close(ops.Einsum(eq)(tuple(T(x) for x in xs)), np.einsum(eq, *xs), 1e-5)


def test_einsum_gradients_and_graph_mode_and_errors():
    a, b = f32(2, 3), f32(3, 4)
    ga, gb = ms.grad(lambda x, y: ops.einsum("ij,jk->ik", x, y).sum(), grad_position=(0, 1))(T(a), T(b))
    close(ga, np.ones((2, 4)) @ b.T)
    close(gb, a.T @ np.ones((2, 4)))

    class Net(nn.Cell):
        def construct(self, x, y):
            return ops.einsum("ij,jk->ik", x, y)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        close(Net()(T(a), T(b)), a @ b)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    with pytest.raises(ValueError, match="einsum: label 'j' has sizes 3 and 5"):
        ops.einsum("ij,jk->ik", T(a), T(f32(5, 2)))
    with pytest.raises(ValueError, match="einsum: equation 'ij,jk' has 2 operands, got 1"):
        ops.einsum("ij,jk", T(a))


def test_misc_functions_and_tensor_methods():
    a = np.float32([1.0, np.nan, 3.0, np.nan])
    b = np.float32([2.0, 1.0, np.nan, np.nan])
    close(ops.fmax(T(a), T(b)), np.fmax(a, b))
    close(ops.fmin(T(a), T(b)), np.fmin(a, b))
    close(ops.nanmean(T(a)), np.nanmean(a))
    x = f32(3, 4)
    close(ops.ptp(T(x), 1), np.ptp(x, 1))
    close(ops.heaviside(T(np.float32([-1, 0, 2])), T(np.float32([0.5]))), np.heaviside([-1, 0, 2], 0.5))
    m = f32(4, 5)
    band = np.where((np.arange(5)[None] - np.arange(4)[:, None] <= 2) & (np.arange(4)[:, None] - np.arange(5)[None] <= 1), m, 0)
    close(ops.matrix_band_part(T(m), 1, 2), band)
    close(ops.mv(T(x), T(f32(4)[:4] * 0 + 1)), x.sum(1))
    close(ops.addn([T(x), T(x), T(x)]), 3 * x)
    close(ops.xdivy(T(np.float32([0, 2])), T(np.float32([0, 4]))), [0, 0.5])
    t = T(x)
    close(t.expand(2, -1, -1), np.broadcast_to(x, (2, 3, 4)))
    close(t.new_ones((2,)), [1, 1])
    close(t.take(T(np.array([0, 5]))), x.ravel()[[0, 5]])
    close(t.where(t > 0, T(np.float32(0))), np.where(x > 0, x, 0))
    assert t.type() == "Float32" and t.type(ms.float64).dtype == ms.float64 and t.ndimension() == 2
    close(t.dot(t), (x * x).sum())
    close(T(x[:, :3]).det(), np.linalg.det(x[:, :3]), 1e-4)


def test_erfc_and_erfinv_against_scipy():
    special = pytest.importorskip("scipy.special")
    z = np.linspace(-6, 9, 4001).astype(np.float32)
    got = ops.erfc(T(z)).asnumpy()
    ref = special.erfc(z.astype(np.float64))
    assert got.dtype == np.float32 and np.max(np.abs(got - ref) / ref) < 5e-7
    x = np.linspace(-0.999999, 0.999999, 4001).astype(np.float32)
    y = ops.erfinv(T(x)).asnumpy()
    ref = special.erfinv(x.astype(np.float64))
    assert np.max(np.abs(y - ref) / np.maximum(np.abs(ref), 1e-30)) < 1e-6
    edge = ops.erfinv(T(np.float32([1, -1, 1.5]))).asnumpy()
    assert edge[0] == np.inf and edge[1] == -np.inf and np.isnan(edge[2])
    g = ms.grad(lambda v: ops.erfinv(v).sum())(T(np.float32([0.3, -0.7])))
    close(g, np.sqrt(np.pi) / 2 * np.exp(special.erfinv(np.float64([0.3, -0.7])) ** 2), 1e-4)
    close(ops.Erfinv()(T(np.float32([0.5]))), special.erfinv([0.5]), 1e-6)


def test_cummax_cummin_scatters_in_both_modes():
    x = np.array([[3, 4, 6, 10], [1, 6, 7, 9], [4, 3, 8, 7], [1, 3, 7, 9]], np.float32)
    v, i = ops.cummax(T(x), 0)  # MindSpore's documented example
    close(v, np.maximum.accumulate(x, 0))
    assert i.asnumpy().tolist() == [[0, 0, 0, 0], [0, 1, 1, 0], [2, 1, 2, 0], [2, 1, 2, 0]]
    r = f32(3, 9)
    v, i = ops.cummin(T(r), 1)
    close(v, np.minimum.accumulate(r, 1))
    close(np.take_along_axis(r, i.asnumpy(), 1), v.asnumpy())
    ties = ops.cummax(T(np.float32([1, 1, 0, 1])), 0)[1].asnumpy().tolist()
    assert ties == [0, 1, 1, 3]  # the later of equal maxima

    class Net(nn.Cell):
        def construct(self, a, b):
            return ops.cummax(a, 1)[0] + ops.slice_scatter(a, b, 1, 1, 7, 2)

    b = f32(3, 3)
    want = np.maximum.accumulate(r, 1) + np.concatenate([r[:, :1], b[:, :1], r[:, 2:3], b[:, 1:2], r[:, 4:5], b[:, 2:3], r[:, 6:]], 1)
    close(Net()(T(r), T(b)), want)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        close(Net()(T(r), T(b)), want)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    close(ops.select_scatter(T(np.zeros((2, 3), np.float32)), T(np.ones(2, np.float32)), 1, -1), [[0, 0, 1], [0, 0, 1]])
    p = ms.Parameter(T(np.zeros((3, 2), np.float32)), name="p")
    ops.index_add(p, T(np.array([0, 2, 0], np.int32)), T(np.ones((3, 2), np.float32)), 0)
    close(p, [[2, 2], [0, 0], [1, 1]])
    q = ms.Parameter(T(np.zeros((4, 2), np.float32)), name="q")
    ops.scatter_update(q, T(np.array([[1], [3]], np.int32)), T(np.ones((2, 1, 2), np.float32)))
    close(q, [[0, 0], [1, 1], [0, 0], [1, 1]])
    close(ops.tensor_scatter_sub(T(np.ones(3, np.float32)), T(np.array([[1]], np.int32)), T(np.float32([2]))), [1, -1, 1])


def test_pdist_cov_diag_embed_cond_segments():
    special = pytest.importorskip("scipy.spatial.distance")
    x = f32(5, 3)
    close(ops.pdist(T(x)), special.pdist(x), 1e-5)
    close(ops.pdist(T(x), 1.0), special.pdist(x, "minkowski", p=1), 1e-5)
    close(ops.cov(T(x)), np.cov(x), 1e-5)
    close(ops.cov(T(x), correction=0), np.cov(x, bias=True), 1e-5)
    fw, aw = np.array([1, 2, 1]), np.float32([0.5, 1.0, 2.0])
    close(ops.cov(T(x), fweights=T(fw), aweights=T(aw)), np.cov(x, fweights=fw, aweights=aw), 1e-5)
    for off in (-1, 0, 2):
        got = ops.diag_embed(T(x), off).asnumpy()
        for b in range(5):
            close(got[b], np.diag(x[b], off))
    moved = ops.diag_embed(T(x), 0, 0, 2).asnumpy()
    assert moved.shape == (3, 5, 3) and np.allclose(moved[:, 1, :], np.diag(x[1]))
    close(ops.cond(T(x[:3])), np.linalg.cond(x[:3]), 1e-4)
    close(ops.cond(T(x[:3]), "fro"), np.linalg.cond(x[:3], "fro"), 1e-4)
    ids = np.array([0, 2, 0, 2, 2], np.int32)
    close(ops.unsorted_segment_max(T(x), T(ids), 4)[[0, 2]], np.stack([x[[0, 2]].max(0), x[[1, 3, 4]].max(0)]))
    assert (ops.unsorted_segment_max(T(x), T(ids), 4).asnumpy()[1] == np.finfo(np.float32).min).all()
    close(ops.unsorted_segment_min(T(x), T(ids), 3)[[0, 2]], np.stack([x[[0, 2]].min(0), x[[1, 3, 4]].min(0)]))
    close(ops.unsorted_segment_prod(T(x), T(ids), 3), np.stack([x[[0, 2]].prod(0), np.ones(3), x[[1, 3, 4]].prod(0)]))


def test_random_functions():
    ms.set_seed(3)
    p = ops.randperm(50).asnumpy()
    assert sorted(p.tolist()) == list(range(50))
    u = ops.rand(20000).asnumpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    z = ops.randn(20000).asnumpy()
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    like = ops.randint_like(T(np.zeros((3, 4), np.float32)), 2, 5).asnumpy()
    assert like.shape == (3, 4) and like.min() >= 2 and like.max() < 5
    lap = ops.laplace((40000,), 1.0, 2.0).asnumpy()
    assert abs(np.median(lap) - 1.0) < 0.05 and abs(np.abs(lap - 1.0).mean() - 2.0) < 0.05
    rows = ops.shuffle(T(np.arange(10.0))).asnumpy()
    assert sorted(rows.tolist()) == list(range(10))
    logits = T(f32(6, 4))
    hard = ops.gumbel_softmax(logits, 0.5, hard=True).asnumpy()
    assert np.array_equal(hard.sum(1), np.ones(6)) and set(np.unique(hard)) <= {0.0, 1.0}
    soft = ops.gumbel_softmax(logits, 2.0).asnumpy()
    close(soft.sum(1), np.ones(6))


def test_more_tensor_methods():
    x = f32(3, 4)
    t = T(x)
    close(t.sum_to_size(1, 4), x.sum(0, keepdims=True))
    close(t.sum_to_size((3, 1)), x.sum(1, keepdims=True))
    idx, val = t.argmax_with_value(1)
    close(idx, x.argmax(1))
    close(val, x.max(1))
    idx, val = t.argmin_with_value(0, True)
    close(val, x.min(0, keepdims=True))
    close(t.select(t > 0, T(np.zeros((3, 4), np.float32))), np.where(x > 0, x, 0))
    close(t.cov(), np.cov(x), 1e-5)
    close(t.ldexp(T(np.float32(2))), x * 4)
    close(T(np.array([1, 2], np.int32)).invert(), [-2, -3])
    close(T(x.reshape(1, 1, 3, 4)).unfold(2).shape, (1, 4, 6))
    draws = T(np.zeros(4000, np.float32)).bernoulli(0.25).asnumpy()
    assert set(np.unique(draws)) <= {0.0, 1.0} and abs(draws.mean() - 0.25) < 0.04
