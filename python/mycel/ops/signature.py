"""Signatures and docstrings of registry ops, built from the one registry entry of each op, so that
inspect.signature, help() and IDEs see what the C++ entry point accepts: inputs first, then the
attributes in schema order (both positional or keyword), with the schema's defaults."""
import inspect

from mycel import _mycel
from mycel.ops._examples import EXAMPLES as _EXAMPLES

_P = inspect.Parameter


def _annotation(kind):
    """The Python type of an attribute kind (the registry's attr_kind_name), for signatures."""
    if kind == "dtype":
        from mycel.common.dtype import float32
        return type(float32)
    return {"bool": bool, "int": int, "float": float, "str": str, "tuple of int": tuple[int, ...],
            "tuple of float": tuple[float, ...]}.get(kind, _P.empty)


def _default(has_default, value):
    return value if has_default else _P.empty


def _parameters(handle, skip_attrs=()):
    """inputs then attributes, as the C++ call binds them; after the first default every later
    parameter must have one too, so a required attribute behind a defaulted one is keyword-only."""
    params, seen_default = [], False
    items = [(name, None if optional else _P.empty, _P.empty) for name, optional, _ in handle.inputs]
    items += [(name, _default(has_default, value), _annotation(kind))
              for name, kind, value, has_default in handle.attrs if name not in skip_attrs]
    for name, default, annotation in items:
        seen_default = seen_default or default is not _P.empty
        kind = _P.KEYWORD_ONLY if seen_default and default is _P.empty else _P.POSITIONAL_OR_KEYWORD
        params.append(_P(name, kind, default=default, annotation=annotation))
    # keyword-only parameters must follow the positional ones
    params.sort(key=lambda p: p.kind == _P.KEYWORD_ONLY)
    return params


def function_signature(handle):
    """ops.<name>(inputs..., attributes...)."""
    return inspect.Signature(_parameters(handle))


def constructor_signature(handle):
    """P.<ClassName>(attributes...): the attributes a primitive is configured with."""
    params = [_P(name, _P.POSITIONAL_OR_KEYWORD, default=_default(has_default, value),
                 annotation=_annotation(kind)) for name, kind, value, has_default in handle.attrs]
    # a required attribute behind a defaulted one can only be given by keyword
    seen_default = False
    for i, p in enumerate(params):
        seen_default = seen_default or p.default is not _P.empty
        if seen_default and p.default is _P.empty:
            params[i] = p.replace(kind=_P.KEYWORD_ONLY)
    params.sort(key=lambda p: p.kind == _P.KEYWORD_ONLY)
    return inspect.Signature(params)


def call_signature(handle, preset):
    """P.<ClassName>(...)(inputs...): a configured primitive takes its inputs (and any attribute
    it was not configured with)."""
    return inspect.Signature(_parameters(handle, skip_attrs=preset))


def _fmt(value):
    if isinstance(value, tuple):
        return "(" + ", ".join(_fmt(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if type(value).__name__ == "Type":  # a mycel dtype
        return f"mycel.{value}"
    return repr(value)


def _example(handle, call):
    inputs = [name for name, optional, _ in handle.inputs if not optional]
    return f"{call}({', '.join(inputs)})"


def docstring(handle, primitive=False):
    """The help text of one op: doc line, inputs, attributes (kinds, defaults), dtypes, example."""
    lines = [handle.doc.rstrip(".") + ".", ""]
    lines.append("Inputs:")
    for name, optional, variadic in handle.inputs:
        what = "tuple or list of Tensor" if variadic else "Tensor"
        lines.append(f"    {name} ({what}{' or None, default None' if optional else ''})")
    if not handle.inputs:
        lines.append("    none")
    lines.append("Attributes:")
    for name, kind, value, has_default in handle.attrs:
        default = f"default {_fmt(value)}" if has_default else "required"
        lines.append(f"    {name} ({kind}, {default})")
    if not handle.attrs:
        lines.append("    none")
    if handle.inputs:
        dtype_input = handle.inputs[handle.dtype_input][0]
        lines.append(f"Supported dtypes (of {dtype_input}): " + ", ".join(d.name for d in handle.dtypes))
    grad = {"bprop": "differentiable", "none": "not differentiable"}.get(handle.grad, "gradient not defined yet")
    lines.append(f"Gradient: {grad}.")
    lines += ["", "Example:"]
    if primitive:
        lines.append(f"    >>> op = ops.operations.{handle.class_name}()")
        lines.append(f"    >>> out = {_example(handle, 'op')}")
        lines.append(f"Functional form: mycel.ops.{handle.name}.")
    else:
        runnable = _EXAMPLES.get(handle.name)
        if runnable:
            lines += ["    " + line for line in runnable.splitlines()] + [""]  # a blank line ends it
        else:
            lines.append(f"    >>> out = {_example(handle, 'ops.' + handle.name)}")
        lines.append(f"Primitive class: mycel.ops.operations.{handle.class_name}.")
    return "\n".join(lines)


# A registry op in functional form (mycel.ops.matmul): a C type (bind_op_function.cc) that
# forwards calls to the C++ entry point by vectorcall and has a __dict__ for what is set below.
OpFunction = _mycel.OpFunction


def op_function(fn, handle, name=None):
    """The public functional form of `fn` (the registry entry point of `handle`)."""
    f = OpFunction(fn)
    f.__name__ = f.__qualname__ = name or handle.name
    f.__module__ = "mycel.ops"
    f.__doc__ = docstring(handle)
    f.__signature__ = function_signature(handle)
    f._handle = handle
    return f


class PrimitiveSignature:
    """`__signature__` of a primitive class: the constructor's on the class, the call's on an
    instance (so inspect.signature(P.MatMul) and inspect.signature(P.MatMul()) both tell the truth)."""

    def __get__(self, inst, owner):
        if owner._handle is None:
            return None  # the base class Primitive: inspect falls back to __init__
        if inst is None:
            return constructor_signature(owner._handle)
        return call_signature(owner._handle, inst._bound.preset)
