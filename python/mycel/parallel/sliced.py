"""Weights stored as slices (set_auto_parallel_context(slice_parameters=True), the default)
under SEMI_AUTO_PARALLEL and AUTO_PARALLEL in GRAPH_MODE: before the training step first
compiles, the sharding pass runs on the network's forward without building it
(TrainOneStepCell.plan_slices), and every weight it splits is replaced on each rank by its
slice, and so is the optimizer's state for it. The step compiles against the slices: the pass reads them as split values, the optimizer updates slices, and the
gradient of a slice is summed only over the ranks that hold the same slice (its mirror group).

Gradient scaling: every rank differentiates the sum of the N ranks' (equal) losses, so the loss's
gradient for a slice is the sum over its mirror group of the ranks' gradients divided by N
(device_num), and for a whole weight the sum over all ranks divided by N (the mean)."""
import numpy as np

from mycel import _mycel, ops
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell, CellList

__all__ = ["slice_parameters", "parameter_layouts", "whole_values", "MirrorGradReducer"]


def _offsets(layout, n):
    return [tuple(_mycel.autopar.slice_offset(layout, r)) for r in range(n)]


def mirror_group(layout, rank):
    """The world ranks that hold the same slice as `rank` under `layout` (rank order)."""
    n = int(np.prod(layout[0]))
    offs = _offsets(layout, n)
    return [r for r in range(n) if offs[r] == offs[rank]]


def _slice(value, layout, rank):
    off, shape = _mycel.autopar.slice_offset(layout, rank), _mycel.autopar.slice_shape(layout)
    a = value.asnumpy()
    return Tensor(np.ascontiguousarray(a[tuple(slice(o, o + s) for o, s in zip(off, shape))]), dtype=value.dtype)


def _states_of(optimizer, p):
    """The optimizer's state Parameters for weight p (named prefix.<p.name>, same shape)."""
    return [q for q in optimizer.__dict__.get("_params", {}).values()
            if q is not None and q is not p and q.name.endswith("." + p.name) and tuple(q.shape) == tuple(p.shape)]


def slice_parameters(weights, optimizer, rank):
    """Replaces every weight the sharding pass split (since the last call) by rank's slice, with
    its optimizer state; each gets a `layout` attribute (device_matrix, tensor_map, shape) for
    checkpoints. Returns {weight name: layout} of the weights sliced."""
    planned = {_mycel.autopar.storage_id(t): layout[:3] for t, layout in _mycel.autopar.take_planned()}
    done = {}
    for p in weights:
        layout = planned.get(_mycel.autopar.storage_id(p))
        if layout is None or getattr(p, "layout", None) is not None:
            continue
        full = (list(layout[0]), list(layout[1]), list(layout[2]), [])
        for q in [p] + _states_of(optimizer, p):
            q._rebind(_slice(q, full, rank))
            q.layout = tuple(tuple(x) for x in layout)  # the network reads p through sliced_weight
        done[p.name] = p.layout
    return done


def parameter_layouts(network):
    """{name: layout} of the network's Parameters stored as slices (for
    load_distributed_checkpoint / merge_sliced_parameter)."""
    return {p.name: p.layout for p in network.get_parameters() if getattr(p, "layout", None) is not None}


def whole_values(params):
    """{name: numpy array} of each Parameter's whole value: one stored as a slice (a `layout`)
    is AllGathered from every rank and its slices put back at their offsets; the others are
    copied. Collective when any Parameter is sliced: every rank calls it with the same list."""
    out = {}
    for p in params:
        layout = getattr(p, "layout", None)
        if layout is None:
            out[p.name] = p.asnumpy().copy()
            continue
        full = (list(layout[0]), list(layout[1]), list(layout[2]), [])
        n = int(np.prod(layout[0]))
        part = p.asnumpy()
        # AllGather concatenates along dim 0: rank r's flattened slice is row r.
        rows = ops.AllGather()(Tensor(np.ascontiguousarray(part).reshape(1, -1), dtype=p.dtype)).asnumpy()
        whole = np.empty(tuple(layout[2]), part.dtype)
        for r, off in enumerate(_offsets(full, n)):
            whole[tuple(slice(o, o + s) for o, s in zip(off, part.shape))] = rows[r].reshape(part.shape)
        out[p.name] = whole
    return out


class MirrorGradReducer(Cell):
    """Reduces each gradient over the ranks holding the same copy of its weight (the world for a
    whole weight, the mirror group for a slice) with AllReduce(sum), then multiplies by `scale`
    (default 1 / degree). One AllReduce per gradient; the groups are created here, in one order
    on every rank."""

    def __init__(self, weights, degree, rank, scale=None):
        super().__init__(auto_prefix=False)
        n = degree
        groups = []
        for p in weights:
            layout = getattr(p, "layout", None)
            if layout is None:
                groups.append(list(range(n)))
                continue
            groups.append(mirror_group((list(layout[0]), list(layout[1]), list(layout[2]), []), rank))
        # Weight by weight, each rank is in one group per weight: the members of every group meet
        # it at the same weight, so creating them in this order cannot deadlock.
        scale = 1.0 / degree if scale is None else scale
        self._reduces = CellList([_Reduce(_mycel.autopar.group_for(g), scale) for g in groups])
        self.groups = tuple(tuple(g) for g in groups)

    def construct(self, grads):
        out = ()
        for g, reduce in zip(grads, self._reduces):
            out = out + (reduce(g),)
        return out


class _Reduce(Cell):
    """AllReduce(sum) over one group, scaled."""

    def __init__(self, group, scale):
        super().__init__(auto_prefix=False)
        self._allreduce = ops.AllReduce(op="sum", group=group)
        self._scale = scale

    def construct(self, g):
        return self._allreduce(g) * self._scale
