"""Frontend: unsupported syntax raises a located SyntaxError at parse time."""
import inspect

import pytest

import mycel

parse = mycel._mycel.frontend.parse


def uses_try(x):
    try:
        x = x + 1
    except ValueError:
        pass
    return x


def uses_with(x):
    y = x
    with open("f") as fh:
        y = fh
    return y


def uses_comprehension(x):
    return {x for _ in range(x.shape[0])}


def unknown_name(x):
    return x + not_defined_anywhere  # noqa: F821


def _line(fn, offset):
    return inspect.getsourcelines(fn)[1] + offset


@pytest.mark.parametrize("fn,offset,col,construct", [
    (uses_try, 1, 5, "'try' is not supported in graph mode"),
    (uses_with, 2, 5, "'with' is not supported in graph mode"),
    (uses_comprehension, 1, 12, "'set' is not supported in graph mode"),
])
def test_unsupported_syntax_points_at_the_line(fn, offset, col, construct):
    with pytest.raises(SyntaxError) as ei:
        parse(fn)
    e = ei.value
    assert e.lineno == _line(fn, offset)
    assert e.offset == col
    assert e.filename.endswith("test_frontend_errors.py")
    msg = str(e.msg)
    assert f"test_frontend_errors.py:{e.lineno}:{col}: {construct}; " in msg
    assert e.text.strip() in msg and "^" in msg


def test_undefined_name_is_a_name_error_with_location():
    with pytest.raises(NameError, match=r"test_frontend_errors.py:\d+:\d+: name 'not_defined_anywhere'"):
        parse(unknown_name)


def test_unpacking_in_literal_and_global():
    def f(x):
        return (*x, 1)

    def g(x):
        global CONFIG
        return x
    with pytest.raises(SyntaxError, match=r"'\*unpacking in a literal' is not supported"):
        parse(f)
    with pytest.raises(SyntaxError, match="'global' is not supported in graph mode; pass the value"):
        parse(g)


def test_non_constant_range_step_is_rejected():
    def f(x, s):
        for i in range(0, 10, s):
            x = x + i
        return x
    with pytest.raises(SyntaxError, match="range step"):
        parse(f)
