"""int8 quantization, simulated in float32 ("fake quant") so the same Cell trains and evaluates:
post-training quantization (per-channel symmetric int8 weights; activations calibrated over data
by min-max, percentile or KL divergence; bias correction) and quantization-aware training
(FakeQuantWithMinMax with straight-through gradients). Rounding sits inside stop_gradient, so the
gradient of a fake-quantized value is that of its clipping: 1 inside the range, 0 outside."""
import numpy as np

import mycel
from mycel import nn, ops
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor

QMIN, QMAX = -128, 127  # int8


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


def quantize_weight_per_channel(w):
    """Symmetric per-output-channel int8 of a numpy weight: (int8 values, scales)."""
    axes = tuple(range(1, w.ndim))
    scale = np.maximum(np.abs(w).max(axis=axes, keepdims=True), 1e-12) / QMAX
    q = np.clip(np.round(w / scale), -QMAX, QMAX).astype(np.int8)
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


def _fake_quant_weight(w, axes):
    scale = ops.maximum(ops.max(ops.abs(w), axis=axes, keep_dims=True), 1e-12) / float(QMAX)
    scale = ops.stop_gradient(scale)
    q = ops.clip_by_value(ops.round(w / scale), -float(QMAX), float(QMAX)) * scale
    return w + ops.stop_gradient(q - w)


class QuantConv2d(nn.Cell):
    """A Conv2d whose input is fake-quantized (calibrated range) and whose weight is fake-quantized
    per output channel; it holds the Conv2d's own Parameters, so QAT trains them."""

    def __init__(self, conv, act_range, bias=None):
        super().__init__()
        self.weight = conv.weight
        self.bias = bias if bias is not None else conv.bias
        self.act = FakeQuantWithMinMax(*act_range)
        self.stride, self.pad_mode, self.padding = conv.stride, conv.pad_mode, conv.padding
        self.dilation, self.group = conv.dilation, conv.group

    def construct(self, x):
        w = _fake_quant_weight(self.weight, (1, 2, 3))
        return ops.conv2d(self.act(x), w, self.bias, stride=self.stride, pad_mode=self.pad_mode,
                          pad=self.padding, dilation=self.dilation, groups=self.group)


class QuantDense(nn.Cell):
    """A Dense with fake-quantized input and per-output-channel fake-quantized weight."""

    def __init__(self, dense, act_range, bias=None):
        super().__init__()
        self.weight = dense.weight
        self.bias = bias if bias is not None else dense.bias
        self.act = FakeQuantWithMinMax(*act_range)
        self.activation = dense.activation

    def construct(self, x):
        y = ops.dense(self.act(x), _fake_quant_weight(self.weight, (1,)), self.bias)
        if self.activation is not None:
            y = self.activation(y)
        return y


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


def collect_activations(net, batches, max_batches=32):
    """Inputs of every Conv2d/Dense over calibration batches (run eagerly): {layer: [arrays]}."""
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
            net(x if isinstance(x, Tensor) else Tensor(np.asarray(x)))
    finally:
        for parent, name, layer in targets:
            setattr(parent, name, layer)
        mycel.set_context(mode=old)
        net.set_train(training)
    return {id(layer): stores[id(layer)] for _, _, layer in targets}


def _bias_correction(layer, samples):
    """Bias that cancels the mean output shift (W_q - W) E[x] of quantizing the weight."""
    w = layer.weight.asnumpy().astype(np.float64)
    q, scale = quantize_weight_per_channel(w)
    dw = q.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1)) - w
    a = np.concatenate(samples)
    if w.ndim == 4:  # conv: mean input per channel, summed over the kernel window
        mean_in = a.mean(axis=(0, 2, 3))
        shift = np.einsum("ochw,c->o", dw, mean_in)
    else:
        shift = dw @ a.reshape(-1, w.shape[1]).mean(axis=0)
    b0 = layer.bias.asnumpy() if layer.bias is not None else np.zeros(w.shape[0], np.float32)
    return Parameter(Tensor((b0 - shift).astype(np.float32)), name=layer.weight.name + ".qbias")


def quantize(net, calib_batches, method="minmax", bias_correction=True, percentile=99.99, max_batches=32):
    """Post-training int8 quantization of net's Conv2d/Dense layers in place (simulated): weights
    per output channel, input activations over ranges calibrated on `calib_batches`. Returns net."""
    acts = collect_activations(net, calib_batches, max_batches)
    for parent, name, layer in _targets(net):
        samples = acts[id(layer)]
        if not samples:
            continue
        rng = calibrate_range(samples, method, percentile)
        bias = _bias_correction(layer, samples) if bias_correction else None
        wrapper = QuantConv2d(layer, rng, bias) if isinstance(layer, nn.Conv2d) else QuantDense(layer, rng, bias)
        setattr(parent, name, wrapper)
    return net
