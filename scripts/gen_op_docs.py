"""Writes docs/ops.md from the op registry (run after adding an op; a test checks it is current).

    .venv/bin/python scripts/gen_op_docs.py [output]
"""
import os
import sys

from mycel import _mycel


def render():
    lines = ["# Op reference", "",
             "Generated from the C++ op registry by `scripts/gen_op_docs.py`; do not edit by hand.",
             "Each op is callable as `mycel.ops.<name>(inputs..., attrs...)` and as a primitive class",
             "`mycel.ops.<Class>(attrs...)(inputs...)` (also `from mycel.ops import operations as P`).",
             "Both carry a signature and help text generated from the same registry entry:", "",
             "```python",
             "import inspect",
             "import numpy as np",
             "from mycel import Tensor, ops",
             "from mycel.ops import operations as P",
             "",
             "x = Tensor(np.random.randn(2, 1, 8, 8).astype(np.float32))",
             "w = Tensor(np.random.randn(4, 1, 3, 3).astype(np.float32))",
             "y = ops.conv2d(x, w, stride=2, pad_mode=\"same\")     # functional: inputs, then attributes",
             "conv = P.Conv2D(stride=2, pad_mode=\"same\")           # primitive: attributes once ...",
             "assert (conv(x, w).asnumpy() == y.asnumpy()).all()   # ... inputs at call time",
             "print(y.shape)                                      # (2, 4, 4, 4)",
             "print(inspect.signature(ops.conv2d))   # (x, w, b=None, stride: tuple[int, ...] = (1,), ...)",
             "help(ops.conv2d)                       # inputs, attributes, dtypes, gradient, example",
             "```", "",
             "The example in each op's help text runs as printed: it comes from the op's smallest row of",
             "the op test table (`scripts/gen_op_examples.py` writes `python/mycel/ops/_examples.py`, checked",
             "against numpy), and `tests/python/test_op_examples.py` runs every one as a doctest.", "",
             "| op | class | inputs | attributes (default) | dtypes | gradient | description |",
             "|---|---|---|---|---|---|---|"]
    for name in sorted(_mycel.op_handles):
        h = _mycel.op_handles[name]
        ins = ", ".join(f"{n}{'?' if opt else ''}{'...' if var else ''}" for n, opt, var in h.inputs)
        attrs = ", ".join(f"{n}: {k}" + (f" = {d!r}" if d is not None else ("" if has else " (required)"))
                          for n, k, d, has in h.attrs)
        dts = ", ".join(d.name for d in h.dtypes) or "-"
        lines.append(f"| `{name}` | `{h.class_name}` | {ins or '-'} | {attrs or '-'} | {dts} | "
                     f"{h.grad} | {h.doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "docs", "ops.md")
    with open(out, "w") as f:
        f.write(render())
