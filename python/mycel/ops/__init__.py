"""Operators, generated from the C++ op registry.

Two forms, as in MindSpore: functional (`ops.matmul(x, w, transpose_b=True)`) and primitive
classes configured once and called later (`ops.MatMul(transpose_b=True)(x, w)`).
"""
from mycel import _mycel
from mycel.ops import operations
from mycel.ops.operations import Primitive

_handles = _mycel.op_handles

# Functional form: the C++ entry point itself (no Python frame between the user and the registry).
for _name in _handles:
    globals()[_name] = getattr(_mycel.ops, _name)

# Primitive classes.
for _cls_name in operations.__all__:
    globals()[_cls_name] = getattr(operations, _cls_name)


def op_names():
    """Names of every registered op."""
    return sorted(_handles)
