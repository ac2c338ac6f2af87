"""MindSpore 2.x path of the Python bprop registry (the same object as mycel.ops._grad.grad_base)."""
