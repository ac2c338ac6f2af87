"""Optimizer sharding (set_auto_parallel_context(enable_parallel_optimizer=True), MindSpore's
parallel optimizer, ZeRO stage 1): each of the N ranks updates only block r (along dim 0) of
every parameter whose dim 0 divides by N, and keeps only that block of its optimizer state
(moments, ...). The gradient of such a parameter is ReduceScattered (each rank receives the sum
of its block) instead of AllReduced; after the update, the ranks AllGather the updated blocks
into the whole parameter the network reads. Other parameters are updated whole, as before.

The update is elementwise per parameter (SGD, Momentum, Adam, AdamWeightDecay, ...) or, for Lamb,
takes a norm of the whole parameter: Lamb's sums of squares are then AllReduced over the ranks
(reduce_norms), so its trust ratio is the whole parameter's.

Two forms:

- GRAPH_MODE (shard_weights): the weight itself is stored as rank r's block, with a `layout`
  (device matrix [N], dim 0 split), as slice_parameters stores slices. The network reads it
  through a sliced_weight node, so the AllGather runs inside the compiled step, where the
  forward needs the weight, and its gradient is the ReduceScatter of the ranks' gradients (the
  semi-auto pass inserts AllGather and its bprop; without the pass, sliced_weight's own kernel
  and bprop do the same). Weights, gradients and optimizer state are all 1/N per rank, the
  optimizer updates the block Parameter in place, and the next step gathers the updated blocks.
  With slice_parameters=True it shards the weights the sharding pass left whole.
- PYNATIVE_MODE (shard_optimizer): the network keeps whole weights; the optimizer updates block
  Parameters, and after each step the ranks AllGather the blocks eagerly (gather_parameters)."""
import numpy as np

from mycel import ops
from mycel.common.parameter import Parameter, ParameterTuple
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell, CellList

__all__ = ["shard_weights", "shard_optimizer", "ShardedGradReducer"]


def _states_of(optimizer, p):
    """The optimizer's state Parameters for p (named prefix.<p.name>, p's shape)."""
    return [q for q in optimizer.__dict__.get("_params", {}).values()
            if q is not None and q is not p and q.name.endswith("." + p.name) and tuple(q.shape) == tuple(p.shape)]


def shard_weights(weights, optimizer, rank, n):
    """GRAPH_MODE: replaces each weight whose dim 0 divides by n, and that is not already stored
    as a slice, by rank's block along dim 0, with its optimizer state; each gets the `layout`
    ((n,), (0, -1, ...), whole shape) the network's reads gather it by. Returns the names."""
    done = []
    for p in weights:
        if getattr(p, "layout", None) is not None or len(p.shape) == 0 or p.shape[0] % n != 0:
            continue
        layout = ((n,), (0,) + (-1,) * (len(p.shape) - 1), tuple(p.shape))
        per = p.shape[0] // n
        rows = slice(rank * per, (rank + 1) * per)
        for q in [p] + _states_of(optimizer, p):  # the states first found by p's whole shape
            q._rebind(Tensor(np.ascontiguousarray(q.asnumpy()[rows]), dtype=q.dtype))
            q.layout = layout
        done.append(p.name)
    return done


def reduce_norms(optimizer, rank, whole_blocks=(), group=None):
    """Makes a norm-taking optimizer (one with `square_sums`, Lamb) sum the squares of each
    parameter over the ranks where the parameter is stored as a slice: those with a `layout`
    (mirror group size from it) and the block Parameters in `whole_blocks` (one copy each, over
    `group`, default all ranks)."""
    cells = optimizer.__dict__.get("_cells", {}).get("square_sums")
    if cells is None:
        return
    from mycel.nn.optim.lamb import SquareSum
    from mycel.parallel.sliced import mirror_group
    blocks = {id(b) for b in whole_blocks}
    for k, p in enumerate(optimizer.parameters):
        layout = getattr(p, "layout", None)
        if layout is not None:
            cells[k] = SquareSum(len(mirror_group((list(layout[0]), list(layout[1]), list(layout[2]), []), rank)))
        elif id(p) in blocks:
            cells[k] = SquareSum(1, group)


def shard_optimizer(optimizer, rank, n, only=None, group=None):
    """Makes `optimizer` update rank's block of each parameter whose dim 0 divides by n: its
    `parameters` become block Parameters (named <name>.shard) and its state for them is cut to
    the block. Returns the plan: per parameter (in optimizer order) the whole Parameter and its
    block Parameter, or None where it stays whole. `only` (Parameters) limits it to those; with
    `group` the n ranks are that group's and rank is the rank in it (a pipeline stage's
    data-parallel ranks)."""
    keep = None if only is None else {id(p) for p in only}
    plan, params = [], []
    for p in optimizer.parameters:
        if len(p.shape) == 0 or p.shape[0] % n != 0 or (keep is not None and id(p) not in keep):
            plan.append(None)
            params.append(p)
            continue
        per = p.shape[0] // n
        rows = slice(rank * per, (rank + 1) * per)
        block = Parameter(Tensor(np.ascontiguousarray(p.asnumpy()[rows]), dtype=p.dtype), name=p.name + ".shard",
                          requires_grad=p.requires_grad)
        for q in _states_of(optimizer, p):
            q._rebind(Tensor(np.ascontiguousarray(q.asnumpy()[rows]), dtype=q.dtype))
        plan.append((p, block))
        params.append(block)
    object.__setattr__(optimizer, "parameters", ParameterTuple(params))
    object.__setattr__(optimizer, "_parameters", optimizer.parameters)
    reduce_norms(optimizer, rank, [e[1] for e in plan if e is not None], group)
    return plan


def gather_parameters(plan, group=None):
    """After a step: every rank's updated blocks, concatenated, become the whole parameters."""
    gather = ops.AllGather() if group is None else ops.AllGather(group=group)
    for entry in plan:
        if entry is not None:
            whole, block = entry
            whole._assign(gather(block))


class ShardedGradReducer(Cell):
    """Per gradient: ReduceScatter(sum) for a sharded parameter (this rank's block of the sum),
    AllReduce(sum) for a whole one; both scaled by `scale` (1/N for the mean)."""

    def __init__(self, plan, scale):
        super().__init__(auto_prefix=False)
        self._reduces = CellList([_Reduce(ops.ReduceScatter(op="sum") if entry else ops.AllReduce(op="sum"), scale)
                                  for entry in plan])

    def construct(self, grads):
        out = ()
        for g, reduce in zip(grads, self._reduces):
            out = out + (reduce(g),)
        return out


class _Reduce(Cell):
    def __init__(self, collective, scale):
        super().__init__(auto_prefix=False)
        self._collective = collective
        self._scale = scale

    def construct(self, g):
        return self._collective(g) * self._scale
