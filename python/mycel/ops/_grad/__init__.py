"""MindSpore 1.x path of the Python bprop registry (mycel.ops._grad.grad_base)."""
