"""In-place updates as MindSpore's programs see them, in both modes: a local name passed to an op
that writes it (`op(x, i, u); return x`) reads the new value afterwards; vmap over such a
function updates each slice of a mapped Parameter (MindSpore's vmap of ScatterNd*/Assign); and a
Parameter made from a Tensor owns a copy, so updates never show through that Tensor. The
reference is numpy, item by item."""
import numpy as np
import pytest

import mycel
from mycel import Parameter, Tensor, nn, ops
from mycel.ops import operations as P


class ScatterThenRead(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, x, indices, updates):
        self.op(x, indices, updates)
        return x


class Holder(nn.Cell):
    def __init__(self, inner, x):
        super().__init__()
        self.x = Parameter(Tensor(x), name="x")
        self.inner = inner

    def construct(self, indices, updates):
        return self.inner(self.x, indices, updates)


class VmapHolder(Holder):
    def __init__(self, inner, x, axes):
        super().__init__(inner, x)
        self.axes = axes

    def construct(self, indices, updates):
        return ops.vmap(self.inner, self.axes, 0)(self.x, indices, updates)


def _scatter_nd_add(x, indices, updates):
    out = x.copy()
    for k, idx in enumerate(indices):
        out[tuple(idx)] += updates[k]
    return out


@pytest.fixture(params=[mycel.GRAPH_MODE, mycel.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("op", [P.ScatterNdAdd(), P.ScatterNdUpdate()], ids=["ScatterNdAdd", "ScatterNdUpdate"])
def test_a_local_reads_the_value_an_op_wrote(mode, op):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx, upd = np.array([[1, 2], [0, 0]], np.int32), np.array([5.0, 7.0], np.float32)
    net = Holder(ScatterThenRead(op), x)
    out = net(Tensor(idx), Tensor(upd)).asnumpy()
    if isinstance(op, P.ScatterNdAdd):
        want = _scatter_nd_add(x, idx, upd)
    else:
        want = x.copy()
        want[1, 2], want[0, 0] = 5.0, 7.0
    np.testing.assert_allclose(out, want)
    np.testing.assert_allclose(net.x.asnumpy(), want)


@pytest.mark.parametrize("axes", [(0, 0, None), (0, None, 0), (0, None, None)], ids=["idx", "upd", "param"])
def test_vmap_updates_each_slice_of_a_mapped_parameter(axes):
    """Graph mode (the construct holds the Parameter; PyNative's vmap compiles the mapped function
    with its arguments as inputs, which an in-place op cannot write: docs/vmap.md)."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    idx = np.array([[[0, 1]], [[1, 2]]], np.int32) if axes[1] == 0 else np.array([[1, 0]], np.int32)
    upd = np.array([[10.0], [20.0]], np.float32) if axes[2] == 0 else np.array([3.0], np.float32)
    try:
        net = VmapHolder(ScatterThenRead(P.ScatterNdAdd()), x, axes)
        out = net(Tensor(idx), Tensor(upd)).asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    want = np.stack([_scatter_nd_add(x[b], idx[b] if axes[1] == 0 else idx, upd[b] if axes[2] == 0 else upd)
                     for b in range(2)])
    np.testing.assert_allclose(out, want)
    np.testing.assert_allclose(net.x.asnumpy(), want)


def test_vmap_of_an_update_into_an_unmapped_parameter_is_refused():
    """Per-item values cannot go into one unmapped Parameter: a clear error, not a silent pick."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = VmapHolder(ScatterThenRead(P.ScatterNdAdd()), np.zeros((2, 3), np.float32), (None, 0, 0))
        with pytest.raises(NotImplementedError, match="cannot batch assign"):
            net(Tensor(np.array([[[0, 1]], [[1, 2]]], np.int32)), Tensor(np.array([[1.0], [2.0]], np.float32)))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_a_parameter_owns_a_copy_of_the_tensor_it_was_made_from(mode):
    t = Tensor(np.ones(3, np.float32))
    p = Parameter(t, name="p")
    ops.assign(p, Tensor(np.zeros(3, np.float32)))
    np.testing.assert_array_equal(t.asnumpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(p.asnumpy(), np.zeros(3, np.float32))
