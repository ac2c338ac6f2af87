"""ops.vmap: each batching rule against a per-item loop of the same function run eagerly (the op's
own kernel, one item at a time), in both modes; in_axes / out_axes forms; nesting; composition
with grad both ways; Cells (Parameters shared); the loop fallback; errors naming the argument,
the axis and the shape."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, context, nn, ops

MODES = [context.GRAPH_MODE, context.PYNATIVE_MODE]


@pytest.fixture(params=MODES, ids=["graph", "pynative"])
def mode(request):
    old = context.get_context("mode")
    context.set_context(mode=request.param)
    yield request.param
    context.set_context(mode=old)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _np(x):
    if isinstance(x, (tuple, list)):
        return tuple(_np(i) for i in x)
    return x.asnumpy()


def _take(x, axis, i):
    if axis is None:
        return x
    if isinstance(x, tuple):
        return tuple(_take(t, a, i) for t, a in zip(x, axis if isinstance(axis, tuple) else (axis,) * len(x)))
    return np.take(x, i, axis=axis)


def _to_tensor(x):
    return tuple(_to_tensor(t) for t in x) if isinstance(x, tuple) else Tensor(x)


def loop_reference(fn, args, in_axes, out_axes=0):
    """fn run eagerly on each item, stacked along out_axes: the reference for vmap."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    sizes = [np.shape(a if not isinstance(a, tuple) else a[0])[ax if not isinstance(ax, tuple) else ax[0]]
             for a, ax in zip(args, axes) if ax is not None]
    old = context.get_context("mode")
    context.set_context(mode=context.PYNATIVE_MODE)
    try:
        outs = [_np(fn(*[_to_tensor(_take(a, ax, i)) for a, ax in zip(args, axes)])) for i in range(sizes[0])]
    finally:
        context.set_context(mode=old)
    if isinstance(outs[0], tuple):
        oa = out_axes if isinstance(out_axes, tuple) else (out_axes,) * len(outs[0])
        return tuple(np.stack([o[k] for o in outs], axis=oa[k]) for k in range(len(outs[0])))
    return np.stack(outs, axis=out_axes)


def check(fn, args, in_axes=0, out_axes=0, tol=1e-5):
    got = _np(ops.vmap(fn, in_axes, out_axes)(*[_to_tensor(a) for a in args]))
    want = loop_reference(fn, args, in_axes, out_axes)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# (name, fn, args, in_axes): each exercises one rule (or the loop fallback).
CASES = [
    ("add_broadcast", lambda a, b: a + b, (rnd(4, 3), rnd(2, 3)), (0, None)),
    ("mul_both_axes", lambda a, b: a * b, (rnd(3, 4), rnd(4, 3)), (1, 0)),
    ("select", lambda c, a, b: ops.select(c > 0, a, b), (rnd(4, 3), rnd(4, 3), rnd(3)), (0, 0, None)),
    ("unary_keeps_axis", lambda a: ops.exp(a) + ops.tanh(a), (rnd(3, 5, 2),), 1),
    ("cast", lambda a: ops.cast(a, mycel.float64), (rnd(3, 4),), 0),
    ("sum_all", lambda a: a.sum(), (rnd(4, 3, 2),), 0),
    ("mean_axis_keep", lambda a: ops.mean(a, axis=-1, keep_dims=True), (rnd(4, 3, 2),), 2),
    ("max_axis", lambda a: ops.max(a, axis=0), (rnd(3, 4, 2),), 1),
    ("softmax", lambda a: ops.softmax(a, axis=0), (rnd(4, 3, 5),), 0),
    ("log_softmax", lambda a: ops.log_softmax(a), (rnd(3, 4),), 1),
    ("argmax", lambda a: ops.argmax(a, axis=-1), (rnd(4, 3, 5),), 0),
    ("cumsum", lambda a: ops.cumsum(a, 0), (rnd(4, 3),), 1),
    ("reshape", lambda a: ops.reshape(a, (-1, 2)), (rnd(3, 2, 4),), 0),
    ("transpose", lambda a: ops.transpose(a, (2, 0, 1)), (rnd(3, 2, 4, 5),), 0),
    ("expand_squeeze", lambda a: ops.squeeze(ops.expand_dims(a, -1) + 1.0), (rnd(3, 1, 4),), 0),
    ("flatten", lambda a: ops.flatten(a), (rnd(2, 3, 4, 5),), 0),
    ("concat_unbatched_item", lambda a, b: ops.concat((a, b), axis=-1), (rnd(4, 3, 2), rnd(3, 5)), (0, None)),
    ("stack", lambda a, b: ops.stack((a, b), axis=1), (rnd(4, 3), rnd(3, 4)), (0, 1)),
    ("gather", lambda a: ops.gather(a, Tensor(np.array([2, 0], np.int32)), 1), (rnd(4, 3, 5),), 0),
    ("slice_index", lambda a: a[1:3, ::2], (rnd(4, 5, 6),), 0),
    ("tile", lambda a: ops.tile(a, (2, 1, 3)), (rnd(3, 4, 2),), 0),
    ("broadcast_to", lambda a: ops.broadcast_to(a, (2, 3, 4)), (rnd(5, 4),), 0),
    ("matmul_batched_both", lambda a, b: ops.matmul(a, b), (rnd(4, 2, 3), rnd(3, 5, 4)), (0, 2)),
    ("matmul_left", lambda a, b: ops.matmul(a, b, transpose_b=True), (rnd(4, 2, 3), rnd(5, 3)), (0, None)),
    ("dense_batched_w", lambda x, w, b: ops.dense(x, w, b), (rnd(2, 3), rnd(4, 5, 3), rnd(4, 5)), (None, 0, 0)),
    ("conv2d_x", lambda x, w: ops.conv2d(x, w, pad_mode="same"), (rnd(3, 2, 2, 6, 6), rnd(4, 2, 3, 3)), (0, None)),
    ("conv2d_w", lambda x, w: ops.conv2d(x, w, stride=2), (rnd(2, 2, 7, 7), rnd(3, 4, 2, 3, 3)), (None, 0)),
    ("conv_filter_grad_stride_pad", lambda dy, x: ops.conv2d_backprop_filter(
        dy, x, filter_size=(4, 3, 3, 3), stride=2, pad_mode="pad", pad=1), (rnd(3, 2, 4, 4, 4), rnd(3, 2, 3, 7, 7)), 0),
    ("conv_filter_grad_dilation", lambda dy, x: ops.conv2d_backprop_filter(
        dy, x, filter_size=(4, 3, 3, 3), dilation=2), (rnd(2, 4, 5, 5, 2), rnd(2, 2, 3, 9, 9)), (4, 0)),
    ("conv_filter_grad_same", lambda dy, x: ops.conv2d_backprop_filter(
        dy, x, filter_size=(4, 3, 3, 3), pad_mode="same"), (rnd(2, 2, 4, 6, 6), rnd(2, 3, 6, 6)), (0, None)),
    ("conv_filter_grad_remainder", lambda dy, x: ops.conv2d_backprop_filter(
        dy, x, filter_size=(2, 3, 3, 3), stride=2), (rnd(3, 1, 2, 3, 3), rnd(3, 1, 3, 8, 8)), 0),
    ("conv_filter_grad_groups", lambda dy, x: ops.conv2d_backprop_filter(
        dy, x, filter_size=(4, 2, 3, 3), groups=2), (rnd(2, 2, 4, 4, 4), rnd(2, 2, 4, 6, 6)), 0),
    ("conv_input_grad_w", lambda dy, w: ops.conv2d_backprop_input(
        dy, w, input_size=(2, 3, 6, 6)), (rnd(2, 4, 4, 4), rnd(3, 4, 3, 3, 3)), (None, 0)),
    ("max_pool", lambda x: ops.max_pool2d(x, kernel_size=2, strides=2), (rnd(3, 2, 2, 4, 4),), 0),
    ("avg_pool", lambda x: ops.avg_pool2d(x, kernel_size=2, strides=1), (rnd(2, 3, 3, 4, 4),), 1),
    ("sparse_ce_mean", lambda x, y: ops.sparse_softmax_cross_entropy_with_logits(x, y),
     (rnd(3, 4, 5), np.array([[1, 0, 4, 2], [3, 3, 0, 1], [2, 1, 0, 4]], np.int32)), 0),
    ("mse_sum", lambda x, y: ops.mse_loss(x, y, reduction="sum"), (rnd(3, 4, 2), rnd(4, 2)), (0, None)),
    ("layer_norm", lambda x, g, b: ops.layer_norm(x, g, b, begin_norm_axis=1, begin_params_axis=1)[0],
     (rnd(3, 2, 4), np.ones(4, np.float32), np.zeros(4, np.float32)), (0, None, None)),
    ("one_hot", lambda i: ops.one_hot(i, 4), (np.array([[0, 3], [2, 1], [1, 1]], np.int32),), 0),
    ("top_k", lambda a: ops.top_k(a, 2), (rnd(3, 2, 5),), 0),
    ("pad", lambda a: ops.pad(a, (1, 0, 0, 1), mode="reflect"), (rnd(3, 2, 4),), 2),
    ("gather_batched_indices", lambda p, i: ops.gather(p, i, 1),
     (rnd(3, 5), np.array([[0, 4], [2, 2], [1, 3], [4, 0]], np.int32)), (None, 0)),
    ("nll_loss_mean_weighted", lambda x, t, w: ops.nll_loss(x, t, w)[0],
     (rnd(3, 4, 5), np.array([[1, 0, 4, 2], [3, -100, 0, 1], [2, 1, 0, 4]], np.int32), np.abs(rnd(5)) + 0.5),
     (0, 0, None)),
    ("nll_loss_sum", lambda x, t: ops.nll_loss(x, t, reduction="sum"),
     (rnd(3, 4, 5), np.array([[1, 0, 4, 2], [3, 3, 0, 1], [2, 1, 0, 4]], np.int32)), 0),
    ("fallback_scatter", lambda a, u: ops.tensor_scatter_add(a, Tensor(np.array([[1], [0]], np.int32)), u),
     (rnd(3, 4, 2), rnd(3, 2, 2)), 0),
]


@pytest.mark.parametrize("name,fn,args,in_axes", CASES, ids=[c[0] for c in CASES])
def test_rule_matches_loop(mode, name, fn, args, in_axes):
    check(fn, args, in_axes)


def test_loop_fallback_is_noted_once(mode, capfd):
    # scatter_add has no batching rule: it runs once per item, with a note on stderr (once per process).
    idx = Tensor(np.array([1, 0], np.int32))
    check(lambda a, u: ops.scatter_add(a, idx, u) * 2.0, (rnd(2, 3, 2), rnd(2, 2, 2)), 0)
    check(lambda a, u: ops.scatter_add(a, idx, u) * 2.0, (rnd(2, 3, 2), rnd(2, 2, 2)), 0)
    assert capfd.readouterr().err.count("op 'scatter_add' has no batching rule") <= 1


def test_tuple_arguments_and_outputs(mode):
    def f(pair, s):
        a, b = pair
        return a * s, (b + s, ops.sum(a))
    a, b, s = rnd(3, 4), rnd(4, 3, seed=1), rnd(4, seed=2)
    out = ops.vmap(f, in_axes=((0, 1), None), out_axes=(1, (0, 0)))(
        (Tensor(a), Tensor(b)), Tensor(s))
    np.testing.assert_allclose(out[0].asnumpy(), (a * s).T, rtol=1e-6)
    np.testing.assert_allclose(out[1][0].asnumpy(), b.T + s, rtol=1e-6)
    np.testing.assert_allclose(out[1][1].asnumpy(), a.sum(axis=1), rtol=1e-5)


def test_out_axes_none_for_an_unmapped_output(mode):
    out = ops.vmap(lambda a, b: (a * 2.0, b + 1.0), in_axes=(0, None), out_axes=(0, None))(
        Tensor(rnd(3, 2)), Tensor(rnd(4)))
    np.testing.assert_allclose(out[0].asnumpy(), rnd(3, 2) * 2, rtol=1e-6)
    np.testing.assert_allclose(out[1].asnumpy(), rnd(4) + 1, rtol=1e-6)


def test_unmapped_output_is_broadcast(mode):
    out = ops.vmap(lambda a, b: b * 3.0, in_axes=(0, None), out_axes=1)(Tensor(rnd(5, 2)), Tensor(rnd(4)))
    np.testing.assert_allclose(out.asnumpy(), np.stack([rnd(4) * 3] * 5, axis=1), rtol=1e-6)


def test_nested_vmap_outer_product(mode):
    x, y = rnd(3), rnd(4, seed=1)
    inner = ops.vmap(lambda a, b: a * b + 1.0, in_axes=(None, 0))
    out = ops.vmap(inner, in_axes=(0, None))(Tensor(x), Tensor(y))
    np.testing.assert_allclose(out.asnumpy(), np.outer(x, y) + 1, rtol=1e-6)


def test_vmap_of_cell_shares_parameters(mode):
    mycel.set_seed(1)
    net = nn.Dense(3, 2)
    x = rnd(5, 4, 3)
    got = ops.vmap(net, in_axes=1, out_axes=1)(Tensor(x)).asnumpy()
    w, b = net.weight.asnumpy(), net.bias.asnumpy()
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-5, atol=1e-6)


def _f(x, w):
    return ops.tanh(ops.matmul(x, w)).sum() * 0.5


def _f_grad_x(x, w):  # closed form of d f / d x
    return 0.5 * (1 - np.tanh(x @ w) ** 2) @ w.T


def test_vmap_of_grad_is_per_item_gradient(mode):
    x, w = rnd(4, 2, 3), rnd(3, 5, seed=1)
    got = ops.vmap(ops.grad(_f), in_axes=(0, None))(Tensor(x), Tensor(w)).asnumpy()
    want = np.stack([_f_grad_x(x[i], w) for i in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # weights gradient per item, against central finite differences in float64
    gw = ops.vmap(ops.grad(_f, grad_position=1), in_axes=(0, None))(Tensor(x), Tensor(w)).asnumpy()
    eps, x64, w64 = 1e-6, x.astype(np.float64), w.astype(np.float64)
    for i in range(4):
        for (r, c) in [(0, 0), (2, 4), (1, 3)]:
            d = np.zeros_like(w64)
            d[r, c] = eps
            fd = (np.tanh(x64[i] @ (w64 + d)).sum() - np.tanh(x64[i] @ (w64 - d)).sum()) * 0.5 / (2 * eps)
            assert abs(gw[i, r, c] - fd) < 1e-4


def test_grad_of_vmap(mode):
    x, w = rnd(4, 2, 3), rnd(3, 5, seed=1)
    batched = ops.vmap(_f, in_axes=(0, None))  # (4,) output: grad seeds ones, so sums the items
    gx = ops.grad(batched)(Tensor(x), Tensor(w)).asnumpy()
    np.testing.assert_allclose(gx, np.stack([_f_grad_x(x[i], w) for i in range(4)]), rtol=1e-5, atol=1e-6)
    gw = ops.grad(batched, grad_position=1)(Tensor(x), Tensor(w)).asnumpy()
    want = sum(x[i].T @ (0.5 * (1 - np.tanh(x[i] @ w) ** 2)) for i in range(4))
    np.testing.assert_allclose(gw, want, rtol=1e-4, atol=1e-5)


def test_dropout_draws_per_item(mode):
    mycel.set_seed(3)
    out = ops.vmap(lambda a: ops.dropout(a, keep_prob=0.5)[0], in_axes=0)(Tensor(np.ones((2, 4096), np.float32)))
    kept = out.asnumpy() != 0
    assert 0.4 < kept.mean() < 0.6
    assert (kept[0] != kept[1]).any()  # independent masks, not one mask repeated


@pytest.mark.parametrize("in_axes,args,match", [
    ((0, 2), (rnd(3, 4), rnd(3, 4)), r"in_axes axis 2 for argument 1 is out of range for its shape \(3, 4\)"),
    ((0, 1), (rnd(3, 4), rnd(3, 4)), r"different sizes: argument 0 axis 0 of shape \(3, 4\) has 3, but argument 1 "
                                     r"axis 1 of shape \(3, 4\) has 4"),
    ((0,), (rnd(3, 4), rnd(3, 4)), r"in_axes \(0,\) has 1 entries, but the function is called with 2"),
    ((None, None), (rnd(3, 4), rnd(3, 4)), r"maps no input"),
    (((0, 0), 0), (rnd(3, 4), rnd(3, 4)), r"in_axes \(0, 0\) for argument 0 has 2 entries"),
])
def test_bad_in_axes(mode, in_axes, args, match):
    with pytest.raises(ValueError, match=match):
        ops.vmap(lambda a, b: a + b, in_axes=in_axes)(*[Tensor(a) for a in args])


def test_bad_axes_types_and_out_axes(mode):
    with pytest.raises(TypeError, match="in_axes must be an int, None, or a tuple"):
        ops.vmap(lambda a: a, in_axes=1.5)
    with pytest.raises(TypeError, match="out_axes must be"):
        ops.vmap(lambda a: a, out_axes="0")
    with pytest.raises(ValueError, match="out_axes is None for the output, but it depends on the mapped inputs"):
        ops.vmap(lambda a: a * 2.0, out_axes=None)(Tensor(rnd(3, 2)))
    with pytest.raises(ValueError, match="out_axes axis 3 for the output is out of range"):
        ops.vmap(lambda a: a * 2.0, out_axes=3)(Tensor(rnd(3, 2)))
    with pytest.raises(ValueError, match="maps argument 1 along axis 0, but it is"):
        ops.vmap(lambda a, n: a * n, in_axes=0)(Tensor(rnd(3, 2)), 2)
    # the process stays healthy
    check(lambda a: a * 2.0, (rnd(3, 2),), 0)


# Ops that run once per item under vmap (no batching rule yet, or none possible: collectives,
# summaries, generators without inputs). A new op lands here or gets a rule: the list is explicit.
LOOPED = {"arange", "barrier",
          "dynamic_fill", "eye", "fill", "histogram_summary",
          "image_summary", "normal", "ones", "qavg_pool2d", "qconv2d", "qdense", "randint",
          "receive", "scalar_summary", "send", "shard_hint", "sliced_weight",
          "tensor_summary", "te_call", "custom_call", "uniform", "zeros",
          # no rule yet: the 3-d windowed ops (a fold into N as the 2-d ones would do) and CTC
          "conv3d", "conv3d_backprop_input", "conv3d_backprop_filter", "max_pool3d",
          "max_pool3d_grad", "avg_pool3d", "avg_pool3d_grad", "ctc_loss", "ctc_loss_grad",
          # nor the fused attention (the batch would fold into B, the mask broadcast beside it)
          "flash_attention", "flash_attention_grad",
          # a size known only from the values: the loop refuses them, naming the op; the
          # masked_scatter pair has fixed shapes and loops
          "unique_with_counts", "masked_select", "nonzero", "masked_scatter", "masked_scatter_grad",
          "strided_slice_dynamic", "slice_dynamic", "strided_slice_dynamic_grad", "slice_dynamic_grad",
          "reshape_dynamic",
          # the sampled distributions: each item draws its own samples, as normal/uniform do
          "standard_laplace", "random_gamma", "random_poisson", "random_categorical", "multinomial",
          "truncated_normal", "log_normal", "exponential", "binomial", "random_beta",
          "parameterized_truncated_normal", "non_deterministic_ints", "candidate_sampler",
          # sparse: a batched pattern may change nnz per item (csr_spmm batches shared patterns)
          "csr_sddmm", "csr_gather", "csr_scatter", "csr2coo", "coo2csr", "csr_spgemm", "csr_spgemm_grad",
          "multinomial_with_replacement",
          # MindSpore's sparse_ops with value-sized outputs (ops/sparse_arrays.cc)
          "sparse_count_sparse_output", "sparse_segment_mean_with_num_segments", "sparse_segment_mean_grad",
          "sparse_tensor_to_csr_sparse_matrix", "sparse_matrix_transpose",
          "sparse_tensor_to_csr_sparse_matrix_grad", "sparse_matrix_transpose_grad"}


def test_every_op_has_a_batching_policy():
    kinds = {name: mycel._mycel.graph.batching_rule(name) for name in ops.op_names()}
    looped = {n for n, k in kinds.items() if k == "loop"}
    assert looped == LOOPED, sorted(looped ^ LOOPED)
    assert kinds["add"] == "elementwise" and kinds["conv2d"] == "own"


def _matmul_relu_sum(a, w):
    return ops.relu(ops.matmul(a, w)).sum(axis=0)


def test_batched_ir_text():
    """The transform's output for a small function: the batch moved to the front once, matmul's
    batch dimension used, the reduction axis shifted, the batch moved to out_axes at the end."""
    from mycel.common import vmap as vmap_module
    base, chain = vmap_module.transform_chain(ops.vmap(_matmul_relu_sum, in_axes=(1, None), out_axes=1), 2)
    g = mycel._mycel.graph.transformed(base, chain)
    text = g.ir(Tensor(np.zeros((4, 3, 5), np.float32)), Tensor(np.zeros((5, 2), np.float32)))
    body = [line.strip() for line in text.splitlines()[1:-1]]
    assert body == [
        "%1: f32[3, 4, 5] = transpose[perm=(1, 0, 2)](%a)",
        "%2: f32[3, 4, 2] = matmul(%1, %w)",
        "%3: f32[3, 4, 2] = relu(%2)",
        "%4: f32[3, 2] = sum[axis=(1,)](%3)",
        "%5: f32[2, 3] = transpose[perm=(1, 0)](%4)",
        "return %5",
    ], text


def test_negative_axes_and_a_tuple_argument(mode):
    a, b = rnd(2, 3, 4), rnd(4, 3, seed=1)
    out = ops.vmap(lambda t: t[0] * 2.0 + t[1].sum(), in_axes=((-1, 0),), out_axes=-1)((Tensor(a), Tensor(b)))
    want = np.stack([a[:, :, i] * 2 + b[i].sum() for i in range(4)], axis=-1)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5)
