"""MindSpore's gradient primitives (`ops.operations._grad_ops as G`) in both modes: each against
numpy's closed form, central finite differences of a numpy forward (the vjp dy . J), or the
adjoint identity <G(dy), x> = <dy, f(x)> of a numpy linear op."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn
from mycel.ops.operations import _grad_ops as G

R = np.random.default_rng(7)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


class _Net(nn.Cell):
    def __init__(self, op, *consts):
        super().__init__()
        self.op = op
        self.consts = consts

    def construct(self, *args):
        return self.op(*args, *self.consts)


def _run(mode, op, *args, consts=()):
    ms.set_context(mode=mode)
    try:
        out = _Net(op, *consts)(*[Tensor(a) for a in args])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return tuple(o.asnumpy() for o in out) if isinstance(out, tuple) else out.asnumpy()


def _vjp_fd(f, x, dy, h=1e-6):
    """dy . df/dx by central differences of numpy's f (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = np.sum(dy * (f(xp) - f(xm))) / (2 * h)
    return g


X = R.uniform(-0.9, 0.9, size=(3, 4))
DY = R.normal(size=(3, 4))


@MODES
@pytest.mark.parametrize("name, f", [("ACosGrad", np.arccos), ("AsinGrad", np.arcsin), ("AtanGrad", np.arctan)])
def test_trig_grads_are_the_vjp(mode, name, f):
    got = _run(mode, getattr(G, name)(), X, DY)
    np.testing.assert_allclose(got, _vjp_fd(f, X, DY), rtol=1e-6, atol=1e-8)


@MODES
def test_output_form_grads(mode):
    """SqrtGrad, InvGrad, AsinhGrad, AcoshGrad take y = f(x); the vjp of f at x."""
    x = R.uniform(1.5, 3.0, size=(2, 5))
    dy = R.normal(size=(2, 5))
    for op, f in ((G.SqrtGrad(), np.sqrt), (G.InvGrad(), np.reciprocal), (G.AsinhGrad(), np.arcsinh),
                  (G.AcoshGrad(), np.arccosh)):
        np.testing.assert_allclose(_run(mode, op, f(x), dy), _vjp_fd(f, x, dy), rtol=1e-6, atol=1e-8)
    # EluGrad(dy, y): y = elu(x), alpha 1
    xe = np.array([[-2.0, -0.5, 0.3, 1.7]])
    dye = R.normal(size=(1, 4))
    elu = lambda v: np.where(v > 0, v, np.expm1(v))  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.EluGrad(), dye, elu(xe)), _vjp_fd(elu, xe, dye), rtol=1e-6)


def test_inv_grad_of_integers():
    y = np.array([[-1, 1, 5], [3, 2, -1]], np.int32)
    dy = np.array([[29, 1, -2], [3, 1, 12]], np.int32)
    np.testing.assert_array_equal(_run(ms.PYNATIVE_MODE, G.InvGrad(), y, dy), -dy * y * y)


@MODES
def test_relu6_grad_kinks(mode):
    """1 on (0, 6], 0 elsewhere: the left piece at each kink (MindSpore's ReLU6Grad)."""
    x = np.array([[-1.0, 0.0, 0.5, 6.0, 6.5]])
    dy = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    np.testing.assert_array_equal(_run(mode, G.ReLU6Grad(), dy, x), [[0.0, 0.0, 3.0, 4.0, 0.0]])
    xs = R.uniform(-3, 9, size=(3, 4))
    xs = xs[np.abs(xs) > 1e-3].reshape(-1)[:8][None]
    xs = np.where(np.abs(xs - 6) < 1e-3, 5.0, xs)
    d = R.normal(size=xs.shape)
    np.testing.assert_allclose(_run(mode, G.ReLU6Grad(), d, xs),
                               _vjp_fd(lambda v: np.clip(v, 0, 6), xs, d), atol=1e-8)


@MODES
def test_softplus_and_shrink_grads(mode):
    x = np.array([[-1.3, -0.4, 0.1, 0.45, 0.8, 2.0]])
    dy = R.normal(size=x.shape)
    softplus = lambda v: np.log1p(np.exp(v))  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.SoftplusGrad(), dy, x), _vjp_fd(softplus, x, dy), rtol=1e-6)
    soft = lambda v: np.where(v > 0.3, v - 0.3, np.where(v < -0.3, v + 0.3, 0.0))  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.SoftShrinkGrad(0.3), dy, x), _vjp_fd(soft, x, dy), atol=1e-8)
    hard = lambda v: np.where(np.abs(v) > 0.5, v, 0.0)  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.HShrinkGrad(0.5), dy, x), _vjp_fd(hard, x, dy), atol=1e-8)


@MODES
def test_sigmoid_cross_entropy_and_kl_div_grads(mode):
    x = R.normal(size=(3, 4))
    y = R.random((3, 4))
    dy = R.normal(size=(3, 4))
    bce = lambda v: np.maximum(v, 0) - v * y + np.log1p(np.exp(-np.abs(v)))  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.SigmoidCrossEntropyWithLogitsGrad(), x, y, dy),
                               _vjp_fd(bce, x, dy), rtol=1e-6)
    target = np.array([[0.2, -1.0, 0.0, 0.7], [1.0, 0.3, 0.5, -0.5], [0.1, 0.2, 0.3, 0.4]])
    kl = lambda v: target * (np.log(np.where(target > 0, target, 1.0)) - v)  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.KLDivLossGrad("none"), dy, x, target), _vjp_fd(kl, x, dy),
                               rtol=1e-6, atol=1e-9)
    s = np.array([0.7])
    for reduction, scale in (("sum", 1.0), ("mean", 1 / 12), ("batchmean", 1 / 3)):
        got = _run(mode, G.KLDivLossGrad(reduction), s, x, target)
        np.testing.assert_allclose(got, -target * 0.7 * scale, rtol=1e-12)


@MODES
def test_l2_normalize_and_lrn_grads(mode):
    x = R.normal(size=(2, 3, 4))
    dy = R.normal(size=(2, 3, 4))
    l2 = lambda v: v / np.sqrt(np.maximum((v * v).sum(1, keepdims=True), 1e-4))  # noqa: E731
    np.testing.assert_allclose(_run(mode, G.L2NormalizeGrad(1, 1e-4), x, l2(x), dy), _vjp_fd(l2, x, dy),
                               rtol=1e-6, atol=1e-9)
    xl = R.normal(size=(1, 5, 2, 2))
    dl = R.normal(size=(1, 5, 2, 2))

    def lrn(v, r=2, bias=1.0, alpha=0.3, beta=0.75):
        sq = np.zeros_like(v)
        for c in range(v.shape[1]):
            sq[:, c] = (v[:, max(0, c - r):c + r + 1] ** 2).sum(1)
        return v / (bias + alpha * sq) ** beta
    np.testing.assert_allclose(_run(mode, G.LRNGrad(2, 1.0, 0.3, 0.75), dl, xl, lrn(xl)), _vjp_fd(lrn, xl, dl),
                               rtol=1e-6, atol=1e-9)


@MODES
def test_layer_norm_grad(mode):
    x = R.normal(size=(4, 6))
    dy = R.normal(size=(4, 6))
    gamma = R.normal(size=(6,))
    eps = 1e-12
    mean, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)

    def ln(v):
        m, s = v.mean(1, keepdims=True), v.var(1, keepdims=True)
        return (v - m) / np.sqrt(s + eps) * gamma
    dx, dg, db = _run(mode, G.LayerNormGrad(1, 1), x, dy, var, mean, gamma)
    np.testing.assert_allclose(dx, _vjp_fd(ln, x, dy), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dg, (dy * (x - mean) / np.sqrt(var + eps)).sum(0), rtol=1e-10)
    np.testing.assert_allclose(db, dy.sum(0), rtol=1e-12)


@MODES
def test_bias_add_grad(mode):
    d = R.normal(size=(2, 3, 4, 5))
    np.testing.assert_allclose(_run(mode, G.BiasAddGrad(), d), d.sum((0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(_run(mode, G.BiasAddGrad("NHWC"), d), d.sum((0, 1, 2)), rtol=1e-12)
    np.testing.assert_array_equal(_run(mode, G.BiasAddGrad(), np.ones((2, 3, 4), np.int8)), [8, 8, 8])


@MODES
def test_slice_grads_scatter_dy(mode):
    x = R.normal(size=(3, 4, 5))
    dy = R.normal(size=(2, 2, 5))
    want = np.zeros_like(x)
    want[1:3, 1:3, :] = dy
    np.testing.assert_array_equal(_run(mode, G.SliceGrad(), dy, x, consts=((1, 1, 0), (2, 2, -1))), want)
    ds = R.normal(size=(2, 2, 2))
    want = np.zeros((3, 4, 5))
    want[0:3:2, 1:4:2, 0:5:3] = ds
    got = _run(mode, G.StridedSliceGrad(), ds, consts=((3, 4, 5), (0, 1, 0), (3, 4, 5), (2, 2, 3)))
    np.testing.assert_array_equal(got, want)
    mask = np.array([True, False, True])
    want = np.zeros((2, 3), bool)
    want[1] = mask
    got = _run(mode, G.StridedSliceGrad(shrink_axis_mask=1), mask, consts=((2, 3), (1, 0), (2, 3), (1, 1)))
    np.testing.assert_array_equal(got, want)


def _bilinear_align(x, oh, ow):
    """numpy bilinear resize with align_corners=True (NCHW)."""
    h, w = x.shape[-2:]
    ys = np.arange(oh) * ((h - 1) / (oh - 1) if oh > 1 else 0)
    xs = np.arange(ow) * ((w - 1) / (ow - 1) if ow > 1 else 0)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None], (xs - x0)[None, :]
    top = x[..., y0, :][..., :, x0] * (1 - wx) + x[..., y0, :][..., :, x1] * wx
    bot = x[..., y1, :][..., :, x0] * (1 - wx) + x[..., y1, :][..., :, x1] * wx
    return top * (1 - wy) + bot * wy


@MODES
def test_resize_grads_are_adjoints(mode):
    x = R.normal(size=(1, 2, 3, 4))
    dy = R.normal(size=(1, 2, 5, 7))
    g = _run(mode, G.ResizeBilinearGrad(align_corners=True), dy, x)
    np.testing.assert_allclose(np.sum(g * x), np.sum(dy * _bilinear_align(x, 5, 7)), rtol=1e-10)
    # nearest with align_corners=True: output pixel i reads round-half-up(i * (in - 1) / (out - 1))
    dn = R.normal(size=(1, 2, 5, 7))
    g = _run(mode, G.ResizeNearestNeighborGrad(align_corners=True), dn, consts=((3, 4),))
    rows = np.floor(np.arange(5) * 2 / 4 + 0.5).astype(int)
    cols = np.floor(np.arange(7) * 3 / 6 + 0.5).astype(int)
    np.testing.assert_allclose(np.sum(g * x), np.sum(dn * x[..., rows, :][..., :, cols]), rtol=1e-10)


@MODES
def test_conv2d_backprop_filter(mode):
    x = R.normal(size=(2, 3, 6, 7))
    dout = R.normal(size=(2, 4, 2, 3))  # 3x3 kernel, stride 2, valid
    want = np.zeros((4, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            patch = x[:, :, i:i + 4:2, j:j + 5:2]
            want[:, :, i, j] = np.einsum("nohw,nchw->oc", dout, patch)
    op = G.Conv2DBackpropFilter(4, 3, stride=(2, 2))
    np.testing.assert_allclose(_run(mode, op, dout, x, consts=((4, 3, 3, 3),)), want, rtol=1e-10)


def test_concat_offset():
    shapes = [(2, 3), (4, 3), (1, 3)]
    out = G.ConcatOffset(3, 0)(tuple(Tensor(np.zeros(s, np.float32)) for s in shapes)).asnumpy()
    np.testing.assert_array_equal(out, [[0, 0], [2, 0], [6, 0]])


def test_bad_input_errors():
    with pytest.raises(ValueError, match="ACosGrad: dy and x must have the same shape"):
        G.ACosGrad()(Tensor(np.zeros(3, np.float32)), Tensor(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match="KLDivLossGrad: reduction must be"):
        G.KLDivLossGrad("avg")
    with pytest.raises(ValueError, match="KLDivLossGrad: with reduction 'mean' grads must hold one value"):
        G.KLDivLossGrad()(Tensor(np.ones((2, 2), np.float32)), Tensor(np.ones((2, 2), np.float32)),
                          Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(ValueError, match="SliceGrad: begin"):
        G.SliceGrad()(Tensor(np.ones((2,), np.float32)), Tensor(np.ones((3,), np.float32)), (2,), (2,))
    with pytest.raises(ValueError, match="ResizeNearestNeighborGrad: size"):
        G.ResizeNearestNeighborGrad()(Tensor(np.ones((1, 1, 2, 2), np.float32)), (3,))


def _np_max_pool_argmax(x, k, s):
    """(values, argmax h * W + w of the first maximum) of valid max pooling, numpy."""
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    vals, idx = np.zeros((n, c, oh, ow)), np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * s:i * s + k, j * s:j * s + k].reshape(n, c, -1)
            a = win.argmax(-1)
            vals[:, :, i, j] = win.max(-1)
            idx[:, :, i, j] = (i * s + a // k) * w + j * s + a % k
    return vals, idx


@MODES
def test_max_pool_grads_with_argmax(mode):
    x = R.normal(size=(2, 3, 6, 5))
    vals, idx = _np_max_pool_argmax(x, 2, 2)
    dy = R.normal(size=vals.shape)
    f = lambda v: _np_max_pool_argmax(v, 2, 2)[0]  # noqa: E731
    want = _vjp_fd(f, x, dy)
    for op in (G.MaxPoolGradWithArgmax(kernel_size=2, strides=2), G.MaxPoolGradWithArgmaxV2(2, 2)):
        np.testing.assert_allclose(_run(mode, op, x, dy, idx.astype(np.int32)), want, rtol=1e-6, atol=1e-8)
    # the grad-grad ops are the jvp: each output takes the tangent at its window's maximum
    t = R.normal(size=x.shape)
    jvp = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
    np.testing.assert_allclose(_run(mode, G.MaxPoolGradGrad(2, 2), x, vals, t), jvp, rtol=1e-6, atol=1e-8)
    per_sample = idx + (np.arange(3) * 30)[None, :, None, None]  # C * H * W indices
    got = _run(mode, G.MaxPoolGradGradWithArgmax(2, 2), x, t, per_sample)
    np.testing.assert_allclose(got, jvp, rtol=1e-6, atol=1e-8)


@MODES
def test_dropout_grad_and_complex_atan_grad(mode):
    dy = R.normal(size=(3, 4))
    mask = (R.random((3, 4)) < 0.6).astype(np.float64)
    np.testing.assert_allclose(_run(mode, G.DropoutGrad(0.6), dy, mask), dy * mask / 0.6, rtol=1e-12)
    z = R.normal(size=(5,)) + 1j * R.normal(size=(5,)) * 0.5
    dz = R.normal(size=(5,)) + 1j * R.normal(size=(5,))
    # d atan / dz = 1 / (1 + z^2); the cotangent rule conjugates the derivative
    np.testing.assert_allclose(_run(mode, G.AtanGrad(), z, dz), dz / np.conj(1 + z * z), rtol=1e-12)


def _np_ps_roi_pool(x, rois, scale, group, out_dim):
    """R-FCN position-sensitive average pooling, loops (MindSpore's rounding and clipping)."""
    h, w = x.shape[2:]
    boxes = rois.transpose(0, 2, 1).reshape(-1, 5)
    y = np.zeros((len(boxes), out_dim, group, group))
    rnd = lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)  # noqa: E731
    for r, (b, x1, y1, x2, y2) in enumerate(boxes):
        sw, sh, ew, eh = rnd(x1 * scale), rnd(y1 * scale), rnd(x2 * scale), rnd(y2 * scale)
        bw, bh = max(ew - sw, 0.1) / group, max(eh - sh, 0.1) / group
        for c in range(out_dim):
            for i in range(group):
                for j in range(group):
                    h0 = int(min(max(np.floor(i * bh + sh), 0), h))
                    h1 = int(min(max(np.ceil((i + 1) * bh + sh), 0), h))
                    w0 = int(min(max(np.floor(j * bw + sw), 0), w))
                    w1 = int(min(max(np.ceil((j + 1) * bw + sw), 0), w))
                    if h1 > h0 and w1 > w0:
                        y[r, c, i, j] = x[int(b), (c * group + i) * group + j, h0:h1, w0:w1].mean()
    return y


ROIS = np.array([[[0.0, 1.0], [15.0, 40.0], [20.0, 3.0], [58.0, 130.0], [60.0, 90.0]],
                 [[1.0, 0.0], [6.5, -20.0], [3.1, 8.0], [76.2, 30.0], [56.8, 200.0]]], np.float32)


@MODES
def test_ps_roi_pooling_and_grad(mode):
    x = R.normal(size=(2, 2 * 3 * 3, 7, 6)).astype(np.float32)
    want = _np_ps_roi_pool(x.astype(np.float64), ROIS.astype(np.float64), 1 / 16, 3, 2)
    got = _run(mode, G.PSROIPooling(1 / 16, 3, 2), x, ROIS)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the gradient is the adjoint of this linear map: <dx, x> = <dy, pool(x)>
    dy = R.normal(size=want.shape).astype(np.float32)
    dx = _run(mode, G.PSROIPoolingGrad((7, 6), 1 / 16, 3, 2), dy, ROIS)
    assert dx.shape == x.shape
    np.testing.assert_allclose(np.sum(dx.astype(np.float64) * x), np.sum(dy * want), rtol=1e-5)


def test_ps_roi_pooling_errors():
    with pytest.raises(TypeError, match="PSROIPoolingGrad: input_size must be an int or a tuple"):
        G.PSROIPoolingGrad([2, 2], 1 / 16, 2, 2)
    with pytest.raises(ValueError, match="PSROIPooling: group_size must be > 0"):
        G.PSROIPooling(1 / 16, 0, 2)
    op = G.PSROIPoolingGrad((7, 6), 1 / 16, 3, 2)
    with pytest.raises(ValueError, match=r"PSROIPoolingGrad: dy must be \(batch \* rois_num"):
        op(Tensor(np.ones((4, 2, 3, 2), np.float32)), Tensor(ROIS))
    with pytest.raises(TypeError, match="PSROIPoolingGrad: dy must be float16 or float32"):
        op(Tensor(np.ones((4, 2, 3, 3))), Tensor(ROIS))


def _np_max_pool3d_same(v, k):
    """3-d max pooling, stride 1, TensorFlow's 'same' padding (-inf), numpy."""
    lo, hi = (k - 1) // 2, k - 1 - (k - 1) // 2
    p = np.pad(v, ((0, 0), (0, 0), (lo, hi), (lo, hi), (lo, hi)), constant_values=-np.inf)
    d, h, w = v.shape[2:]
    out = np.empty_like(v)
    for i in range(d):
        for j in range(h):
            for m in range(w):
                out[:, :, i, j, m] = p[:, :, i:i + k, j:j + k, m:m + k].max((2, 3, 4))
    return out


@MODES
def test_max_pool3d_grad_grad_is_the_jvp(mode):
    x = R.normal(size=(2, 2, 3, 4, 3))
    t = R.normal(size=x.shape)
    f = lambda v: _np_max_pool3d_same(v, 3)  # noqa: E731
    jvp = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
    got = _run(mode, G.MaxPool3DGradGrad(3, 1, "SAME"), x, f(x), t)
    np.testing.assert_allclose(got, jvp, rtol=1e-6, atol=1e-8)


def _np_deformable_offsets(x, off, k, stride=1, pad=0):
    """numpy loop: tap (ky, kx) of output pixel (py, px) samples x bilinearly (zero outside) at
    (py * s + ky - pad + dy, px * s + kx - pad + dx), times the mask (one deformable group)."""
    n, c, h, w = x.shape
    oh, ow = off.shape[2:]
    off = off.reshape(n, 3, k, k, oh, ow)
    out = np.zeros((n, c, oh * k, ow * k))

    def at(img, r, q):
        return img[r, q] if 0 <= r < h and 0 <= q < w else 0.0
    for b in range(n):
        for py in range(oh):
            for px in range(ow):
                for ky in range(k):
                    for kx in range(k):
                        sy = py * stride + ky - pad + off[b, 1, ky, kx, py, px]
                        sx = px * stride + kx - pad + off[b, 0, ky, kx, py, px]
                        if not (-1 < sy < h and -1 < sx < w):
                            continue
                        t, left = int(np.floor(sy)), int(np.floor(sx))
                        a, e = sx - left, sy - t
                        for ch in range(c):
                            img = x[b, ch]
                            v = (at(img, t, left) * (1 - a) * (1 - e) + at(img, t, left + 1) * a * (1 - e)
                                 + at(img, t + 1, left) * (1 - a) * e + at(img, t + 1, left + 1) * a * e)
                            out[b, ch, py * k + ky, px * k + kx] = v * off[b, 2, ky, kx, py, px]
    return out


@MODES
def test_deformable_offsets_and_grad(mode):
    x = R.normal(size=(1, 2, 5, 5))
    off = np.concatenate([R.uniform(-1.4, 1.4, size=(1, 18, 2, 2)), R.uniform(0.2, 1.0, size=(1, 9, 2, 2))], 1)
    args = ((1, 1, 2, 2), (1, 0, 1, 0), (3, 3))  # strides (NCHW), pads (top, bottom, left, right), ksize
    want = _np_deformable_offsets(x, off, 3, stride=2, pad=1)
    np.testing.assert_allclose(_run(mode, G.DeformableOffsets(*args), x, off), want, rtol=1e-10, atol=1e-12)
    dout = R.normal(size=want.shape)
    dx, doff = _run(mode, G.DeformableOffsetsGrad(*args), dout, x, off)
    np.testing.assert_allclose(dx, _vjp_fd(lambda v: _np_deformable_offsets(v, off, 3, 2, 1), x, dout),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(doff, _vjp_fd(lambda v: _np_deformable_offsets(x, v, 3, 2, 1), off, dout),
                               rtol=1e-5, atol=1e-7)


class _GradOfGrad(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op
        self.grad = ms.ops.GradOperation(get_all=True, sens_param=True)

    def construct(self, dy, x, dout):
        return self.grad(self.op)(dy, x, dout)


@MODES
def test_grad_primitives_differentiate_again(mode):
    """SoftplusGrad(dy, x) = dy * sigmoid(x): its own gradient (MindSpore's softplus grad-grad)."""
    dy, x, dout = R.normal(size=(3, 4)), R.normal(size=(3, 4)), R.normal(size=(3, 4))
    ms.set_context(mode=mode)
    try:
        d_dy, d_x = _GradOfGrad(G.SoftplusGrad())(Tensor(dy), Tensor(x), Tensor(dout))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(d_dy.asnumpy(), dout * s, rtol=1e-12)
    np.testing.assert_allclose(d_x.asnumpy(), dy * dout * s * (1 - s), rtol=1e-10, atol=1e-14)
