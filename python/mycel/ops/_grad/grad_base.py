"""MindSpore's bprop_getters: `@bprop_getters.register(MyPrim)` on a getter `fn(self)` that
returns `bprop(*inputs, out, dout)` (a tuple of input gradients) for a primitive defined in
Python; the primitive's calls are then differentiable in both modes."""
from mycel.ops.vm_impl_registry import Registry

bprop_getters = Registry()
bprops = bprop_getters  # MindSpore's second name for Python-side bprop registrations
