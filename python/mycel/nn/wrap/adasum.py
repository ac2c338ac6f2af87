"""AdaSum (Maleki et al., "AdaSum: Scaling Distributed Training with Adaptive Summation",
arXiv:2006.02924): the ranks' updates combined pairwise by

    AdaSum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b

(a + b for orthogonal a and b, their mean for equal ones), in a binary tree over the ranks:
((r0, r1), (r2, r3)), ... as recursive doubling pairs them. Each parameter is combined on its
own. AdaSumByGradWrapCell combines the gradients before the optimizer; AdaSumByDeltaWeightWrapCell
combines the weight change each rank's optimizer made. One process (or no communicator): the
AdaSum of one update is itself, so both wrappers are the optimizer alone.

Each rank AllGathers the updates and evaluates the same tree, so every rank ends with the same
result (MindSpore exchanges halves by Send/Receive across nodes of 8 devices and needs at least
16 of them; the tree over all ranks here is that algorithm with one device per node)."""
from mycel import ops
from mycel.communication.management import MPI_WORLD_COMM_GROUP, _comm
from mycel.nn.cell import Cell
from mycel.nn.optim.optimizer import Optimizer

_TINY = 1e-30  # a zero update has no direction: AdaSum(0, b) = b


def adasum_tree(g):
    """The AdaSum of the rows of g, shape (n, m) with n a power of 2, paired as a binary tree."""
    n = g.shape[0]
    while n > 1:
        pairs = ops.reshape(g, (n // 2, 2, -1))
        a, b = pairs[:, 0], pairs[:, 1]
        dot = ops.sum(a * b, (1,), True)
        na = ops.maximum(ops.sum(a * a, (1,), True), _TINY)
        nb = ops.maximum(ops.sum(b * b, (1,), True), _TINY)
        g = (1.0 - dot / (2.0 * na)) * a + (1.0 - dot / (2.0 * nb)) * b
        n //= 2
    return ops.reshape(g, (-1,))


class _AdaSum(Cell):
    """Combines a tuple of per-parameter updates across the ranks of `group` with AdaSum."""

    def __init__(self, who, group=MPI_WORLD_COMM_GROUP):
        super().__init__(auto_prefix=False)
        size = _comm.group_size(group) if _comm.initialized() else 1
        if size & (size - 1):
            raise ValueError(f"{who}: AdaSum pairs the ranks in a binary tree, so the number of ranks "
                             f"must be a power of 2, got {size}")
        self.ranks = size
        self._gather = ops.AllGather(group) if size > 1 else None

    def construct(self, updates):
        if self._gather is None:
            return updates
        out = ()
        for u in updates:
            rows = self._gather(ops.reshape(u, (1, -1)))
            out += (ops.reshape(adasum_tree(rows), u.shape),)
        return out


def _check_optimizer(who, optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{who}: argument 'optimizer' must be an nn.Optimizer, got {type(optimizer).__name__}")
    return optimizer


class AdaSumByGradWrapCell(Cell):
    """optimizer(AdaSum of the ranks' gradients): construct(grads) as the optimizer's."""

    def __init__(self, optimizer):
        super().__init__(auto_prefix=False)
        self.optimizer = _check_optimizer("AdaSumByGradWrapCell", optimizer)
        self.parameters = optimizer.parameters
        self.adasum = _AdaSum("AdaSumByGradWrapCell")

    def construct(self, grads):
        return self.optimizer(self.adasum(grads))


class AdaSumByDeltaWeightWrapCell(Cell):
    """Runs the optimizer, then sets each parameter to its old value minus the AdaSum of the
    ranks' changes (old - new); returns the parameters."""

    def __init__(self, optimizer):
        super().__init__(auto_prefix=False)
        self.optimizer = _check_optimizer("AdaSumByDeltaWeightWrapCell", optimizer)
        self.parameters = optimizer.parameters
        self.adasum = _AdaSum("AdaSumByDeltaWeightWrapCell")
        self._alone = self.adasum.ranks == 1

    def construct(self, grads):
        if self._alone:  # old - (old - new) could differ from new in the last bit
            self.optimizer(grads)
            return self.parameters
        old = ()
        for p in self.parameters:
            old += (p * 1,)  # a copy: the optimizer overwrites p
        done = self.optimizer(ops.depend(grads, old))
        deltas = ()
        for p, w in zip(self.parameters, old):
            deltas += (w - ops.depend(p, done),)  # p as the optimizer left it
        combined = self.adasum(deltas)
        for p, w, d in zip(self.parameters, old, combined):
            ops.assign(p, w - d)
        return self.parameters


__all__ = ["AdaSumByGradWrapCell", "AdaSumByDeltaWeightWrapCell"]
