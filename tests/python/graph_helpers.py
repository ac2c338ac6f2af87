"""Shared by the graph-mode syntax tests: inputs, eager-vs-graph comparison, and where a located
error must point."""
import inspect
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor


def arr(*shape, seed=0, dtype=np.float32):
    """A seeded normal array (scaled by 3, so casts and comparisons see varied values)."""
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def assert_same(e, g):
    """Equal structure (tuple vs list and dict included), Python values and tensors bit for bit.
    A Python scalar a compiled function returns comes back as a 0-d tensor."""
    if isinstance(e, (bool, int, float)) and isinstance(g, Tensor):
        assert g.ndim == 0 and type(g.item()) is type(e) and g.item() == e, (e, g)
        return
    assert type(e) is type(g), (type(e), type(g))
    if isinstance(e, (tuple, list)):
        assert len(e) == len(g)
        for a, b in zip(e, g):
            assert_same(a, b)
    elif isinstance(e, dict):
        assert list(e) == list(g), (list(e), list(g))
        for k in e:
            assert_same(e[k], g[k])
    elif isinstance(e, Tensor):
        assert e.dtype == g.dtype and e.shape == g.shape, (e, g)
        np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())
    else:
        assert e == g, (e, g)


def line_of(fn, text):
    """The file line of fn's source holding `text`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


def located(fn, args, kind, text, hint=""):
    """Graph mode raises `kind` naming fn's file, the line holding `text`, and `hint`."""
    with pytest.raises(kind) as info:
        mycel.jit(fn)(*args)
    msg = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    where = f"{os.path.basename(inspect.getsourcefile(fn))}:{line_of(fn, text)}"
    assert where in msg and text in msg and hint in msg, msg
    return info.value
