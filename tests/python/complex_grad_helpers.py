"""Shared by the complex-gradient tests: central finite differences of a real numpy loss in
PyTorch's convention (for a real loss L of z = x + iy the gradient is dL/dx + i dL/dy), and the
check of mycel.grad (eager or compiled) against them."""
import numpy as np

import mycel as ms
from mycel import Tensor


def finite_differences(loss, args, eps=1e-6):
    """dL/dx (+ i dL/dy for complex arguments) per argument, by central differences."""
    grads = []
    for k, a in enumerate(args):
        g = np.zeros(a.shape, a.dtype)
        steps = (1.0, 1j) if np.iscomplexobj(a) else (1.0,)
        for idx in np.ndindex(a.shape):
            for s in steps:
                def at(h):
                    b = [x.copy() for x in args]
                    b[k][idx] += h * s
                    return loss(*b)
                g[idx] += s * (at(eps) - at(-eps)) / (2 * eps)
        grads.append(g)
    return grads


def check_gradients(name, loss, ref, args, mode, rtol=1e-5, atol=1e-6):
    """mycel.grad of `loss` over every argument, in `mode` (compiled with jit in GRAPH_MODE),
    equals the finite differences of the numpy loss `ref`, with each argument's dtype."""
    ms.set_context(mode=mode)
    positions = tuple(range(len(args)))

    def grad(*a):
        return ms.grad(loss, grad_position=positions)(*a)
    if mode == ms.GRAPH_MODE:
        grad = ms.jit(grad)
    got = grad(*[Tensor(a) for a in args])
    got = got if isinstance(got, tuple) else (got,)
    for g, e, a in zip(got, finite_differences(ref, args), args):
        assert g.asnumpy().dtype == a.dtype, name
        np.testing.assert_allclose(g.asnumpy(), e, rtol=rtol, atol=atol, err_msg=name)
