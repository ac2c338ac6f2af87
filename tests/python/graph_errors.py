"""Shared by the graph-mode syntax tests: where a located error must point."""
import inspect
import os

import pytest

import mycel


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
