"""vmap over a CellList (MindSpore's model ensembling): M Cells of one structure, each with its
own Parameters, mapped over M slices of the inputs (or all given the same inputs where in_axes
is None), outputs stacked along out_axes. Each Cell keeps its own Parameters, so grad and the
optimizers see them as usual; the Cells run one after another (their weights are not stacked
into one batched program). In mycel.ops, not mycel.common, so that graph mode parses the
slicing and stacking helpers rather than calling them as compile-time Python."""
from mycel import _mycel

_ops = _mycel.ops


def _flat_axes(owner, axes, n_args):
    """One int-or-None per argument (MindSpore's nested in_axes are for tuple arguments, which
    a CellList ensemble does not take)."""
    if axes is None or isinstance(axes, int):
        return (axes,) * n_args
    axes = tuple(axes)
    if len(axes) != n_args:
        raise ValueError(f"vmap: in_axes {axes} has {len(axes)} entries, but the CellList is called "
                         f"with {n_args} arguments")
    for a in axes:
        if a is not None and not isinstance(a, int):
            raise TypeError(f"{owner}: over a CellList each in_axes entry must be an int or None, got {a!r}")
    return axes


def _take(x, axis, i, n, owner):
    """x's i-th slice along axis (x itself when axis is None)."""
    if axis is None:
        return x
    size = x.shape[axis]
    if size != n:
        raise ValueError(f"{owner}: in_axes maps an argument of shape {tuple(x.shape)} along axis {axis} "
                         f"(size {size}), but the CellList holds {n} cells: they must agree")
    return _ops.squeeze(_ops.split(x, axis=axis, output_num=n)[i], (axis,))


def _stack(outs, axis):
    if isinstance(outs[0], tuple):
        return tuple(_stack([o[k] for o in outs], axis) for k in range(len(outs[0])))
    return _ops.stack(outs, axis=axis)


def cell_list_vmap(cells, in_axes, out_axes):
    """The callable ops.vmap returns for a CellList (checked: at least one cell, one class)."""
    from mycel.nn.cell import Cell

    members = list(cells)
    if not members:
        raise ValueError("vmap: the CellList is empty")
    kinds = {type(c) for c in members}
    if len(kinds) != 1:
        raise TypeError(f"vmap: the cells of a CellList must be of one class, got "
                        f"{sorted(k.__name__ for k in kinds)}")
    shapes = [[(p.name.rsplit(".", 1)[-1], tuple(p.shape), p.dtype) for p in c.get_parameters()]
              for c in members]
    if any(s != shapes[0] for s in shapes[1:]):
        raise ValueError("vmap: the cells of a CellList must have Parameters of the same shapes")
    if not isinstance(out_axes, int) or isinstance(out_axes, bool):
        raise TypeError(f"vmap: over a CellList out_axes must be an int (each cell gives its own "
                        f"outputs), got {out_axes!r}")

    class CellListVmap(Cell):
        """ops.vmap over a CellList: cell i runs on slice i of the mapped inputs."""

        # The cells stay the user's CellList's (not registered here, which would rename their
        # Parameters); construct reaches them through the closure.

        def construct(self, *inputs):
            axes = _flat_axes("vmap", in_axes, len(inputs))
            n = len(members)
            outs = []
            for i in range(n):
                outs.append(members[i](*[_take(x, a, i, n, "vmap") for x, a in zip(inputs, axes)]))
            return _stack(outs, out_axes)

    return CellListVmap()
