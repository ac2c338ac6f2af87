"""ops.vmap (MindSpore's signature): fn mapped over an axis of its inputs, as one program.

vmap is a transform of the IR in C++ (src/mycel/ad/vmap_graph.cc): fn is parsed and specialized for
one item (the mapped axes removed), then every op call is rewritten by its batching rule from the
op registry (ops/batch.h), so the batch runs as whole-tensor ops, not as a Python loop. It composes
with grad both ways and with itself: vmap(grad(f)), grad(vmap(f)) and vmap(vmap(f)) become one chain
of transforms (grad then vmap, ...) compiled into one Program per input signature. PYNATIVE_MODE
runs the same compiled program (as vjp / jvp do), so there is one vmap in both modes; fn must be in
graph mode's subset and straight-line after inlining (no data-dependent control flow per item).

Semantics: a Cell's Parameters are not mapped (shared by every item). Ops without a batching rule
run once per item (noted once on stderr). Random ops draw from the global generator: one with a
mapped input (dropout) draws independently per item; one without inputs (normal(shape)) draws once
and every item sees the same values.
"""
from mycel import _mycel

_AXES_HELP = "an int, None, or a tuple of them (nested as the arguments are)"


def _check_axes(name, axes):
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return axes
    if isinstance(axes, (tuple, list)):
        return tuple(_check_axes(name, a) for a in axes)
    raise TypeError(f"vmap: {name} must be {_AXES_HELP}, got {type(axes).__name__} {axes!r}")


class _VmapFunction:
    """What vmap returns: compiles fn's batched program per input signature on first call."""

    def __init__(self, fn, in_axes, out_axes):
        if not callable(fn):
            raise TypeError(f"vmap: fn must be a function or a Cell, got {type(fn).__name__}")
        self._fn = fn
        self._in_axes = _check_axes("in_axes", in_axes)
        self._out_axes = _check_axes("out_axes", out_axes)
        self._compiled = {}
        self.__name__ = "vmap_" + getattr(fn, "__name__", type(fn).__name__)

    def _spec(self):
        return {"kind": "vmap", "in_axes": self._in_axes, "out_axes": self._out_axes}

    def _mycel_vmap_spec(self):
        """What graph mode needs to call this vmap function inside a graph (frontend vmap_object)."""
        return {"in_axes": self._in_axes, "out_axes": self._out_axes, "fn": self._fn}

    def __call__(self, *args):
        if not args:
            raise TypeError("vmap: the mapped function needs at least one argument")
        if isinstance(self._in_axes, tuple) and len(self._in_axes) != len(args):
            raise ValueError(f"vmap: in_axes {self._in_axes} has {len(self._in_axes)} entries, but the function "
                             f"is called with {len(args)} arguments")
        return call_chain(self, args)


def transform_chain(obj, n):
    """(base function or Cell, chain innermost first) of nested vmap / grad functions called with
    n arguments; None when obj holds no vmap (a plain grad goes its own way)."""
    from mycel.common.autodiff import _GradFunction, _positions
    from mycel.ops.ad_graphs import as_parsable
    chain = []
    has_vmap = False
    while True:
        if isinstance(obj, _VmapFunction):
            chain.append(obj._spec())
            has_vmap = True
            obj = obj._fn
        elif isinstance(obj, _GradFunction):
            m = n - (1 if obj._sens_param else 0)
            if obj._all_positions:
                positions, as_tuple = list(range(m)), True
            else:
                positions, as_tuple = _positions(obj._grad_position, m)
            if not positions and obj._weights is None:
                raise ValueError("grad: grad_position is None and no weights given: nothing to differentiate")
            chain.append({"kind": "grad", "positions": positions, "positions_tuple": as_tuple,
                          "return_value": obj._return_value, "has_aux": obj._has_aux,
                          "sens_param": obj._sens_param,
                          "weights": tuple(obj._weights) if obj._weights is not None else None})
            n = m
            obj = obj._fn
        else:
            break
    if not has_vmap:
        return None
    chain.reverse()
    return as_parsable(obj, n), chain


def call_chain(outer, args):
    """Runs a chain of transforms ending in `outer` (a vmap or grad function) on args."""
    key = len(args)
    g = outer._compiled.get(("chain", key))
    if g is None:
        base, chain = transform_chain(outer, len(args))
        g = outer._compiled[("chain", key)] = _mycel.graph.transformed(base, chain)
    return g(*args)


def vmap(fn, in_axes=0, out_axes=0):
    """fn mapped over axis `in_axes` of its inputs, stacking results along `out_axes`.

    in_axes: an int (every input mapped along that axis), None (not mapped), or a tuple with one
    entry per argument (each an int, None, or a tuple for a tuple argument). out_axes likewise for
    the outputs. fn: a function or a Cell (its Parameters are not mapped), or a CellList of Cells
    of one class: model ensembling, cell i on slice i of the mapped inputs (vmap_cells.py)."""
    from mycel.nn.cell import CellList
    if isinstance(fn, CellList):
        from mycel.ops.vmap_cells import cell_list_vmap
        return cell_list_vmap(fn, _check_axes("in_axes", in_axes), out_axes)
    return _VmapFunction(fn, in_axes, out_axes)


vmap._mycel_transform = "vmap"  # called in parsed code, the frontend makes the transform in the graph
