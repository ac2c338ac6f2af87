"""Generates python/mycel/ops/_examples.py: one runnable example per public op for its help text,
made from the op's smallest row of the op test table (tests/python/op_cases) with inputs rounded
for reading, and checked against that row's numpy reference before it is written. The examples
are doctests: tests/python/test_op_examples.py runs every one. Run again after changing an op:

    .venv/bin/python scripts/gen_op_examples.py
"""
import importlib
import os
import pkgutil
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "python"))

import mycel  # noqa: E402
from mycel import ops  # noqa: E402
import op_cases  # noqa: E402
from op_cases import default_tol, make_input  # noqa: E402

MAX_ITEMS = 48  # elements over all inputs, and over all outputs: an example stays readable
# collectives run in a world of one process without mpirun once the communicator is initialized
COMM_SETUP = (">>> from mycel.communication import init", ">>> init()")
OUT = os.path.join(ROOT, "python", "mycel", "ops", "_examples.py")


def _arrays(case, dtype):
    rng = np.random.default_rng(0)
    if callable(case.shapes):
        arrays = [np.asarray(a) for a in case.shapes(rng, dtype)]
    else:
        arrays = [make_input(rng, s, dtype, case.domain) for s in case.shapes]
    # two decimals read well and keep each domain ('unit' stays within +-0.95, 'positive' >= 0.1);
    # a row whose generator needs exact values fails its reference check below and is passed over
    return [np.round(a, 2).astype(a.dtype) if a.dtype.kind == "f" else a for a in arrays]


def _nested(a):
    """a as a one-line nested list, float32 values in their shortest exact form (0.13, not
    0.12999999523162842)."""
    if a.ndim == 0:
        v = a.item()
        if a.dtype.kind == "f":
            return np.format_float_positional(a[()], unique=True, trim="-")
        return repr(v)
    return "[" + ", ".join(_nested(x) for x in a) + "]"


def _literal(a):
    if a.dtype == np.bool_:
        return f"np.array({_nested(a)})"
    return f"np.array({_nested(a)}, np.{a.dtype.name})"


def _outputs_equal_reference(out, ref, dtype):
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    if len(outs) != len(refs):
        return False
    for o, r in zip(outs, refs):
        got, r = (o.asnumpy() if isinstance(o, mycel.Tensor) else np.asarray(o)), np.asarray(r)
        if got.shape != r.shape:
            return False
        real = np.empty(0, r.dtype).real.dtype  # complex results: their real type's tolerance
        rtol, atol = default_tol(real if r.dtype.kind in "fc" else dtype)
        if r.dtype.kind in "fc":
            if not np.allclose(got, r, rtol=max(rtol, 1e-5), atol=max(atol, 1e-5), equal_nan=True):
                return False
        elif not np.array_equal(got, r):
            return False
    return True


def _numel(x):
    if isinstance(x, tuple):
        return sum(_numel(v) for v in x)
    return int(np.prod(x.shape)) if hasattr(x, "shape") else 1


def example(op, cases, setup=()):
    """The example text for op, or None when no table row makes a small, checked one."""
    # rows with non-empty inputs of at most MAX_ITEMS elements: arrays before scalars, float rows
    # first (the dtype a reader expects; the uint16 or complex rows exist to test those dtypes),
    # then those of about 12 elements
    ranked = []
    for case in cases:
        dtype = "float32" if "float32" in case.dtypes else case.dtypes[0]
        try:
            arrays = _arrays(case, dtype)
        except Exception:
            continue
        total = sum(a.size for a in arrays)
        if (arrays or case.attrs) and total <= MAX_ITEMS and all(a.size > 0 for a in arrays):
            ranked.append((all(a.ndim == 0 for a in arrays), dtype not in ("float32", "float64"),
                           abs(total - 12), len(ranked), case, dtype, arrays))
    for *_, case, dtype, arrays in sorted(ranked, key=lambda r: r[:4]):
        text = _render(op, case, dtype, arrays, setup)
        if text is not None:
            return text
    return None


def _render(op, case, dtype, arrays, setup):
    handle = mycel._mycel.op_handles[op]
    names = [name for name, _, _ in handle.inputs]
    variadic = bool(handle.inputs) and handle.inputs[-1][2]
    lines = [">>> import numpy as np", ">>> from mycel import Tensor, ops"] + list(setup)
    args = []
    for i, a in enumerate(arrays):
        name = names[i] if i < len(names) - (1 if variadic else 0) else f"{names[-1]}{i - len(names) + 1}"
        lines.append(f">>> {name} = Tensor({_literal(a)})")
        args.append(name)
    tensors = [mycel.Tensor(a) for a in arrays]
    if variadic:
        k = len(names) - 1
        tensors = tensors[:k] + [tuple(tensors[k:])]
        args = args[:k] + ["(" + ", ".join(args[k:]) + ("," if len(args) - k == 1 else "") + ")"]
    lines += list(case.example_setup)
    attrs = [f"{k}={case.example_attrs.get(k, repr(v))}" for k, v in case.attrs.items()]
    try:
        out = getattr(ops, op)(*tensors, **case.attrs)
        ref = case.ref(*arrays, **case.attrs)
    except Exception:
        return None
    if _numel(out) > MAX_ITEMS or not _outputs_equal_reference(out, ref, dtype):
        return None
    lines.append(f">>> ops.{op}({', '.join(args + attrs)})")
    lines += [line if line.strip() else "<BLANKLINE>" for line in repr(out).splitlines()]
    return "\n".join(lines)


def main():
    by_op, collective = {}, set()
    for info in pkgutil.iter_modules(op_cases.__path__):
        for c in getattr(importlib.import_module(f"op_cases.{info.name}"), "CASES", []):
            if not c.nondeterministic and not c.needs_peer:
                by_op.setdefault(c.op, []).append(c)
                if info.name == "collective":
                    collective.add(c.op)
    by_op.pop("te_call", None)  # runs a compiled TE function: docs/te.md shows it
    examples, missing = {}, []
    for op in sorted(mycel._mycel.op_handles):
        if not hasattr(ops, op) or op not in by_op:
            continue
        text = example(op, by_op[op], setup=COMM_SETUP if op in collective else ())
        if text is None:
            missing.append(op)
        else:
            examples[op] = text
    body = ['"""Runnable examples for the ops\' help text, one per op (generated by',
            'scripts/gen_op_examples.py from the op test table; checked against numpy when generated, run as',
            'doctests by tests/python/test_op_examples.py). Do not edit by hand."""', "", "EXAMPLES = {"]
    for op, text in examples.items():
        body.append(f"    {op!r}: {text!r},")
    body.append("}")
    tmp = OUT + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(body) + "\n")
    os.replace(tmp, OUT)
    print(f"{len(examples)} examples written to {os.path.relpath(OUT, ROOT)}; "
          f"{len(missing)} public ops without a small table row: {' '.join(missing)}")


if __name__ == "__main__":
    main()
