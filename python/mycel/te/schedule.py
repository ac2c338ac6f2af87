"""te.create_schedule: Halide / TVM-style loop schedules for compute tensors. The C++ core
checks each step (te::Stage) and the lowering follows it; this module only wraps IterVars."""
from mycel._mycel import te as _te
from mycel.te.expr import IterVar, TensorExpr


def _var(axis, what):
    if isinstance(axis, IterVar):
        return axis.var
    raise TypeError(f"[te schedule] {what} takes loops (te IterVars), got {type(axis).__name__}")


class Stage:
    """The loops of one compute tensor: split, reorder, parallel, vectorize, unroll, compute_at."""

    def __init__(self, tensor):
        self.tensor = tensor
        self._stage = _te.Stage(tensor.node)

    @property
    def loops(self):
        """The current loops, outermost first."""
        return tuple(IterVar(v) for v in self._stage.loops)

    def split(self, axis, factor=None, nparts=None):
        """(outer, inner) loops replacing axis: inner runs `factor` times (or outer `nparts`)."""
        if (factor is None) == (nparts is None):
            raise ValueError("[te schedule] split takes exactly one of factor and nparts")
        v = _var(axis, "split")
        if nparts is not None:
            if int(nparts) < 1:
                raise ValueError(f"[te schedule] split of '{v.name}': nparts must be >= 1, got {nparts}")
            factor = -(-(v.hi - v.lo) // int(nparts))
        outer, inner = self._stage.split(v, int(factor))
        return IterVar(outer), IterVar(inner)

    def tile(self, x, y, x_factor, y_factor):
        """split x and y, then order (x.outer, y.outer, x.inner, y.inner)."""
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def reorder(self, *axes):
        """The given loops take the positions they occupy, in this order."""
        self._stage.reorder([_var(a, "reorder") for a in axes])

    def parallel(self, axis):
        self._stage.set_kind(_var(axis, "parallel"), _te.LoopKind.parallel)

    def vectorize(self, axis):
        self._stage.set_kind(_var(axis, "vectorize"), _te.LoopKind.vectorized)

    def unroll(self, axis):
        self._stage.set_kind(_var(axis, "unroll"), _te.LoopKind.unrolled)

    def compute_at(self, parent, axis):
        """Compute this tensor inside loop `axis` of stage `parent` (its consumer), only over the
        region one iteration of that loop reads (TVM's compute_at)."""
        if not isinstance(parent, Stage):
            raise TypeError(f"[te schedule] compute_at takes the consumer's stage s[t], got {type(parent).__name__}")
        self._stage.compute_at(parent._stage, _var(axis, "compute_at"))


class Schedule:
    """s[t] is the Stage of compute tensor t (made on first use); pass s to te.build / te.lower."""

    def __init__(self, outputs=()):
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self._stages = {}

    def __getitem__(self, tensor):
        if not isinstance(tensor, TensorExpr):
            raise TypeError(f"[te schedule] s[t] takes a te tensor, got {type(tensor).__name__}")
        stage = self._stages.get(tensor)
        if stage is None:
            stage = self._stages[tensor] = Stage(tensor)
        return stage

    def stages(self):
        return [s._stage for s in self._stages.values()]


def create_schedule(outputs):
    """An empty schedule for outputs (a te tensor or a list): every tensor keeps the default
    lowering until s[t] gives it loops of its own."""
    return Schedule(outputs)
