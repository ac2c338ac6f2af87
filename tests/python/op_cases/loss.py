"""Table rows for the loss ops. References compute in float64 with numpy and cast to the input
dtype; softmax losses use a shifted log-sum-exp so that extreme logits stay finite."""
import numpy as np

from op_cases import OpCase

REDUCTIONS = ("mean", "sum", "none")
F16 = dict(rtol=5e-3, atol=5e-3)


def _reduce(per, reduction, dtype, divisor=None):
    if reduction == "none":
        return per.astype(dtype)
    s = per.sum()
    if reduction == "mean":
        s = s / (per.size if divisor is None else divisor)
    return np.asarray(s, dtype=dtype)


def _lse(x):
    m = x.max(axis=1, keepdims=True) if x.shape[1] else np.zeros((x.shape[0], 1))
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


# ---- references ----

def softmax_ce_ref(logits, labels):
    x, y = logits.astype(np.float64), labels.astype(np.float64)
    lse = _lse(x)
    loss = (y * (lse - x)).sum(axis=1)
    return loss.astype(logits.dtype), (np.exp(x - lse) - y).astype(logits.dtype)


def sparse_ce_ref(logits, labels, reduction="mean"):
    x = logits.astype(np.float64)
    per = _lse(x)[:, 0] - x[np.arange(x.shape[0]), labels]
    return _reduce(per, reduction, logits.dtype)


def nll_ref(logits, target, weight=None, reduction="mean", ignore_index=-100):
    x = logits.astype(np.float64)
    n, c = x.shape
    w_cls = np.ones(c) if weight is None else weight.astype(np.float64)
    keep = target != ignore_index
    t = np.where(keep, target, 0)
    w = np.where(keep, w_cls[t] if c else 0.0, 0.0)
    per = np.where(keep, -w * (x[np.arange(n), t] if c else 0.0), 0.0)
    total = w.sum()
    return _reduce(per, reduction, logits.dtype, divisor=total), np.asarray(total, logits.dtype)


def bce_ref(logits, labels, weight=None, reduction="mean"):
    p, y = logits.astype(np.float64), labels.astype(np.float64)
    with np.errstate(divide="ignore"):
        per = -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))
    if weight is not None:
        per = per * weight.astype(np.float64)
    return _reduce(per, reduction, logits.dtype)


def bce_logits_ref(logits, label, weight=None, pos_weight=None, reduction="mean"):
    x, y = logits.astype(np.float64), label.astype(np.float64)
    softplus_neg = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # log(1 + exp(-x))
    pw = 1.0 if pos_weight is None else pos_weight.astype(np.float64)
    per = (1 - y) * x + (1 + (pw - 1) * y) * softplus_neg
    if weight is not None:
        per = per * weight.astype(np.float64)
    return _reduce(per, reduction, logits.dtype)


def mse_ref(logits, labels, reduction="mean"):
    d = logits.astype(np.float64) - labels.astype(np.float64)
    return _reduce(d * d, reduction, np.result_type(logits.dtype, labels.dtype))


# ---- input generators: gen(rng, dtype) -> list of arrays ----

def logits_probs(n, c, scale=1.0):
    def gen(rng, dtype):
        x = (rng.standard_normal((n, c)) * scale).astype(dtype)
        p = rng.random((n, c)) + 0.1
        return [x, (p / p.sum(axis=1, keepdims=True)).astype(dtype)]
    return gen


def logits_indices(n, c, label_dtype="int64", scale=1.0, weight=False, ignore=None):
    def gen(rng, dtype):
        x = (rng.standard_normal((n, c)) * scale).astype(dtype)
        t = rng.integers(0, c, size=n).astype(label_dtype)
        if ignore is not None and n:
            t[::3] = ignore
        arrays = [x, t]
        if weight:
            arrays.append(rng.uniform(0.5, 2.0, size=c).astype(dtype))
        return arrays
    return gen


def probs_labels(shape, weight_shape=None, extremes=False):
    def gen(rng, dtype):
        p = rng.uniform(0.02, 0.98, size=shape)
        if extremes:  # exact 0 and 1 probabilities: the log clamp at -100 applies
            p.flat[::2] = np.round(p.flat[::2])
        y = rng.random(shape)
        arrays = [np.asarray(p, dtype=dtype), np.asarray(y, dtype=dtype)]
        if weight_shape is not None:
            arrays.append(rng.uniform(0.5, 2.0, size=weight_shape).astype(dtype))
        return arrays
    return gen


def logits_labels(shape, scale=1.0, weight_shape=None, pos_weight_shape=None):
    def gen(rng, dtype):
        arrays = [np.asarray(rng.standard_normal(shape) * scale, dtype=dtype),
                  np.asarray(rng.random(shape) < 0.5, dtype=dtype)]
        if weight_shape is not None or pos_weight_shape is not None:
            arrays.append(np.asarray(rng.uniform(0.5, 2.0, size=weight_shape or ()), dtype=dtype))
        if pos_weight_shape is not None:
            arrays.append(rng.uniform(0.5, 3.0, size=pos_weight_shape).astype(dtype))
        return arrays
    return gen


FLOATS = ("float32", "float64")
SCE, SSCE = "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits"
BCE, BCEL = "binary_cross_entropy", "binary_cross_entropy_with_logits"

CASES = [
    # softmax_cross_entropy_with_logits
    OpCase(SCE, softmax_ce_ref, logits_probs(4, 5), dtypes=FLOATS),
    OpCase(SCE, softmax_ce_ref, logits_probs(4, 5), dtypes=("float16",),
           id="f16", **F16),
    OpCase(SCE, softmax_ce_ref, logits_probs(0, 5), id="empty"),
    OpCase(SCE, softmax_ce_ref, logits_probs(3, 1), id="one_class"),
    OpCase(SCE, softmax_ce_ref, logits_probs(300, 200), id="large"),
    OpCase(SCE, softmax_ce_ref, logits_probs(6, 7, scale=1e4),
           id="extreme", rtol=1e-5, atol=1e-3),
]

for _r in REDUCTIONS:
    CASES += [
        OpCase(SSCE, sparse_ce_ref, logits_indices(5, 7),
               attrs={"reduction": _r}, id=_r),
        OpCase("nll_loss", nll_ref, logits_indices(6, 4), attrs={"reduction": _r}, id=_r),
        OpCase("nll_loss", nll_ref, logits_indices(6, 4, weight=True, ignore=-100),
               attrs={"reduction": _r}, id=f"weight_ignore_{_r}"),
        OpCase(BCE, bce_ref, probs_labels((3, 4)), attrs={"reduction": _r}, id=_r),
        OpCase(BCE, bce_ref, probs_labels((3, 4), weight_shape=(4,)),
               attrs={"reduction": _r}, id=f"weight_{_r}"),
        OpCase(BCEL, bce_logits_ref, logits_labels((3, 4)),
               attrs={"reduction": _r}, id=_r),
        OpCase(BCEL, bce_logits_ref,
               logits_labels((3, 4), weight_shape=(3, 1), pos_weight_shape=(4,)),
               attrs={"reduction": _r}, id=f"weights_{_r}"),
        OpCase("mse_loss", mse_ref, [(3, 4), (3, 4)], attrs={"reduction": _r}, id=_r),
        OpCase("mse_loss", mse_ref, [(2, 1, 4), (3, 1)], attrs={"reduction": _r}, id=f"bcast_{_r}"),
    ]

CASES += [
    # sparse_softmax_cross_entropy_with_logits
    OpCase(SSCE, sparse_ce_ref, logits_indices(5, 7, "int32"),
           id="int32_labels"),
    OpCase(SSCE, sparse_ce_ref, logits_indices(5, 7),
           dtypes=("float16",), id="f16", **F16),
    OpCase(SSCE, sparse_ce_ref, logits_indices(0, 7),
           attrs={"reduction": "sum"}, id="empty"),
    OpCase(SSCE, sparse_ce_ref, logits_indices(500, 100),
           attrs={"reduction": "none"}, id="large"),
    OpCase(SSCE, sparse_ce_ref, logits_indices(8, 6, scale=1e4),
           attrs={"reduction": "none"}, id="extreme", rtol=1e-5, atol=1e-3),
    # nll_loss
    OpCase("nll_loss", nll_ref, logits_indices(9, 4, "int32", ignore=1),
           attrs={"ignore_index": 1}, id="ignore_index_1"),
    OpCase("nll_loss", nll_ref, logits_indices(6, 4, weight=True), dtypes=("float16",), id="f16",
           **F16),
    OpCase("nll_loss", nll_ref, logits_indices(0, 4), attrs={"reduction": "sum"}, id="empty"),
    OpCase("nll_loss", nll_ref, logits_indices(40000, 3, weight=True), attrs={"reduction": "sum"},
           id="large", rtol=1e-4),
    # binary_cross_entropy
    OpCase(BCE, bce_ref, probs_labels((4, 5), extremes=True),
           attrs={"reduction": "none"}, id="clamp"),
    OpCase(BCE, bce_ref, probs_labels(()), attrs={"reduction": "none"}, id="0d"),
    OpCase(BCE, bce_ref, probs_labels((0, 3)), attrs={"reduction": "sum"}, id="empty"),
    OpCase(BCE, bce_ref, probs_labels((3, 4)), dtypes=("float16",), id="f16", **F16),
    OpCase(BCE, bce_ref, probs_labels((200, 201), weight_shape=(201,)), id="large"),
    # binary_cross_entropy_with_logits
    OpCase(BCEL, bce_logits_ref, logits_labels((5, 6), scale=1e4),
           attrs={"reduction": "none"}, id="extreme"),
    OpCase(BCEL, bce_logits_ref,
           logits_labels((5, 6), scale=1e4, weight_shape=(6,), pos_weight_shape=(6,)),
           attrs={"reduction": "none"}, id="extreme_pos_weight"),
    OpCase(BCEL, bce_logits_ref, logits_labels(()), id="0d"),
    OpCase(BCEL, bce_logits_ref, logits_labels((0, 4)),
           attrs={"reduction": "none"}, id="empty"),
    OpCase(BCEL, bce_logits_ref, logits_labels((3, 4)),
           dtypes=("float16",), id="f16", **F16),
    OpCase(BCEL, bce_logits_ref,
           logits_labels((200, 201), weight_shape=(200, 1), pos_weight_shape=(201,)), id="large"),
    # mse_loss
    OpCase("mse_loss", mse_ref, [(), ()], id="0d"),
    OpCase("mse_loss", mse_ref, [(0, 3), (1, 3)], attrs={"reduction": "none"}, id="empty"),
    OpCase("mse_loss", mse_ref, [(3, 4), (4,)], dtypes=("float16",), id="f16", **F16),
    OpCase("mse_loss", mse_ref, [(257, 130), (257, 130)], id="large"),
    OpCase("mse_loss", mse_ref, [(257, 1, 130), (1, 129, 1)], attrs={"reduction": "none"},
           id="large_bcast"),
]
