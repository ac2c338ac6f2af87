"""MindSpore's `ops.operations.nn_ops` path (its neural-network primitives): every primitive class is
generated once from the registry in `mycel.ops.operations`; this module names them at the path
MindSpore's programs import from."""
from mycel.ops.operations import *  # noqa: F401,F403
from mycel.ops.operations import __all__  # noqa: F401
