"""MindSpore 2.x path of bprop_getters (the same registry as mycel.ops._grad.grad_base)."""
from mycel.ops._grad.grad_base import bprop_getters, bprops  # noqa: F401
