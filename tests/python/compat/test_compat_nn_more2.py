"""MindSpore's FocalLoss, SampledSoftmaxLoss, SSIM, MSSSIM, LARS, GradAccumulationCell,
MicroBatchInterleaved, PipelineGradReducer, MultiFieldEmbeddingLookup and ParameterUpdate
against numpy written here (and MindSpore's documented example values), in both modes."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops

RNG = np.random.default_rng(214)


def T(a):
    return ms.Tensor(np.asarray(a))


def close(got, want, tol=1e-5):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def in_graph(cell, *args):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return cell(*args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def log_softmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


# ---- FocalLoss -----------------------------------------------------------------------------------
def test_focal_loss_documented_example_and_numpy():
    logits = T(np.float32([[0.8, 1.4], [0.5, 0.9], [1.2, 0.9]]))
    labels = T(np.int32([[1], [1], [0]]))
    out = nn.FocalLoss(weight=T(np.float32([1, 2])), gamma=2.0, reduction="mean")(logits, labels)
    close(out, 0.12516622, 1e-5)  # MindSpore's documented value (float32)
    x = RNG.normal(size=(2, 4, 3, 5))
    y = RNG.integers(0, 4, size=(2, 1, 3, 5))
    w = np.abs(RNG.normal(size=4))
    lp = log_softmax(x, 1)
    lpt = np.take_along_axis(lp, y, 1)[:, 0]
    want = (-(1 - np.exp(lpt)) ** 1.5 * lpt * w[y[:, 0]]).reshape(2, -1).mean(1)  # p before the weight
    close(nn.FocalLoss(T(w), 1.5, "none")(T(x), T(y)), want)
    soft = np.abs(RNG.normal(size=(2, 4, 3)))
    lp3 = log_softmax(x[..., 0], 1)
    want3 = (-(1 - np.exp(lp3)) ** 2 * soft * lp3).mean(-1)
    close(nn.FocalLoss(reduction="none")(T(x[..., 0]), T(soft)), want3)
    close(in_graph(nn.FocalLoss(T(w), 1.5), T(x), T(y)), want.mean())
    with pytest.raises(TypeError, match="FocalLoss: gamma must be a float"):
        nn.FocalLoss(gamma=2)
    with pytest.raises(ValueError, match="FocalLoss: labels must have 1 channel"):
        nn.FocalLoss()(T(x), T(y[:, :, :, :1].repeat(2, 1)))


# ---- SampledSoftmaxLoss --------------------------------------------------------------------------
def sampled_ref(w, b, labels, x, sampled, tcount, scount, remove):
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels] - np.log(tcount)
    s_logits = x @ w[sampled].T + b[sampled] - np.log(scount)
    if remove:
        for r in range(len(x)):
            for k, s in enumerate(sampled):
                if s in labels[r]:
                    s_logits[r, k] = -3.4e38
    logits = np.concatenate([true_logits, s_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1 / labels.shape[1]), np.zeros(s_logits.shape)], 1)
    return -(targets * log_softmax(logits, 1)).sum(1)


def test_sampled_softmax_loss_against_numpy():
    w, b = RNG.normal(size=(10, 4)), RNG.normal(size=10)
    x = RNG.normal(size=(3, 4))
    labels = np.array([[1, 3], [0, 7], [3, 5]])
    sampled = np.array([3, 2, 8, 9])
    tcount, scount = np.abs(RNG.normal(size=(3, 2))) + 0.1, np.abs(RNG.normal(size=4)) + 0.1
    for remove in (True, False):
        loss = nn.SampledSoftmaxLoss(4, 10, num_true=2, sampled_values=(T(sampled), T(tcount), T(scount)),
                                     remove_accidental_hits=remove)
        close(loss(T(w), T(b), T(labels), T(x)), sampled_ref(w, b, labels, x, sampled, tcount, scount, remove))
    drawn = nn.SampledSoftmaxLoss(5, 10, reduction="mean", seed=3)(T(w), T(b), T(labels[:, :1]), T(x))
    assert np.isfinite(drawn.asnumpy()) and float(drawn.asnumpy()) > 0
    fixed = nn.SampledSoftmaxLoss(4, 10, num_true=2, sampled_values=(T(sampled), T(tcount), T(scount)))
    close(in_graph(fixed, T(w), T(b), T(labels), T(x)),
          sampled_ref(w, b, labels, x, sampled, tcount, scount, True), 1e-5)
    with pytest.raises(ValueError, match="num_sampled .* must not exceed num_classes"):
        nn.SampledSoftmaxLoss(11, 10)


# ---- SSIM / MSSSIM -------------------------------------------------------------------------------
def ssim_ref(a, b, max_val=1.0, size=11, sigma=1.5, k1=0.01, k2=0.03, want_cs=False):
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    g = np.exp(-(np.arange(size) - (size - 1) / 2) ** 2 / (2 * sigma ** 2))
    win = np.outer(g, g) / np.outer(g, g).sum()
    n, c, h, w = a.shape
    oh, ow = h - size + 1, w - size + 1
    ss, cs = np.zeros(n), np.zeros(n)
    for i in range(n):
        smap, cmap = [], []
        for ch in range(c):
            for r in range(oh):
                for q in range(ow):
                    pa, pb = a[i, ch, r:r + size, q:q + size], b[i, ch, r:r + size, q:q + size]
                    ma, mb = (win * pa).sum(), (win * pb).sum()
                    va, vb = (win * pa * pa).sum() - ma * ma, (win * pb * pb).sum() - mb * mb
                    cov = (win * pa * pb).sum() - ma * mb
                    cterm = (2 * cov + c2) / (va + vb + c2)
                    smap.append((2 * ma * mb + c1) / (ma * ma + mb * mb + c1) * cterm)
                    cmap.append(cterm)
        ss[i], cs[i] = np.mean(smap), np.mean(cmap)
    return (ss, cs) if want_cs else ss


def test_ssim_and_msssim_against_numpy():
    a = RNG.uniform(size=(2, 3, 14, 13))
    b = np.clip(a + RNG.normal(scale=0.1, size=a.shape), 0, 1)
    close(nn.SSIM()(T(a), T(b)), ssim_ref(a, b), 1e-7)
    close(nn.SSIM(max_val=2.0, filter_size=5, filter_sigma=1.0)(T(a), T(b)), ssim_ref(a, b, 2.0, 5, 1.0), 1e-7)
    close(nn.SSIM()(T(a), T(a)), np.ones(2), 1e-8)
    close(in_graph(nn.SSIM(filter_size=7), T(a.astype(np.float32)), T(b.astype(np.float32))),
          ssim_ref(a, b, size=7), 1e-4)
    powers = (0.3, 0.5, 0.2)
    a2, b2 = RNG.uniform(size=(2, 1, 24, 20)), RNG.uniform(size=(2, 1, 24, 20))
    b2 = 0.7 * a2 + 0.3 * b2
    want = np.ones(2)
    x, y = a2, b2
    for i, p in enumerate(powers):
        s, cs = ssim_ref(x, y, size=5, want_cs=True)
        want *= np.maximum(s if i == len(powers) - 1 else cs, 0) ** p
        h2, w2 = x.shape[2] // 2, x.shape[3] // 2  # 2x2 'valid' average pooling
        x = x[:, :, :2 * h2, :2 * w2].reshape(2, 1, h2, 2, w2, 2).mean((3, 5))
        y = y[:, :, :2 * h2, :2 * w2].reshape(2, 1, h2, 2, w2, 2).mean((3, 5))
    close(nn.MSSSIM(power_factors=powers, filter_size=5)(T(a2), T(b2)), want, 1e-7)
    with pytest.raises(ValueError, match="SSIM: images of 4x4 are smaller than filter_size 11"):
        nn.SSIM()(T(a[:, :, :4, :4]), T(b[:, :, :4, :4]))


# ---- LARS ----------------------------------------------------------------------------------------
class Linear(nn.Cell):
    def __init__(self):
        super().__init__()
        self.weight = ms.Parameter(T(RNG.normal(size=(3, 2)).astype(np.float32)), name="weight")
        self.bias = ms.Parameter(T(np.zeros(2, np.float32)), name="bias")

    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias


@pytest.mark.parametrize("use_clip", [False, True])
def test_lars_against_numpy(use_clip):
    net = Linear()
    w0, b0 = net.weight.asnumpy().astype(np.float64), net.bias.asnumpy().astype(np.float64)
    opt = nn.LARS(nn.Momentum(net.trainable_params(), 0.1, 0.9, weight_decay=0.01), epsilon=1e-5,
                  coefficient=0.02, use_clip=use_clip)
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    y = RNG.normal(size=(4, 2)).astype(np.float32)
    w, b, vw, vb = w0, b0, np.zeros_like(w0), np.zeros_like(b0)
    for _ in range(2):
        train(T(x), T(y))
        err = x @ w + b - y
        gw, gb = 2 * x.T @ err / err.size, 2 * err.sum(0) / err.size
        ratio = 0.02 * np.linalg.norm(w) / (np.linalg.norm(gw) + 0.01 * np.linalg.norm(w) + 1e-5)
        if use_clip:
            ratio = min(ratio / 0.1, 1.0)
        gw = ratio * (gw + 0.01 * w)
        gb = gb + 0.01 * b           # bias: outside lars_filter, plain decay
        vw, vb = 0.9 * vw + gw, 0.9 * vb + gb
        w, b = w - 0.1 * vw, b - 0.1 * vb
    close(net.weight, w, 1e-5)
    close(net.bias, b, 1e-5)
    with pytest.raises(TypeError, match="LARS: optimizer must be an nn.Optimizer"):
        nn.LARS(net)


# ---- micro batches, reducer, ParameterUpdate -----------------------------------------------------
@pytest.mark.parametrize("wrapper", ["GradAccumulationCell", "MicroBatchInterleaved"])
def test_micro_batch_wrappers(wrapper):
    net = nn.WithLossCell(Linear(), nn.MSELoss())
    wrapped = getattr(nn, wrapper)(net, 2)
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    y = RNG.normal(size=(4, 2)).astype(np.float32)
    want = float(net(T(x[:2]), T(y[:2])).asnumpy()) + float(net(T(x[2:]), T(y[2:])).asnumpy())
    close(wrapped(T(x), T(y)), want)
    close(in_graph(wrapped, T(x), T(y)), want)
    params = net.trainable_params()
    g = ms.grad(wrapped, grad_position=None, weights=params)(T(x), T(y))
    g1 = ms.grad(net, grad_position=None, weights=params)(T(x[:2]), T(y[:2]))
    g2 = ms.grad(net, grad_position=None, weights=params)(T(x[2:]), T(y[2:]))
    for a, b1, b2 in zip(g, g1, g2):
        close(a, b1.asnumpy() + b2.asnumpy())
    with pytest.raises(ValueError, match="must divide into 3 micro-batches"):
        getattr(nn, wrapper)(net, 3)(T(x), T(y))


def test_pipeline_grad_reducer_and_parameter_update():
    net = Linear()
    reducer = nn.PipelineGradReducer(net.trainable_params(), scale_sense=0.5)
    grads = (T(np.ones((3, 2), np.float32)), T(np.full(2, 4.0, np.float32)))
    ops.assign(reducer.accu_grads[0], T(np.full((3, 2), 2.0, np.float32)))
    out = reducer(grads)
    close(out[0], np.full((3, 2), 1.5))
    close(out[1], np.full(2, 2.0))
    close(reducer.accu_grads[0], np.zeros((3, 2)))
    close(in_graph(reducer, grads)[1], np.full(2, 2.0))
    p = ms.Parameter(T(np.float32([1.0, 2.0])), name="lr_like")
    update = nn.ParameterUpdate(p)
    update(T(np.float32([3.0, 4.0])))
    close(p, [3.0, 4.0])
    in_graph(update, T(np.float32([5.0, 6.0])))
    close(p, [5.0, 6.0])


# ---- MultiFieldEmbeddingLookup -------------------------------------------------------------------
@pytest.mark.parametrize("operator", ["SUM", "MEAN", "MAX"])
def test_multi_field_embedding_lookup(operator):
    layer = nn.MultiFieldEmbeddingLookup(10, 3, 4, operator=operator)
    table = layer.embedding_table.asnumpy().astype(np.float64)
    idx = RNG.integers(0, 10, size=(2, 5))
    vals = RNG.normal(size=(2, 5)).astype(np.float32)
    fields = np.array([[0, 1, 1, 3, 0], [2, 2, 2, 0, 1]])
    want = np.zeros((2, 4, 3))
    for bb in range(2):
        for f in range(4):
            rows = [table[idx[bb, s]] * vals[bb, s] for s in range(5) if fields[bb, s] == f]
            if rows:
                want[bb, f] = {"SUM": np.sum, "MEAN": np.mean, "MAX": np.max}[operator](rows, axis=0)
    got = layer(T(idx.astype(np.int32)), T(vals), T(fields.astype(np.int32)))
    close(got, want)
    close(in_graph(layer, T(idx.astype(np.int32)), T(vals), T(fields.astype(np.int32))), want)


def test_lars_update_primitive():
    w, g = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    for clip in (False, True):
        got = ops.LARSUpdate(1e-5, 0.01, clip)(T(w), T(g), T(np.sum(w * w)), T(np.sum(g * g)), T(0.1), T(0.5))
        ratio = 0.01 * np.linalg.norm(w) / (np.linalg.norm(g) + 0.1 * np.linalg.norm(w) + 1e-5)
        if clip:
            ratio = min(ratio / 0.5, 1.0)
        close(got, ratio * (g + 0.1 * w))
    zero = ops.LARSUpdate()(T(w), T(np.zeros_like(g)), T(np.sum(w * w)), T(0.0), T(0.0), T(0.1))
    close(zero, np.zeros_like(g))
