"""int8 quantization, simulated in float32 ("fake quant") so the same Cell trains and evaluates:
post-training quantization (per-channel symmetric int8 weights; activations calibrated over data
by min-max, percentile or KL divergence, average poolings' inputs included; bias correction) and
quantization-aware training (FakeQuantWithMinMax with straight-through gradients). Rounding sits inside stop_gradient, so the
gradient of a fake-quantized value is that of its clipping: 1 inside the range, 0 outside.

Exporting a quantized net (mycel.export, MINDIR or ONNX) writes its int8 form: quantize_linear,
qconv2d / qdense over int8 weights (the same integers and scales the fake quant uses), so the lite
runtime runs int8 kernels and ONNX Runtime gets QuantizeLinear/DequantizeLinear (QDQ) nodes.

Weights default to 7 bits ([-63, 63]): on CPUs without VNNI (AVX2, AVX-512 before Cascade Lake)
oneDNN's u8 x s8 kernels add pairs of products in int16 with saturation, and oneDNN's advice is to
keep weights within s7 so no pair can overflow. weight_bits=8 gives [-127, 127]; the lite runtime
then runs such layers exactly but slower (reference loops) on CPUs without VNNI."""
import numpy as np

import mycel
from mycel import nn, ops
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor

QMIN, QMAX = -128, 127  # int8
WEIGHT_BITS = 7  # default weight precision (see the module doc)


def weight_qmax(bits):
    """Largest weight integer of a symmetric `bits`-bit grid: 127 for 8 bits, 63 for 7."""
    if bits not in (2, 3, 4, 5, 6, 7, 8):
        raise ValueError(f"quantize: weight_bits must be an integer in [2, 8], got {bits!r}")
    return 2 ** (bits - 1) - 1


def fake_quant(x, scale, zero_point, qmin=QMIN, qmax=QMAX):
    """x quantized to int8 with (scale, zero_point) and dequantized; straight-through gradient
    inside [qmin, qmax] (scaled back), zero outside."""
    lo = (qmin - zero_point) * scale
    hi = (qmax - zero_point) * scale
    xc = ops.clip_by_value(x, lo, hi)
    q = (ops.round(xc / scale) + zero_point - zero_point) * scale
    return xc + ops.stop_gradient(q - xc)


def act_qparams(lo, hi):
    """Asymmetric int8 scale and zero point for the range [lo, hi] (widened to contain 0)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / (QMAX - QMIN) if hi > lo else 1.0
    zero_point = float(np.clip(np.round(QMIN - lo / scale), QMIN, QMAX))
    return scale, zero_point


def quantize_weight_per_channel(w, bits=8):
    """Symmetric per-output-channel int8 of a numpy weight: (int8 values, scales). A float32
    weight is quantized in float32, exactly as the fake quant of QuantConv2d/QuantDense does."""
    qmax = weight_qmax(bits)
    axes = tuple(range(1, w.ndim))
    if w.dtype == np.float32:
        scale = np.maximum(np.abs(w).max(axis=axes, keepdims=True), np.float32(1e-12)) / np.float32(qmax)
    else:
        scale = np.maximum(np.abs(w).max(axis=axes, keepdims=True), 1e-12) / qmax
    q = np.clip(np.round(w / scale), -qmax, qmax).astype(np.int8)
    return q, scale.reshape(-1)


# ---- calibration: a range per activation from samples ----

def _kl_threshold(a, bins=2048, levels=128):
    """TensorRT-style entropy calibration on |a|: the clipping threshold whose 128-level
    quantized histogram is closest (KL divergence) to the clipped reference histogram."""
    a = np.abs(a.reshape(-1))
    # Exact zeros (ReLU outputs) are exactly representable at any scale; left in, their spike
    # in the first bin would make every coarse candidate look bad and pull the threshold down.
    a = a[a != 0]
    if a.size == 0 or float(a.max()) == 0:
        return 0.0
    top = float(a.max())
    hist, edges = np.histogram(a, bins=bins, range=(0, top))
    hist = hist.astype(np.float64)
    best, best_i = np.inf, bins
    for i in range(levels, bins + 1, 16):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()  # outliers clipped into the last bin
        chunks = np.array_split(hist[:i], levels)
        q = np.concatenate([np.where(c > 0, c.sum() / max((c > 0).sum(), 1), 0) for c in chunks])
        ps, qs = p / p.sum(), q / max(q.sum(), 1e-30)
        mask = ps > 0
        kl = np.sum(ps[mask] * np.log(ps[mask] / np.maximum(qs[mask], 1e-30)))
        if kl < best:
            best, best_i = kl, i
    return float(edges[best_i])


def calibrate_range(samples, method="minmax", percentile=99.99):
    """(lo, hi) of an activation from its sampled values: "minmax", "percentile" (of |x|) or
    "kl" (entropy calibration of |x|)."""
    a = np.concatenate([s.reshape(-1) for s in samples])
    lo, hi = float(a.min()), float(a.max())
    if method == "minmax":
        return lo, hi
    if method == "percentile":
        t = float(np.percentile(np.abs(a), percentile))
    elif method == "kl":
        t = _kl_threshold(a)
    else:
        raise ValueError(f"calibrate: method must be 'minmax', 'percentile' or 'kl', got {method!r}")
    return (max(lo, -t), min(hi, t))


# ---- quantized layers ----

class FakeQuantWithMinMax(nn.Cell):
    """Fake-quantizes its input to int8 over a fixed range [min, max] (from calibration), with a
    straight-through gradient: MindSpore's nn.FakeQuantWithMinMaxObserver with its range frozen."""

    def __init__(self, min_init=-6.0, max_init=6.0):
        super().__init__()
        self.scale, self.zero_point = act_qparams(min_init, max_init)

    def construct(self, x):
        return fake_quant(x, self.scale, self.zero_point)


def _fake_quant_weight(w, axes, qmax=float(QMAX)):
    scale = ops.maximum(ops.max(ops.abs(w), axis=axes, keep_dims=True), 1e-12) / qmax
    scale = ops.stop_gradient(scale)
    q = ops.clip_by_value(ops.round(w / scale), -qmax, qmax) * scale
    return w + ops.stop_gradient(q - w)


class _QuantLayer(nn.Cell):
    """What QuantConv2d and QuantDense share: the input's fake quant, the weight grid, and the
    int8 form (set_int8) that export writes."""

    def _setup(self, layer, act_range, bias, weight_bits):
        self.weight = layer.weight
        self.bias = bias if bias is not None else layer.bias
        self.act = FakeQuantWithMinMax(*act_range)
        self.weight_bits = weight_bits
        self.qmax_w = float(weight_qmax(weight_bits))
        self.int8 = False

    def set_int8(self, flag=True):
        """Switches construct to the int8 ops (quantize_linear, then qconv2d/qdense on the
        integer weights of the current float weights): what export writes, and what the lite
        runtime runs. The integers and scales are those the fake quant rounds to."""
        if flag:
            q, scale = quantize_weight_per_channel(self.weight.asnumpy().astype(np.float32), self.weight_bits)
            self.w_int8 = Tensor(q)
            self.w_scale = tuple(float(v) for v in scale)
            self.x_scale = float(self.act.scale)
            self.x_zero_point = int(self.act.zero_point) - QMIN  # the int8 grid shifted to uint8
        self.int8 = bool(flag)
        return self


class QuantConv2d(_QuantLayer):
    """A Conv2d whose input is fake-quantized (calibrated range) and whose weight is fake-quantized
    per output channel; it holds the Conv2d's own Parameters, so QAT trains them."""

    def __init__(self, conv, act_range, bias=None, weight_bits=WEIGHT_BITS):
        super().__init__()
        self._setup(conv, act_range, bias, weight_bits)
        self.stride, self.pad_mode, self.padding = conv.stride, conv.pad_mode, conv.padding
        self.dilation, self.group = conv.dilation, conv.group

    def construct(self, x):
        if self.int8:
            xq = ops.quantize_linear(x, scale=self.x_scale, zero_point=self.x_zero_point, dtype=mycel.uint8)
            return ops.qconv2d(xq, self.w_int8, self.bias, stride=self.stride, pad_mode=self.pad_mode,
                               pad=self.padding, dilation=self.dilation, groups=self.group,
                               x_scale=self.x_scale, x_zero_point=self.x_zero_point, w_scale=self.w_scale)
        w = _fake_quant_weight(self.weight, (1, 2, 3), self.qmax_w)
        return ops.conv2d(self.act(x), w, self.bias, stride=self.stride, pad_mode=self.pad_mode,
                          pad=self.padding, dilation=self.dilation, groups=self.group)


class QuantDense(_QuantLayer):
    """A Dense with fake-quantized input and per-output-channel fake-quantized weight."""

    def __init__(self, dense, act_range, bias=None, weight_bits=WEIGHT_BITS):
        super().__init__()
        self._setup(dense, act_range, bias, weight_bits)
        self.activation = dense.activation

    def construct(self, x):
        if self.int8:
            xq = ops.quantize_linear(x, scale=self.x_scale, zero_point=self.x_zero_point, dtype=mycel.uint8)
            y = ops.qdense(xq, self.w_int8, self.bias, x_scale=self.x_scale, x_zero_point=self.x_zero_point,
                           w_scale=self.w_scale)
        else:
            y = ops.dense(self.act(x), _fake_quant_weight(self.weight, (1,), self.qmax_w), self.bias)
        if self.activation is not None:
            y = self.activation(y)
        return y


def quant_layers(net):
    """The QuantConv2d/QuantDense cells of net."""
    if not hasattr(net, "cells_and_names"):
        return []
    return [c for _, c in net.cells_and_names() if isinstance(c, _QuantLayer)]


class int8_mode:
    """Context manager: net's quantized layers in their int8 form (set_int8) inside the block."""

    def __init__(self, net, flag=True):
        self.layers = quant_layers(net)
        self.flag = flag

    def __enter__(self):
        self.old = [l.int8 for l in self.layers]
        for l in self.layers:
            l.set_int8(self.flag)
        return self

    def __exit__(self, *exc):
        for l, o in zip(self.layers, self.old):
            l.set_int8(o)


# ---- the PTQ pipeline ----

def _targets(net):
    """(parent, attribute name, layer) for every Conv2d/Dense reachable from net."""
    out = []
    for _, cell in net.cells_and_names():
        for name, child in list(cell._cells.items()):
            if isinstance(child, (nn.Conv2d, nn.Dense)):
                out.append((cell, name, child))
    return out


class _Recorder(nn.Cell):
    def __init__(self, layer, store):
        super().__init__()
        self.layer = layer
        self.store = store

    def construct(self, x):
        self.store.append(x.asnumpy())
        return self.layer(x)


def _spatial_mean(x, args, kwargs):
    """Whether ops.mean(x, *args, **kwargs) averages a 4-D tensor over H and W exactly."""
    axis = args[0] if args else kwargs.get("axis", None)
    if getattr(x, "ndim", 0) != 4 or axis is None:
        return False
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return sorted(int(a) % 4 for a in axes) == [2, 3]


# Primitive classes whose instances are average poolings (MindSpore's ResNet builds
# `ops.ReduceMean(keep_dims=True)` in __init__ and calls it over (2, 3)): class name -> op name.
_POOL_PRIMITIVES = (("ReduceMean", "mean"), ("AvgPool", "avg_pool2d"))


class _PoolRecorder:
    """Stands in for the average poolings while calibration runs eagerly: ops.avg_pool2d /
    ops.mean, the ReduceMean / AvgPool primitive classes (instances built before calibration
    included: their class's __call__ is wrapped) and Tensor.mean. The input of each average
    pooling (a spatial mean is global average pooling) is appended to `calls`, in call order, the
    order their nodes have in the exported graph (int8.quantize_pools)."""

    def __init__(self, calls):
        self.calls = calls
        self.saved = []  # (owner, attribute, original, whether owner defined it itself)

    def _record(self, name, x, args, kwargs):
        if isinstance(x, Tensor) and x.ndim == 4 and (name == "avg_pool2d" or _spatial_mean(x, args, kwargs)):
            self.calls.append((name, x.asnumpy()))

    def _patch(self, owner, attr, hook):
        self.saved.append((owner, attr, getattr(owner, attr), attr in vars(owner)))
        setattr(owner, attr, hook)

    def __enter__(self):
        for name in ("avg_pool2d", "mean"):
            orig = getattr(ops, name)

            def fn(x, *args, _name=name, _orig=orig, **kwargs):
                self._record(_name, x, args, kwargs)
                return _orig(x, *args, **kwargs)
            self._patch(ops, name, fn)
        for cls_name, name in _POOL_PRIMITIVES:
            cls = getattr(ops, cls_name, None)
            if cls is None:
                continue
            orig = cls.__call__

            def call(prim, x, *args, _name=name, _orig=orig, **kwargs):
                self._record(_name, x, args, kwargs)
                return _orig(prim, x, *args, **kwargs)
            self._patch(cls, "__call__", call)
        orig_mean = Tensor.mean

        def method(x, *args, **kwargs):
            self._record("mean", x, args, kwargs)
            return orig_mean(x, *args, **kwargs)
        self._patch(Tensor, "mean", method)
        return self

    def __exit__(self, *exc):
        for owner, attr, orig, own in reversed(self.saved):
            if own:
                setattr(owner, attr, orig)
            else:
                delattr(owner, attr)
        self.saved.clear()


def collect_activations(net, batches, max_batches=32, pools=None):
    """Inputs of every Conv2d/Dense over calibration batches (run eagerly): {layer: [arrays]}.
    With `pools` (a list), the inputs of average poolings are appended to it per batch: one list
    of (op name, array) per batch, in call order."""
    targets = _targets(net)
    stores = {id(layer): [] for _, _, layer in targets}
    for parent, name, layer in targets:
        setattr(parent, name, _Recorder(layer, stores[id(layer)]))
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    training = net.training
    net.set_train(False)
    try:
        for i, x in enumerate(batches):
            if i >= max_batches:
                break
            calls = []
            with _PoolRecorder(calls):
                net(x if isinstance(x, Tensor) else Tensor(np.asarray(x)))
            if pools is not None:
                pools.append(calls)
    finally:
        for parent, name, layer in targets:
            setattr(parent, name, layer)
        mycel.set_context(mode=old)
        net.set_train(training)
    return {id(layer): stores[id(layer)] for _, _, layer in targets}


def pool_qparams(pool_calls, method="minmax", percentile=99.99):
    """Per average pooling (call order): {"op", "shape" (C, H, W), "scale", "zero_point"} (uint8),
    its input's range calibrated as a layer input's is. Empty when batches disagree on the calls."""
    if not pool_calls or any(len(c) != len(pool_calls[0]) for c in pool_calls):
        return []
    out = []
    for k, (name, first) in enumerate(pool_calls[0]):
        samples = [c[k][1] for c in pool_calls]
        if any(c[k][0] != name or c[k][1].shape[1:] != first.shape[1:] for c in pool_calls):
            return []
        scale, zp = act_qparams(*calibrate_range(samples, method, percentile))
        out.append({"op": name, "shape": tuple(first.shape[1:]), "scale": float(scale),
                    "zero_point": int(zp) - QMIN})
    return out


def _bias_correction(layer, samples, weight_bits=WEIGHT_BITS):
    """Bias that cancels the mean output shift (W_q - W) E[x] of quantizing the weight."""
    w = layer.weight.asnumpy().astype(np.float64)
    q, scale = quantize_weight_per_channel(w, weight_bits)
    dw = q.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1)) - w
    a = np.concatenate(samples)
    if w.ndim == 4:  # conv: mean input per channel, summed over the kernel window
        mean_in = a.mean(axis=(0, 2, 3))
        shift = np.einsum("ochw,c->o", dw, mean_in)
    else:
        shift = dw @ a.reshape(-1, w.shape[1]).mean(axis=0)
    b0 = layer.bias.asnumpy() if layer.bias is not None else np.zeros(w.shape[0], np.float32)
    return Parameter(Tensor((b0 - shift).astype(np.float32)), name=layer.weight.name + ".qbias")


def quantize(net, calib_batches, method="minmax", bias_correction=True, percentile=99.99, max_batches=32,
             weight_bits=WEIGHT_BITS):
    """Post-training int8 quantization of net's Conv2d/Dense layers in place (simulated): weights
    per output channel on a `weight_bits` grid (7 by default, see the module doc), input
    activations over ranges calibrated on `calib_batches`. Returns net."""
    weight_qmax(weight_bits)
    pool_calls = []
    acts = collect_activations(net, calib_batches, max_batches, pool_calls)
    # The average poolings' input scales: export runs them int8 (mycel.lite.int8.quantize_pools).
    # The simulated net keeps them float32 (they are calls inside construct, not cells).
    object.__setattr__(net, "_quant_pools", pool_qparams(pool_calls, method, percentile))
    for parent, name, layer in _targets(net):
        samples = acts[id(layer)]
        if not samples:
            continue
        rng = calibrate_range(samples, method, percentile)
        bias = _bias_correction(layer, samples, weight_bits) if bias_correction else None
        kind = QuantConv2d if isinstance(layer, nn.Conv2d) else QuantDense
        wrapper = kind(layer, rng, bias, weight_bits)
        setattr(parent, name, wrapper)
    return net
