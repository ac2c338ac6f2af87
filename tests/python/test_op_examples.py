"""Every example in the ops' help text runs and prints what it shows (doctest). The examples
come from scripts/gen_op_examples.py, which checked each against the op table's numpy reference
when it wrote them; here they guard against drift in either direction."""
import doctest
import re

import numpy as np
import pytest

import mycel
from mycel import ops
from mycel.ops._examples import EXAMPLES


def test_most_public_ops_have_a_runnable_example():
    public = [name for name in mycel._mycel.op_handles if hasattr(ops, name)]
    assert len(EXAMPLES) >= 0.8 * len(public), (len(EXAMPLES), len(public))


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


class _CloseNumbers(doctest.OutputChecker):
    """The text must match with its numbers replaced (whitespace aside), and the numbers agree to
    float32 rounding: a kernel's summation order may differ by machine or thread count, so the
    last digit may too."""

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        # Without whitespace: numpy pads a number with fewer digits ("0.2092362 ," for
        # "0.20923619,") to align its columns.
        if _NUMBER.sub("#", "".join(want.split())) != _NUMBER.sub("#", "".join(got.split())):
            return False
        w = [float(v) for v in _NUMBER.findall(want)]
        g = [float(v) for v in _NUMBER.findall(got)]
        return len(w) == len(g) and np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_help_example_runs(name):
    doc = getattr(ops, name).__doc__
    assert EXAMPLES[name].splitlines()[-1].strip() in doc  # the help text carries it
    test = doctest.DocTestParser().get_doctest(doc, {}, f"mycel.ops.{name}", None, 0)
    assert test.examples, f"ops.{name}: no example in its help text"
    runner = doctest.DocTestRunner(checker=_CloseNumbers(), optionflags=doctest.NORMALIZE_WHITESPACE)
    old = np.get_printoptions()
    try:
        runner.run(test, out=lambda s: pytest.fail(s, pytrace=False))
    finally:
        np.set_printoptions(**old)
    assert runner.summarize(verbose=False).failed == 0


_FRESH = r"""
import doctest, json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_op_examples import _CloseNumbers  # imports mycel, not the op table
from mycel import ops
from mycel.ops._examples import EXAMPLES
assert "op_cases" not in sys.modules
failed = []
for name in sorted(EXAMPLES, reverse=True):  # reversed: no example may lean on an earlier one
    test = doctest.DocTestParser().get_doctest(getattr(ops, name).__doc__, {}, name, None, 0)
    runner = doctest.DocTestRunner(checker=_CloseNumbers(), optionflags=doctest.NORMALIZE_WHITESPACE)
    old = np.get_printoptions()
    out = []
    runner.run(test, out=out.append)
    np.set_printoptions(**old)
    if runner.summarize(verbose=False).failed:
        failed.append((name, "".join(out)[-600:]))
print(json.dumps(failed))
"""


def test_help_examples_run_in_a_fresh_process():
    # Each example must create whatever it uses: custom_call's once passed fn=0, a host function
    # that only the op table (imported by other test modules) had registered, so it failed when
    # run alone. A fresh interpreter that never imports the table runs every example.
    import json
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, "-c", _FRESH, here], capture_output=True, text=True,
                         timeout=240, cwd="/tmp")
    assert res.returncode == 0, res.stderr[-2000:]
    failed = json.loads(res.stdout.strip().splitlines()[-1])
    assert not failed, failed
