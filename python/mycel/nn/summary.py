"""Cell.summary(*example_inputs): a table of the layers (output shape, parameter count, trainable)
with totals and parameter memory. It runs the network once eagerly (PYNATIVE_MODE whatever the
mode) with each sub-Cell's construct wrapped to record its output, so it costs one forward pass;
the run is in inference mode (training flags are restored after, compiled graphs kept), so it
updates no running statistics. A container's row counts the parameters of its sub-Cells too."""
from mycel import context

_ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
             "bfloat16": 2, "float32": 4, "float64": 8}


def _numel(p):
    n = 1
    for d in p.shape:
        n *= d
    return n


def _shape_of(out):
    if hasattr(out, "shape") and hasattr(out, "dtype"):
        return str(tuple(out.shape))
    if isinstance(out, (tuple, list)):
        return "[" + ", ".join(_shape_of(o) for o in out) + "]"
    return type(out).__name__


def _trainable(params):
    flags = {p.requires_grad for p in params}
    return "" if not flags else "yes" if flags == {True} else "no" if flags == {False} else "partly"


def _record_calls(cell, example_inputs):
    """(name, sub-Cell, output shape) per sub-Cell call, in call order, from one eager run."""
    rows, names = [], {id(c): n for n, c in cell.cells_and_names() if c is not cell}
    subs = [c for _, c in cell.cells_and_names() if c is not cell]

    def recording(sub, construct):
        def run(*args, **kwargs):
            row = [names[id(sub)], sub, None]
            rows.append(row)  # appended before running: parents come before their children
            out = construct(*args, **kwargs)
            row[2] = _shape_of(out)
            return out
        return run

    mode = context.get_context("mode")
    cells = [c for _, c in cell.cells_and_names()]
    training = [c.training for c in cells]
    try:
        context.set_context(mode=context.PYNATIVE_MODE)
        for c in cells:  # inference: no batch-norm statistics updates, no dropout
            object.__setattr__(c, "training", False)
        for sub in subs:  # an instance attribute shadows the class's construct in Cell.__call__
            object.__setattr__(sub, "construct", recording(sub, sub.construct))
        cell(*example_inputs)
    finally:
        for sub in subs:
            sub.__dict__.pop("construct", None)
        for c, flag in zip(cells, training):
            object.__setattr__(c, "training", flag)
        context.set_context(mode=mode)
    return rows


def summary(cell, *example_inputs):
    """The table as a string (see the module doc); without example inputs, no output shapes."""
    if example_inputs:
        rows = _record_calls(cell, example_inputs)
    else:
        rows = [(n, c, "-") for n, c in cell.cells_and_names() if c is not cell]
    table = [("Layer", "Type", "Output shape", "Params", "Trainable")]
    for name, sub, shape in rows:
        params = list(sub.get_parameters())
        indent = "  " * name.count(".")
        table.append((indent + name, type(sub).__name__, shape, f"{sum(_numel(p) for p in params):,}",
                      _trainable(params)))
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    fmt = lambda r: "  ".join(  # noqa: E731 (counts right-aligned, text left-aligned)
        r[i].rjust(widths[i]) if i == 3 else r[i].ljust(widths[i]) for i in range(5)).rstrip()
    rule = "-" * max(len(fmt(r)) for r in table)
    params = list(cell.get_parameters())
    total = sum(_numel(p) for p in params)
    trainable = sum(_numel(p) for p in params if p.requires_grad)
    nbytes = sum(_numel(p) * _ITEMSIZE[p.dtype.name] for p in params)
    lines = [f"{type(cell).__name__} summary", rule, fmt(table[0]), rule]
    lines += [fmt(r) for r in table[1:]]
    lines += [rule, f"Total params: {total:,} (trainable {trainable:,}, non-trainable {total - trainable:,})",
              f"Parameter memory: {nbytes:,} bytes ({nbytes / 1024 ** 2:.2f} MiB)"]
    return "\n".join(lines)
