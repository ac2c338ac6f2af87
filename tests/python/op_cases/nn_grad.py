"""Table rows for the nn backward ops: conv2d_backprop_input/filter, max/avg_pool2d_grad,
batch_norm_grad, layer_norm_grad. References are direct numpy scatters/closed forms in float64
(test_grad_rules.py separately checks the rules that call these ops against finite differences)."""
import numpy as np

from op_cases import OpCase, make_input
from op_cases.nn import TOL, _f64, _pad4, _pair, _same_or_given, conv2d_ref

F16 = dict(rtol=5e-3, atol=5e-3)


def _conv_pads(h, w, kh, kw, stride, dilation, pad_mode, pad):
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    pt, pb, pl, pr = _pad4(pad)
    pt, pb = _same_or_given(h, kh, sh, dh, pad_mode, pt, pb)
    pl, pr = _same_or_given(w, kw, sw, dw, pad_mode, pl, pr)
    return (sh, sw), (dh, dw), (pt, pb, pl, pr)


def conv2d_backprop_input_ref(dout, w, input_size, stride=1, pad_mode="valid", pad=0, dilation=1, groups=1):
    dy, wt = _f64(dout, w)
    n, (_, c, h, wd) = dy.shape[0], input_size
    oc, icg, kh, kw = w.shape
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = _conv_pads(h, wd, kh, kw, stride, dilation, pad_mode, pad)
    oh, ow = dy.shape[2:]
    dxp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    ocg = oc // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nohw,oc->nchw", dy[:, g * ocg:(g + 1) * ocg], wt[g * ocg:(g + 1) * ocg, :, i, j])
                dxp[:, g * icg:(g + 1) * icg, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                    j * dw:j * dw + sw * (ow - 1) + 1:sw] += contrib
    return dxp[:, :, pt:pt + h, pl:pl + wd].astype(dout.dtype)


def conv2d_backprop_filter_ref(dout, x, filter_size, stride=1, pad_mode="valid", pad=0, dilation=1, groups=1):
    dy, xd = _f64(dout, x)
    oc, icg, kh, kw = filter_size
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = _conv_pads(x.shape[2], x.shape[3], kh, kw, stride, dilation,
                                                       pad_mode, pad)
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = dy.shape[2:]
    dw_ = np.zeros(filter_size)
    ocg = oc // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * icg:(g + 1) * icg, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                dw_[g * ocg:(g + 1) * ocg, :, i, j] = np.einsum("nohw,nchw->oc", dy[:, g * ocg:(g + 1) * ocg], patch)
    return dw_.astype(dout.dtype)


def _conv_bwd_gen(x_shape, w_shape, which, **attrs):
    def gen(rng, dtype):
        out = conv2d_ref(np.zeros(x_shape), np.zeros(w_shape), **attrs)
        dy = make_input(rng, out.shape, dtype)
        other = make_input(rng, w_shape if which == "input" else x_shape, dtype)
        return [dy, other]
    return gen


def _bwd_in(x_shape, w_shape, id="", **attrs):
    return OpCase("conv2d_backprop_input", conv2d_backprop_input_ref, _conv_bwd_gen(x_shape, w_shape, "input", **attrs),
                  attrs=dict(input_size=x_shape, **attrs), id=id, **TOL)


def _bwd_w(x_shape, w_shape, id="", **attrs):
    return OpCase("conv2d_backprop_filter", conv2d_backprop_filter_ref,
                  _conv_bwd_gen(x_shape, w_shape, "filter", **attrs), attrs=dict(filter_size=w_shape, **attrs),
                  id=id, **TOL)


# ---- pooling ----

def _pool_geom(x, kernel_size, strides, pad_mode, pad):
    (kh, kw), (sh, sw) = _pair(kernel_size), _pair(strides)
    pt, pb, pl, pr = _pad4(pad)
    h, w = x.shape[-2:]
    pt, pb = _same_or_given(h, kh, sh, 1, pad_mode, pt, pb)
    pl, pr = _same_or_given(w, kw, sw, 1, pad_mode, pl, pr)
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    return (kh, kw), (sh, sw), (pt, pb, pl, pr), (oh, ow)


def max_pool2d_grad_ref(x, dout, kernel_size=1, strides=1, pad_mode="valid", pad=0):
    (kh, kw), (sh, sw), (pt, pb, pl, pr), (oh, ow) = _pool_geom(x, kernel_size, strides, pad_mode, pad)
    widths = [(0, 0)] * (x.ndim - 2) + [(pt, pb), (pl, pr)]
    xp = np.pad(np.asarray(x, np.float64), widths, constant_values=-np.inf)
    planes = xp.reshape(-1, *xp.shape[-2:])
    dy = np.asarray(dout, np.float64).reshape(-1, oh, ow)
    gp = np.zeros_like(planes)
    for p in range(planes.shape[0]):
        for i in range(oh):
            for j in range(ow):
                win = planes[p, i * sh:i * sh + kh, j * sw:j * sw + kw]
                a, b = np.unravel_index(np.argmax(win), win.shape)  # the first maximum
                gp[p, i * sh + a, j * sw + b] += dy[p, i, j]
    h, w = x.shape[-2:]
    return gp.reshape(xp.shape)[..., pt:pt + h, pl:pl + w].astype(x.dtype)


def avg_pool2d_grad_ref(x, dout, kernel_size=1, strides=1, pad_mode="valid", pad=0, count_include_pad=False):
    (kh, kw), (sh, sw), (pt, pb, pl, pr), (oh, ow) = _pool_geom(x, kernel_size, strides, pad_mode, pad)
    h, w = x.shape[-2:]
    valid = np.pad(np.ones((h, w)), [(pt, pb), (pl, pr)])
    if count_include_pad and pad_mode == "pad":
        valid = np.ones_like(valid)
    dy = np.asarray(dout, np.float64)
    gp = np.zeros(x.shape[:-2] + valid.shape)
    for i in range(oh):
        for j in range(ow):
            sl = np.s_[i * sh:i * sh + kh, j * sw:j * sw + kw]
            gp[..., sl[0], sl[1]] += dy[..., i, j][..., None, None] / valid[sl].sum()
    return gp[..., pt:pt + h, pl:pl + w].astype(x.dtype)


def _pool_gen(x_shape, distinct=False, **attrs):
    def gen(rng, dtype):
        x = (rng.permutation(int(np.prod(x_shape))).reshape(x_shape) * 0.25).astype(dtype) if distinct \
            else make_input(rng, x_shape, dtype)
        (_, _), (_, _), _, (oh, ow) = _pool_geom(x, attrs.get("kernel_size", 1), attrs.get("strides", 1),
                                                 attrs.get("pad_mode", "valid"), attrs.get("pad", 0))
        return [x, make_input(rng, x_shape[:-2] + (oh, ow), dtype)]
    return gen


def _pool_case(op, ref, x_shape, id="", dtypes=("float32", "float64"), **attrs):
    return OpCase(op, ref, _pool_gen(x_shape, distinct=op == "max_pool2d_grad", **attrs), attrs=attrs,
                  dtypes=dtypes, id=id, **(F16 if "float16" in dtypes else TOL))


# ---- normalization ----

def batch_norm_grad_ref(dout, x, scale, saved_mean, saved_invstd, dmean, dinvstd, is_training=False):
    dy, xd, g, mu, inv, dmu, dinv = _f64(dout, x, scale, saved_mean, saved_invstd, dmean, dinvstd)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    axes = (0,) + tuple(range(2, x.ndim))
    m = x.size // x.shape[1]
    xhat = (xd - mu.reshape(shape)) * inv.reshape(shape)
    dbias, dscale = dy.sum(axis=axes), (dy * xhat).sum(axis=axes)
    dxhat = dy * g.reshape(shape)
    if is_training:
        dx = inv.reshape(shape) * (dxhat - dxhat.mean(axis=axes, keepdims=True)
                                   - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))
        dx += dmu.reshape(shape) / m - (dinv * inv ** 2).reshape(shape) * xhat / m
    else:
        dx = dxhat * inv.reshape(shape)
    return dx.astype(x.dtype), dscale.astype(scale.dtype), dbias.astype(scale.dtype)


def _bn_grad_gen(x_shape):
    def gen(rng, dtype):
        c = x_shape[1]
        x = make_input(rng, x_shape, dtype)
        axes = (0,) + tuple(range(2, len(x_shape)))
        xd = x.astype(np.float64)
        mean, invstd = xd.mean(axis=axes), 1 / np.sqrt(xd.var(axis=axes) + 1e-5)
        return [make_input(rng, x_shape, dtype), x, make_input(rng, (c,), dtype), mean.astype(dtype),
                invstd.astype(dtype), make_input(rng, (c,), dtype), make_input(rng, (c,), dtype)]
    return gen


def layer_norm_grad_ref(dout, x, gamma, mean, rstd, dmean, drstd, begin_norm_axis=-1, begin_params_axis=-1):
    dy, xd, g, mu, rs, dmu, drs = _f64(dout, x, gamma, mean, rstd, dmean, drstd)
    nax = begin_norm_axis % x.ndim
    axes = tuple(range(nax, x.ndim))
    m = int(np.prod(x.shape[nax:]))
    xhat = (xd - mu) * rs
    lead = tuple(range(x.ndim - g.ndim))
    dgamma, dbeta = (dy * xhat).sum(axis=lead), dy.sum(axis=lead)
    dxhat = dy * g
    dx = rs * (dxhat - dxhat.mean(axis=axes, keepdims=True) - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))
    dx += dmu / m - drs * rs ** 2 * xhat / m
    return dx.astype(x.dtype), dgamma.astype(x.dtype), dbeta.astype(x.dtype)


def _ln_grad_gen(x_shape, begin_norm_axis, begin_params_axis):
    def gen(rng, dtype):
        nax = begin_norm_axis % len(x_shape)
        stat = x_shape[:nax] + (1,) * (len(x_shape) - nax)
        x = make_input(rng, x_shape, dtype)
        axes = tuple(range(nax, len(x_shape)))
        xd = x.astype(np.float64)
        mean, rstd = xd.mean(axis=axes, keepdims=True), 1 / np.sqrt(xd.var(axis=axes, keepdims=True) + 1e-7)
        return [make_input(rng, x_shape, dtype), x, make_input(rng, x_shape[begin_params_axis % len(x_shape):], dtype),
                mean.astype(dtype), rstd.astype(dtype), make_input(rng, stat, dtype), make_input(rng, stat, dtype)]
    return gen


def _ln_case(x_shape, nax=-1, pax=-1, id="", dtypes=("float32", "float64")):
    return OpCase("layer_norm_grad", layer_norm_grad_ref, _ln_grad_gen(x_shape, nax, pax),
                  attrs=dict(begin_norm_axis=nax, begin_params_axis=pax), dtypes=dtypes, id=id,
                  **(F16 if "float16" in dtypes else TOL))


CASES = [
    _bwd_in((2, 3, 7, 8), (4, 3, 3, 3)),
    _bwd_in((1, 2, 9, 10), (3, 2, 3, 2), stride=2, pad_mode="same", id="same_stride2"),
    _bwd_in((2, 2, 9, 9), (3, 2, 3, 3), pad_mode="pad", pad=(1, 2, 0, 3), stride=(2, 1), id="pad4"),
    _bwd_in((1, 3, 11, 10), (2, 3, 3, 3), dilation=2, pad_mode="pad", pad=(1, 2), id="dilation"),
    _bwd_in((2, 6, 7, 7), (4, 3, 3, 3), groups=2, pad_mode="same", id="groups"),
    _bwd_in((0, 3, 5, 5), (4, 3, 3, 3), id="empty"),
    # batch 4, 16 channels, 3x3: the training Winograd F(4x4, 3x3) runs it, whose transforms round
    # at about 1e-5 of the largest output (|dx| up to ~24 here), so the bound is absolute
    OpCase("conv2d_backprop_input", conv2d_backprop_input_ref,
           _conv_bwd_gen((4, 16, 28, 28), (32, 16, 3, 3), "input", pad_mode="pad", pad=1),
           attrs=dict(input_size=(4, 16, 28, 28), pad_mode="pad", pad=1), id="large", rtol=1e-4, atol=1e-3),
    _bwd_w((2, 3, 7, 8), (4, 3, 3, 3)),
    _bwd_w((1, 2, 9, 10), (3, 2, 3, 2), stride=2, pad_mode="same", id="same_stride2"),
    _bwd_w((2, 2, 9, 9), (3, 2, 3, 3), pad_mode="pad", pad=(1, 2, 0, 3), stride=(2, 1), id="pad4"),
    _bwd_w((1, 3, 11, 10), (2, 3, 3, 3), dilation=2, pad_mode="pad", pad=(1, 2), id="dilation"),
    _bwd_w((2, 6, 7, 7), (4, 3, 3, 3), groups=2, pad_mode="same", id="groups"),
    _bwd_w((1, 4, 6, 6), (4, 1, 3, 3), groups=4, id="depthwise"),
    _bwd_w((0, 3, 5, 5), (4, 3, 3, 3), id="empty"),
    _bwd_w((4, 16, 28, 28), (32, 16, 3, 3), pad_mode="pad", pad=1, id="large"),
    _pool_case("max_pool2d_grad", max_pool2d_grad_ref, (2, 3, 6, 7), kernel_size=2, strides=2,
               dtypes=("float16", "float32", "float64")),
    _pool_case("max_pool2d_grad", max_pool2d_grad_ref, (1, 2, 7, 7), id="same", kernel_size=3, strides=2,
               pad_mode="same"),
    _pool_case("max_pool2d_grad", max_pool2d_grad_ref, (2, 7, 6), id="chw_pad", kernel_size=3, strides=2,
               pad_mode="pad", pad=1),
    _pool_case("max_pool2d_grad", max_pool2d_grad_ref, (0, 2, 4, 4), id="empty", kernel_size=2),
    _pool_case("avg_pool2d_grad", avg_pool2d_grad_ref, (2, 3, 6, 7), kernel_size=2, strides=2,
               dtypes=("float16", "float32", "float64")),
    _pool_case("avg_pool2d_grad", avg_pool2d_grad_ref, (1, 2, 7, 7), id="same", kernel_size=3, strides=2,
               pad_mode="same"),
    _pool_case("avg_pool2d_grad", avg_pool2d_grad_ref, (1, 2, 7, 6), id="pad_include", kernel_size=3, strides=2,
               pad_mode="pad", pad=1, count_include_pad=True),
    _pool_case("avg_pool2d_grad", avg_pool2d_grad_ref, (2, 3, 9, 8), id="pad4", kernel_size=(3, 4),
               strides=(2, 3), pad_mode="pad", pad=(1, 0, 2, 1)),
    OpCase("batch_norm_grad", batch_norm_grad_ref, _bn_grad_gen((4, 3, 5)), attrs=dict(is_training=True),
           id="training", **TOL),
    OpCase("batch_norm_grad", batch_norm_grad_ref, _bn_grad_gen((2, 3, 4, 5)), dtypes=("float16", "float32", "float64"),
           id="inference", **F16),
    OpCase("batch_norm_grad", batch_norm_grad_ref, _bn_grad_gen((6, 4)), attrs=dict(is_training=True), id="2d", **TOL),
    OpCase("batch_norm_grad", batch_norm_grad_ref, _bn_grad_gen((8, 16, 16, 16)), attrs=dict(is_training=True),
           id="large", **TOL),
    _ln_case((3, 8), dtypes=("float16", "float32", "float64")),
    _ln_case((2, 3, 4), 1, 1, id="axis1"),
    _ln_case((2, 3, 4), 1, -1, id="params_last"),
    _ln_case((2, 3, 4), -1, 0, id="params_first"),
    _ln_case((0, 5), id="empty"),
    _ln_case((300, 257), id="large"),
]
