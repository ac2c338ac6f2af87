"""Table rows for the nn family: matmul, dense, conv2d, pooling, normalization, softmax.

References are direct numpy implementations computed in float64 and cast back to the input dtype.
"""
import numpy as np

from op_cases import OpCase, make_input

INT = ("int8", "uint8", "int16", "int32", "int64")
FLOATS = ("float16", "float32", "float64")
TOL = dict(rtol=1e-4, atol=1e-4)  # float32 sums over a few hundred products


def _f64(*arrays):
    return [None if a is None else np.asarray(a, dtype=np.float64) for a in arrays]


def _pair(v):
    v = (v,) if np.isscalar(v) else tuple(v)
    return (v[0], v[0]) if len(v) == 1 else v[-2:]


def _pad4(p):
    p = (p,) if np.isscalar(p) else tuple(p)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return (p[0], p[0], p[1], p[1])
    return p


def _same_or_given(n, k, s, d, mode, p0, p1):
    """Padding of one dim: TF/MindSpore 'same' puts the extra row at the end."""
    ek = d * (k - 1) + 1
    if mode == "same":
        out = -(-n // s)
        total = max((out - 1) * s + ek - n, 0)
        return total // 2, total - total // 2
    return (0, 0) if mode == "valid" else (p0, p1)


# ---- matmul / dense ----

def matmul_ref(x, y, transpose_a=False, transpose_b=False):
    if transpose_a and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if transpose_b and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    if x.dtype.kind in "iu":
        return np.matmul(x, y)
    return np.asarray(np.matmul(*_f64(x, y))).astype(x.dtype)


def dense_ref(x, w, b=None):
    xd, wd, bd = _f64(x, w, b)
    out = xd @ wd.T
    return (out if bd is None else out + bd).astype(x.dtype)


def _dense_gen(x_shape, out_features, bias=True):
    def gen(rng, dtype):
        arrays = [make_input(rng, x_shape, dtype), make_input(rng, (out_features, x_shape[-1]), dtype)]
        if bias:
            arrays.append(make_input(rng, (out_features,), dtype))
        return arrays
    return gen


# ---- conv2d ----

def conv2d_ref(x, w, b=None, stride=1, pad_mode="valid", pad=0, dilation=1, groups=1):
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    pt, pb, pl, pr = _pad4(pad)
    n, c, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    pt, pb = _same_or_given(h, kh, sh, dh, pad_mode, pt, pb)
    pl, pr = _same_or_given(wd, kw, sw, dw, pad_mode, pl, pr)
    xd, wt, bd = _f64(x, w, b)
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for g in range(groups):
        xg = xp[:, g * icg:(g + 1) * icg]
        wg = wt[g * ocg:(g + 1) * ocg]
        for i in range(kh):
            for j in range(kw):
                patch = xg[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    if bd is not None:
        out += bd[None, :, None, None]
    return out.astype(x.dtype)


def _conv_gen(x_shape, w_shape, bias=False):
    def gen(rng, dtype):
        arrays = [make_input(rng, x_shape, dtype), make_input(rng, w_shape, dtype)]
        if bias:
            arrays.append(make_input(rng, (w_shape[0],), dtype))
        return arrays
    return gen


# ---- pooling ----

def _pool_windows(x, kernel_size, strides, pad_mode, pad, fill):
    """Padded input, its validity mask, the output size and a window iterator."""
    (kh, kw), (sh, sw) = _pair(kernel_size), _pair(strides)
    pt, pb, pl, pr = _pad4(pad)
    h, w = x.shape[-2:]
    pt, pb = _same_or_given(h, kh, sh, 1, pad_mode, pt, pb)
    pl, pr = _same_or_given(w, kw, sw, 1, pad_mode, pl, pr)
    widths = [(0, 0)] * (x.ndim - 2) + [(pt, pb), (pl, pr)]
    xp = np.pad(np.asarray(x, np.float64), widths, constant_values=fill)
    valid = np.pad(np.ones(x.shape[-2:]), [(pt, pb), (pl, pr)])
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    windows = [(i, j, np.s_[..., i * sh:i * sh + kh, j * sw:j * sw + kw]) for i in range(oh) for j in range(ow)]
    return xp, valid, (oh, ow), windows


def max_pool2d_ref(x, kernel_size=1, strides=1, pad_mode="valid", pad=0, stride=None):
    strides = strides if stride is None else stride
    xp, _, (oh, ow), windows = _pool_windows(x, kernel_size, strides, pad_mode, pad, -np.inf)
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i, j, sl in windows:
        out[..., i, j] = xp[sl].max(axis=(-1, -2))
    return out.astype(x.dtype)


def avg_pool2d_ref(x, kernel_size=1, strides=1, pad_mode="valid", pad=0, count_include_pad=False):
    xp, valid, (oh, ow), windows = _pool_windows(x, kernel_size, strides, pad_mode, pad, 0.0)
    if count_include_pad and pad_mode == "pad":
        valid = np.ones_like(valid)
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i, j, sl in windows:
        out[..., i, j] = xp[sl].sum(axis=(-1, -2)) / valid[sl].sum()
    return out.astype(x.dtype)


def adaptive_avg_pool2d_ref(x, output_size):
    oh, ow = _pair(output_size)
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = np.asarray(x[..., h0:h1, w0:w1], np.float64).mean(axis=(-1, -2))
    return out.astype(x.dtype)


# ---- normalization and softmax ----

def batch_norm_ref(x, scale, bias, mean, variance, is_training=False, epsilon=1e-5, momentum=0.1):
    xd, s, b, m, v = _f64(x, scale, bias, mean, variance)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if is_training:
        axes = (0,) + tuple(range(2, x.ndim))
        m, v = xd.mean(axis=axes), xd.var(axis=axes)
    invstd = 1.0 / np.sqrt(v + epsilon)
    y = (xd - m.reshape(shape)) * (invstd * s).reshape(shape) + b.reshape(shape)
    return y.astype(x.dtype), m.astype(mean.dtype), invstd.astype(mean.dtype)


def _bn_gen(x_shape):
    def gen(rng, dtype):
        c = x_shape[1]
        return [make_input(rng, x_shape, dtype), make_input(rng, (c,), dtype), make_input(rng, (c,), dtype),
                make_input(rng, (c,), dtype), make_input(rng, (c,), dtype, "positive")]
    return gen


def layer_norm_ref(x, gamma, beta, begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-7):
    xd, g, b = _f64(x, gamma, beta)
    axes = tuple(range(begin_norm_axis % x.ndim, x.ndim))
    mean = xd.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(xd.var(axis=axes, keepdims=True) + epsilon)
    y = (xd - mean) * rstd * g + b
    return y.astype(x.dtype), mean.astype(x.dtype), rstd.astype(x.dtype)


def _ln_gen(x_shape, begin_params_axis):
    def gen(rng, dtype):
        p = x_shape[begin_params_axis % len(x_shape):]
        return [make_input(rng, x_shape, dtype), make_input(rng, p, dtype), make_input(rng, p, dtype)]
    return gen


def softmax_ref(x, axis=-1):
    xd = np.asarray(x, np.float64)
    e = np.exp(xd - xd.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def softmax_grad_ref(y, dy, axis=-1):
    yd, dd = np.asarray(y, np.float64), np.asarray(dy, np.float64)
    return (yd * (dd - (dd * yd).sum(axis=axis, keepdims=True))).astype(y.dtype)


def log_softmax_ref(x, axis=-1):
    xd = np.asarray(x, np.float64)
    z = xd - xd.max(axis=axis, keepdims=True)
    return (z - np.log(np.exp(z).sum(axis=axis, keepdims=True))).astype(x.dtype)


CASES = [
    # matmul
    OpCase("matmul", matmul_ref, [(3, 4), (4, 5)], **TOL),
    OpCase("matmul", matmul_ref, [(3, 4), (4, 5)], dtypes=INT, id="int"),
    OpCase("matmul", matmul_ref, [(3, 4), (4, 5)], dtypes=("float16",), id="f16", rtol=1e-2, atol=1e-2),
    OpCase("matmul", matmul_ref, [(2, 1, 3, 4), (5, 4, 6)], id="batch_bcast", **TOL),
    OpCase("matmul", matmul_ref, [(2, 3, 4), (4, 6)], id="batch_2d", **TOL),
    OpCase("matmul", matmul_ref, [(4, 3), (2, 5, 4)], attrs=dict(transpose_a=True, transpose_b=True),
           id="transpose_both", **TOL),
    OpCase("matmul", matmul_ref, [(4, 3), (4, 5)], attrs=dict(transpose_a=True), id="transpose_a", **TOL),
    OpCase("matmul", matmul_ref, [(3, 4), (5, 4)], attrs=dict(transpose_b=True), id="transpose_b", **TOL),
    OpCase("matmul", matmul_ref, [(4,), (4,)], id="1d_1d", **TOL),
    OpCase("matmul", matmul_ref, [(4,), (2, 4, 5)], id="1d_x", **TOL),
    OpCase("matmul", matmul_ref, [(2, 3, 4), (4,)], id="1d_y", dtypes=("float32", "float64", "int32"), **TOL),
    OpCase("matmul", matmul_ref, [(0, 4), (4, 5)], id="empty"),
    OpCase("matmul", matmul_ref, [(3, 0), (0, 5)], id="empty_k"),
    OpCase("matmul", matmul_ref, [(130, 300), (300, 270)], id="large", **TOL),
    OpCase("matmul", matmul_ref, [(70, 33, 20), (20, 50)], id="large_batch", **TOL),
    # dense
    OpCase("dense", dense_ref, _dense_gen((3, 4), 5), **TOL),
    OpCase("dense", dense_ref, _dense_gen((2, 3, 4), 5, bias=False), id="no_bias", **TOL),
    OpCase("dense", dense_ref, _dense_gen((4,), 3), id="1d", **TOL),
    OpCase("dense", dense_ref, _dense_gen((3, 4), 5), dtypes=("float16",), id="f16", rtol=1e-2, atol=1e-2),
    OpCase("dense", dense_ref, _dense_gen((0, 4), 3), id="empty", **TOL),
    OpCase("dense", dense_ref, _dense_gen((200, 64), 300), id="large", **TOL),
    # conv2d
    OpCase("conv2d", conv2d_ref, _conv_gen((2, 3, 7, 8), (4, 3, 3, 3)), **TOL),
    OpCase("conv2d", conv2d_ref, [(1, 1, 4, 4), (2, 1, 3, 3)], id="small", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((2, 3, 7, 8), (4, 3, 3, 3), bias=True), id="bias", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((1, 2, 9, 10), (3, 2, 3, 2)), attrs=dict(stride=2, pad_mode="same"),
           id="same_stride2", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((1, 2, 8, 8), (3, 2, 4, 4)), attrs=dict(pad_mode="same"),
           id="same_even_kernel", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((2, 2, 9, 9), (3, 2, 3, 3)),
           attrs=dict(pad_mode="pad", pad=(1, 2, 0, 3), stride=(2, 1)), id="pad4", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((1, 2, 6, 6), (2, 2, 3, 3)), attrs=dict(pad_mode="pad", pad=1),
           id="pad1", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((1, 3, 11, 10), (2, 3, 3, 3)), attrs=dict(dilation=2, pad_mode="pad", pad=(1, 2)),
           id="dilation", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((2, 6, 7, 7), (4, 3, 3, 3), bias=True), attrs=dict(groups=2, pad_mode="same"),
           id="groups", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((1, 4, 6, 6), (4, 1, 3, 3)), attrs=dict(groups=4), id="depthwise", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((0, 3, 5, 5), (4, 3, 3, 3)), id="empty", **TOL),
    OpCase("conv2d", conv2d_ref, _conv_gen((2, 8, 48, 48), (16, 8, 3, 3)), attrs=dict(pad_mode="pad", pad=1),
           id="large", **TOL),
    # pooling
    OpCase("max_pool2d", max_pool2d_ref, [(2, 3, 6, 7)], attrs=dict(kernel_size=2, strides=2), dtypes=FLOATS),
    OpCase("max_pool2d", max_pool2d_ref, [(1, 1, 4, 4)], attrs=dict(kernel_size=2, strides=2), id="small"),
    OpCase("max_pool2d", max_pool2d_ref, [(1, 2, 7, 7)], attrs=dict(kernel_size=3, strides=2, pad_mode="same"), id="same"),
    OpCase("max_pool2d", max_pool2d_ref, [(1, 2, 7, 6)], attrs=dict(kernel_size=3, stride=2, pad_mode="pad", pad=1),
           id="pad"),
    OpCase("max_pool2d", max_pool2d_ref, [(3, 5, 5)], attrs=dict(kernel_size=(2, 3), strides=(1, 2)), id="chw"),
    OpCase("max_pool2d", max_pool2d_ref, [(2, 3, 8, 9)], attrs=dict(kernel_size=(3, 2), strides=2, pad_mode="same"),
           id="same_asym"),
    OpCase("max_pool2d", max_pool2d_ref, [(0, 2, 4, 4)], attrs=dict(kernel_size=2), id="empty"),
    # uint8: quantized activations of int8 models (a 2x2/2 fast path and the general loop)
    OpCase("max_pool2d", max_pool2d_ref, [(2, 3, 6, 7)], attrs=dict(kernel_size=2, strides=2), dtypes=("uint8",),
           id="uint8"),
    OpCase("max_pool2d", max_pool2d_ref, [(1, 2, 7, 6)], attrs=dict(kernel_size=3, stride=2, pad_mode="pad", pad=1),
           dtypes=("uint8",), id="uint8_pad"),
    OpCase("max_pool2d", max_pool2d_ref, [(4, 16, 64, 64)], attrs=dict(kernel_size=2, strides=2), id="large"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(2, 3, 6, 7)], attrs=dict(kernel_size=2, strides=2), dtypes=FLOATS),
    OpCase("avg_pool2d", avg_pool2d_ref, [(1, 1, 4, 4)], attrs=dict(kernel_size=2, strides=2), id="small"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(1, 2, 7, 7)], attrs=dict(kernel_size=3, strides=2, pad_mode="same"),
           id="same"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(1, 2, 6, 6)], attrs=dict(kernel_size=3, strides=1, pad_mode="same"),
           id="same_s1"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(1, 2, 7, 6)], attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1),
           id="pad"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(1, 2, 7, 6)],
           attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1, count_include_pad=True), id="pad_include"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(2, 3, 8, 9)], attrs=dict(kernel_size=(3, 2), strides=2, pad_mode="same"),
           id="same_asym"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(2, 3, 9, 8)],
           attrs=dict(kernel_size=(3, 4), strides=(2, 3), pad_mode="pad", pad=(1, 0, 2, 1), count_include_pad=True),
           id="pad4_include"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(0, 2, 4, 4)], attrs=dict(kernel_size=2), id="empty"),
    OpCase("avg_pool2d", avg_pool2d_ref, [(4, 16, 64, 64)], attrs=dict(kernel_size=3, strides=2, pad_mode="same"),
           id="large"),
    OpCase("adaptive_avg_pool2d", adaptive_avg_pool2d_ref, [(2, 3, 7, 9)], attrs=dict(output_size=(3, 4)),
           dtypes=FLOATS),
    OpCase("adaptive_avg_pool2d", adaptive_avg_pool2d_ref, [(3, 5, 5)], attrs=dict(output_size=2), id="chw"),
    OpCase("adaptive_avg_pool2d", adaptive_avg_pool2d_ref, [(1, 2, 4, 4)], attrs=dict(output_size=(6, 1)), id="upsample"),
    OpCase("adaptive_avg_pool2d", adaptive_avg_pool2d_ref, [(0, 2, 4, 4)], attrs=dict(output_size=2), id="empty"),
    OpCase("adaptive_avg_pool2d", adaptive_avg_pool2d_ref, [(8, 32, 30, 30)], attrs=dict(output_size=7), id="large"),
    # batch_norm
    OpCase("batch_norm", batch_norm_ref, _bn_gen((2, 3, 4, 5)), dtypes=FLOATS),
    OpCase("batch_norm", batch_norm_ref, _bn_gen((4, 3, 5)), attrs=dict(is_training=True), dtypes=FLOATS,
           id="training", **TOL),
    OpCase("batch_norm", batch_norm_ref, _bn_gen((6, 4)), attrs=dict(is_training=True, epsilon=1e-3), id="training_2d",
           **TOL),
    OpCase("batch_norm", batch_norm_ref, _bn_gen((0, 3, 2, 2)), id="empty"),
    OpCase("batch_norm", batch_norm_ref, _bn_gen((8, 16, 32, 32)), attrs=dict(is_training=True), id="large", **TOL),
    # layer_norm
    OpCase("layer_norm", layer_norm_ref, _ln_gen((3, 8), -1), dtypes=FLOATS, **TOL),
    OpCase("layer_norm", layer_norm_ref, _ln_gen((2, 3, 4), 1), attrs=dict(begin_norm_axis=1, begin_params_axis=1),
           id="axis1", **TOL),
    OpCase("layer_norm", layer_norm_ref, _ln_gen((2, 3, 4), -1), attrs=dict(begin_norm_axis=1, begin_params_axis=-1),
           id="params_last", **TOL),
    OpCase("layer_norm", layer_norm_ref, _ln_gen((2, 3, 4), 0), attrs=dict(begin_norm_axis=-1, begin_params_axis=0),
           id="params_first", **TOL),
    OpCase("layer_norm", layer_norm_ref, _ln_gen((2, 3, 4, 5), -2), attrs=dict(begin_norm_axis=-2, begin_params_axis=-2),
           id="last_two", **TOL),
    OpCase("layer_norm", layer_norm_ref, _ln_gen((0, 5), -1), id="empty"),
    OpCase("layer_norm", layer_norm_ref, _ln_gen((300, 257), -1), attrs=dict(epsilon=1e-5), id="large", **TOL),
    # softmax
    OpCase("softmax", softmax_ref, [(3, 5)], dtypes=FLOATS),
    OpCase("softmax", softmax_ref, [(2, 3, 4)], attrs=dict(axis=0), id="axis0"),
    OpCase("softmax", softmax_ref, [(2, 3, 4)], attrs=dict(axis=1), id="axis1"),
    OpCase("softmax", softmax_ref, [(2, 3, 4)], attrs=dict(axis=-1), id="axis2"),
    OpCase("softmax", softmax_ref, [()], id="0d"),
    OpCase("softmax", softmax_ref, [(0, 4)], id="empty"),
    OpCase("softmax", softmax_ref, [(200, 300)], id="large"),
    # softmax_grad: random y and dy (the formula, not only softmax outputs); rows of 8 and longer
    # take the vectorized sum, odd rows its tail
    OpCase("softmax_grad", softmax_grad_ref, [(3, 5), (3, 5)], dtypes=FLOATS),
    OpCase("softmax_grad", softmax_grad_ref, [(4, 19), (4, 19)], id="row19"),
    OpCase("softmax_grad", softmax_grad_ref, [(2, 3, 4), (2, 3, 4)], attrs=dict(axis=0), id="axis0"),
    OpCase("softmax_grad", softmax_grad_ref, [(2, 9, 4), (2, 9, 4)], attrs=dict(axis=1), id="axis1"),
    OpCase("softmax_grad", softmax_grad_ref, [(), ()], id="0d"),
    OpCase("softmax_grad", softmax_grad_ref, [(0, 4), (0, 4)], id="empty"),
    OpCase("softmax_grad", softmax_grad_ref, [(200, 300), (200, 300)], id="large"),
    OpCase("log_softmax", log_softmax_ref, [(3, 5)], dtypes=FLOATS),
    OpCase("log_softmax", log_softmax_ref, [(2, 3, 4)], attrs=dict(axis=0), id="axis0"),
    OpCase("log_softmax", log_softmax_ref, [(2, 3, 4)], attrs=dict(axis=1), id="axis1"),
    OpCase("log_softmax", log_softmax_ref, [()], id="0d"),
    OpCase("log_softmax", log_softmax_ref, [(0, 4)], id="empty"),
    OpCase("log_softmax", log_softmax_ref, [(300, 200)], attrs=dict(axis=0), id="large"),
    OpCase("log_softmax", log_softmax_ref, [(200, 300)], id="large_last"),
]
