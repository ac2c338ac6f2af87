"""te.build, te.differentiate and te.lower: thin calls into the C++ core."""
import numpy as np

from mycel._mycel import te as _te
from mycel.te.expr import TensorExpr


def _nodes(tensors, what):
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    for t in tensors:
        if not isinstance(t, TensorExpr):
            raise TypeError(f"[te.{what}] expects te tensors, got {type(t).__name__}")
    return tensors, [t.node for t in tensors]


class Function:
    """A compiled TE function: f(*arrays) -> Tensor (or a tuple for several outputs)."""

    def __init__(self, built, inputs, outputs, name):
        self._built = built
        self.inputs, self.outputs, self.name = inputs, outputs, name

    source = property(lambda self: self._built.source)
    library = property(lambda self: self._built.library)
    cached = property(lambda self: self._built.cached)
    compile_seconds = property(lambda self: self._built.compile_seconds)

    def __call__(self, *args):
        args = [np.ascontiguousarray(a) if isinstance(a, (list, np.ndarray)) else a for a in args]
        outs = self._built.call(args)
        from mycel.common.tensor import Tensor  # noqa: F401 (the C++ Tensor class is Tensor)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self):
        return f"te.Function({self.name!r}, {len(self.inputs)} inputs, {len(self.outputs)} outputs)"


def _stages(schedule, what):
    if schedule is None:
        return []
    from mycel.te.schedule import Schedule
    if not isinstance(schedule, Schedule):
        raise TypeError(f"[te.{what}] schedule must come from te.create_schedule, got {type(schedule).__name__}")
    return schedule.stages()


def lower(inputs, outputs, schedule=None):
    """The generated C++ source for outputs over inputs (for inspection)."""
    _, ins = _nodes(inputs, "lower")
    _, outs = _nodes(outputs, "lower")
    return _te.generate_cpp(ins, outs, _stages(schedule, "lower"))


def build(inputs, outputs, name=None, schedule=None):
    """Compiles outputs (te tensors) over inputs (placeholders) into a callable on arrays;
    schedule (te.create_schedule) sets the loops of the tensors it has stages for."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"te.build: name must be a str, got {type(name).__name__}"
                        + (" (pass a schedule as schedule=s)" if hasattr(name, "stages") else ""))
    inputs, ins = _nodes(inputs, "build")
    outputs, outs = _nodes(outputs, "build")
    return Function(_te.build(ins, outs, _stages(schedule, "build")), inputs, outputs, name or outputs[0].name)


def differentiate(output, inputs, head=None, override=None):
    """Adjoints of inputs (list of te tensors) for output with adjoint head (ones if None).

    override maps a tensor t to (t_inputs, fn); fn(t, t_inputs, grad) returns the adjoints of
    t_inputs given t's adjoint grad (head times Jacobian, as TVM's fdiff), replacing the
    generated derivative of t.
    """
    if not isinstance(output, TensorExpr):
        raise TypeError(f"[te.differentiate] output must be a te tensor, got {type(output).__name__}")
    inputs, ins = _nodes(inputs, "differentiate")
    if head is not None and not isinstance(head, TensorExpr):
        raise TypeError(f"[te.differentiate] head must be a te tensor, got {type(head).__name__}")
    ovs = []
    for t, spec in (override or {}).items():
        if not (isinstance(spec, tuple) and len(spec) == 2 and callable(spec[1])):
            raise TypeError("[te.differentiate] override values must be (inputs, fn)")
        t_inputs, fn = spec
        t_inputs = list(t_inputs)

        def call(out_node, in_nodes, grad_node, fn=fn, t=t, t_inputs=t_inputs):
            res = fn(t, t_inputs, TensorExpr(grad_node))
            res = list(res) if isinstance(res, (list, tuple)) else [res]
            for r in res:
                if not isinstance(r, TensorExpr):
                    raise TypeError("[te.differentiate] override fn must return te tensors")
            return [r.node for r in res]
        ovs.append((t.node, [x.node for x in t_inputs], call))
    grads = _te.differentiate(output.node, ins, head.node if head is not None else None, ovs)
    return [TensorExpr(g) for g in grads]
