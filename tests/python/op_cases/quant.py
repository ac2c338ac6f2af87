"""Table rows for the int8 inference ops: references in integer numpy (int64 accumulation) with
the float epilogue in float64."""
import numpy as np

import mycel
from op_cases import OpCase


def quantize_ref(x, scale, zero_point=0, dtype=mycel.uint8):
    lo, hi = (0, 255) if dtype == mycel.uint8 else (-128, 127)
    q = np.clip(np.round(x / np.float32(scale)) + zero_point, lo, hi)
    return q.astype(np.uint8 if dtype == mycel.uint8 else np.int8)


def dequantize_ref(x, scale, zero_point=0):
    return ((x.astype(np.float64) - zero_point) * np.float32(scale)).astype(np.float32)


def _epilogue(acc, x_scale, w_scale, b, relu, relu6=False):
    shape = (1, -1) + (1,) * (acc.ndim - 2)
    y = acc * (x_scale * np.asarray(w_scale, np.float64)).reshape(shape)
    if b is not None:
        y = y + b.astype(np.float64).reshape(shape)
    if relu6:
        y = np.clip(y, 0, 6)
    return (np.maximum(y, 0) if relu else y).astype(np.float32)


def qconv2d_ref(x, w, b=None, x_scale=1.0, x_zero_point=0, w_scale=(), stride=1, pad_mode="valid", pad=0,
                relu=False, relu6=False, **_):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xi = np.pad(x.astype(np.int64) - x_zero_point, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    acc = np.zeros((n, oc, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xi[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            acc += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    return _epilogue(acc, x_scale, w_scale, b, relu, relu6)


def qdense_ref(x, w, b=None, x_scale=1.0, x_zero_point=0, w_scale=(), relu=False, relu6=False, **_):
    acc = (x.astype(np.int64) - x_zero_point) @ w.astype(np.int64).T
    return _epilogue(acc, x_scale, w_scale, b, relu, relu6)


def _deq_or_float(x, scale, zero_point):
    if x.dtype == np.uint8:  # as dequantize_linear: (x - zp) * scale in float32
        return (x.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)
    return x


def qadd_ref(a, b, a_scale=1.0, a_zero_point=0, b_scale=1.0, b_zero_point=0, y_scale=1.0, y_zero_point=0,
             relu=False):
    # dequantize, add, relu, quantize_linear: all in float32, as the kernel computes them
    y = _deq_or_float(a, a_scale, a_zero_point) + _deq_or_float(b, b_scale, b_zero_point)
    if relu:
        y = np.maximum(y, np.float32(0))
    return quantize_ref(y, y_scale, y_zero_point)


def _qadd_u8_inputs(rng, dtype):
    return [rng.integers(0, 256, (2, 3, 5, 7)).astype(np.uint8), rng.integers(0, 256, (2, 3, 5, 7)).astype(np.uint8)]


def _qadd_mixed_inputs(rng, dtype):  # a float32 branch (a conv's output) plus a uint8 shortcut
    return [rng.standard_normal((2, 3, 5, 7)).astype(np.float32), rng.integers(0, 256, (2, 3, 5, 7)).astype(np.uint8)]


def _qconv_inputs(rng, dtype):
    return [rng.integers(0, 256, (2, 4, 7, 7)).astype(np.uint8), rng.integers(-63, 64, (6, 4, 3, 3)).astype(np.int8),
            rng.standard_normal(6).astype(np.float32)]


def _qdense_inputs(rng, dtype):
    return [rng.integers(0, 256, (5, 24)).astype(np.uint8), rng.integers(-63, 64, (7, 24)).astype(np.int8),
            rng.standard_normal(7).astype(np.float32)]


W6 = tuple(0.001 * (i + 1) for i in range(6))
W7 = tuple(0.002 * (i + 1) for i in range(7))
TOL = dict(rtol=1e-5, atol=1e-4)

CASES = [
    OpCase("quantize_linear", quantize_ref, [(3, 40)], attrs=dict(scale=0.02, zero_point=120), dtypes=("float32",)),
    OpCase("quantize_linear", quantize_ref, [(3, 40)], attrs=dict(scale=0.02, zero_point=-7, dtype=mycel.int8),
           dtypes=("float32",), id="int8"),
    OpCase("dequantize_linear", dequantize_ref, [(3, 40)], attrs=dict(scale=0.25, zero_point=3),
           dtypes=("uint8", "int8")),
    OpCase("quantize_linear", quantize_ref, [(2, 4)], attrs=dict(scale=0.02, zero_point=120), dtypes=("float32",),
           id="small"),  # help examples
    OpCase("dequantize_linear", dequantize_ref, [(2, 4)], attrs=dict(scale=0.25, zero_point=3), dtypes=("uint8",),
           id="small"),
    OpCase("qconv2d", qconv2d_ref, _qconv_inputs, attrs=dict(x_scale=0.05, x_zero_point=9, w_scale=W6), dtypes=("uint8",),
           **TOL),
    OpCase("qconv2d", qconv2d_ref, _qconv_inputs,
           attrs=dict(x_scale=0.05, w_scale=W6, stride=2, pad_mode="pad", pad=1, relu=True), dtypes=("uint8",),
           id="stride_pad_relu", **TOL),
    OpCase("qadd", qadd_ref, _qadd_u8_inputs,
           attrs=dict(a_scale=0.02, a_zero_point=100, b_scale=0.03, b_zero_point=7, y_scale=0.05, y_zero_point=90),
           dtypes=("uint8",)),
    OpCase("qadd", qadd_ref, _qadd_mixed_inputs,
           attrs=dict(b_scale=0.01, b_zero_point=128, y_scale=0.02, y_zero_point=3, relu=True), dtypes=("float32",),
           id="float_a_relu"),
    OpCase("qdense", qdense_ref, _qdense_inputs, attrs=dict(x_scale=0.05, x_zero_point=4, w_scale=W7), dtypes=("uint8",),
           **TOL),
    OpCase("qdense", qdense_ref, _qdense_inputs, attrs=dict(x_scale=0.05, w_scale=W7, relu=True), dtypes=("uint8",),
           id="relu", **TOL),
    OpCase("qconv2d", qconv2d_ref, _qconv_inputs, attrs=dict(x_scale=0.05, x_zero_point=9, w_scale=W6, relu6=True),
           dtypes=("uint8",), id="relu6", **TOL),
    OpCase("qdense", qdense_ref, _qdense_inputs, attrs=dict(x_scale=0.05, w_scale=W7, relu6=True), dtypes=("uint8",),
           id="relu6", **TOL),
]


def qavg_pool2d_ref(x, kernel_size=1, strides=1, pad_mode="valid", pad=0, count_include_pad=False, x_scale=1.0,
                    x_zero_point=0, y_scale=1.0, y_zero_point=0, **_):
    """Exact integer window sums of (x - zp) (padding adds 0), then the kernel's float32 steps:
    sum * (x_scale / count), quantized to y_scale."""
    kh, kw = (kernel_size, kernel_size) if np.isscalar(kernel_size) else kernel_size
    sh, sw = (strides, strides) if np.isscalar(strides) else strides
    p = pad if pad_mode == "pad" else 0
    n, c, h, w = x.shape
    xi = np.pad(x.astype(np.int64) - x_zero_point, ((0, 0), (0, 0), (p, p), (p, p)))
    inside = np.pad(np.ones((h, w), np.int64), p)
    oh, ow = (h + 2 * p - kh) // sh + 1, (w + 2 * p - kw) // sw + 1
    avg = np.zeros((n, c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            win = (slice(i * sh, i * sh + kh), slice(j * sw, j * sw + kw))
            count = kh * kw if count_include_pad else int(inside[win].sum())
            s = xi[(slice(None), slice(None)) + win].sum(axis=(2, 3))
            avg[:, :, i, j] = s.astype(np.float32) * (np.float32(x_scale) / np.float32(count))
    return quantize_ref(avg, y_scale, y_zero_point)


def _qpool_inputs(rng, dtype):
    return [rng.integers(0, 256, (2, 5, 7, 6)).astype(np.uint8)]


CASES += [
    OpCase("qavg_pool2d", qavg_pool2d_ref, _qpool_inputs,
           attrs=dict(kernel_size=3, strides=2, x_scale=0.05, x_zero_point=30, y_scale=0.04, y_zero_point=12),
           dtypes=("uint8",)),
    OpCase("qavg_pool2d", qavg_pool2d_ref, _qpool_inputs,
           attrs=dict(kernel_size=3, strides=1, pad_mode="pad", pad=1, count_include_pad=True, x_scale=0.05,
                      x_zero_point=128, y_scale=0.05, y_zero_point=128), dtypes=("uint8",), id="pad_include"),
    OpCase("qavg_pool2d", qavg_pool2d_ref, _qpool_inputs,
           attrs=dict(kernel_size=(7, 6), x_scale=0.02, x_zero_point=3, y_scale=0.01, y_zero_point=0),
           dtypes=("uint8",), id="global"),
]
