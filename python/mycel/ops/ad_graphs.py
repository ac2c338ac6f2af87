"""The compiled programs behind mycel.vjp / jvp / jacrev / jacfwd (common/functional_ad.py).

These functions are parsed by graph mode, so they live outside mycel.common: the frontend treats
functions of mycel.common as opaque library code, not as source to parse.
"""
from mycel import _mycel
from mycel.common import api
from mycel.common.autodiff import GradOperation, _GradFunction, grad

_VJP_ALL = GradOperation(get_all=True, sens_param=True)  # a global, so graph mode sees the grad op


def as_parsable(fn, n):
    """fn itself when graph mode parses it (a Python function, method or Cell); an op (a C++
    function) wrapped in a Python function of its n inputs, since grad needs a graph to transform.
    Fixed arities: a *args wrapper would hide the positions from grad."""
    import inspect
    from mycel.nn.cell import Cell
    if isinstance(fn, Cell) or inspect.isfunction(fn) or inspect.ismethod(fn):
        return fn
    if n == 1:
        def op1(a):
            return fn(a)
        return op1
    if n == 2:
        def op2(a, b):
            return fn(a, b)
        return op2
    if n == 3:
        def op3(a, b, c):
            return fn(a, b, c)
        return op3
    if n == 4:
        def op4(a, b, c, d):
            return fn(a, b, c, d)
        return op4
    if n == 5:
        def op5(a, b, c, d, e):
            return fn(a, b, c, d, e)
        return op5
    if n == 6:
        def op6(a, b, c, d, e, f):
            return fn(a, b, c, d, e, f)
        return op6
    if n == 7:
        def op7(a, b, c, d, e, f, g):
            return fn(a, b, c, d, e, f, g)
        return op7
    if n == 9:  # csr_spgemm_grad
        def op9(a, b, c, d, e, f, g, h, i):
            return fn(a, b, c, d, e, f, g, h, i)
        return op9
    raise TypeError(f"{getattr(fn, '__name__', fn)!r} takes {n} inputs: wrap it in a Python function "
                    "to differentiate it")


def vjp_program(fn, positions, weights):
    """A @jit program (inputs, sens) -> cotangents of `positions` (and of `weights`): reverse mode
    with the output sensitivity given (a tuple of them for a tuple output)."""
    grad_fn = _GradFunction(fn, positions, weights, False, False, sens_param=True)  # fn: as_parsable

    def vjp_entry(inputs, sens):
        return grad_fn(*inputs, sens)
    return api.jit(vjp_entry)


def jvp_program(fn, positions):
    """A @jit program (inputs, u, tangents) -> J @ tangents for the inputs at `positions`, by the
    linear transpose of reverse mode: vjp(u) = J^T u is linear in u, so the gradient w.r.t. u of
    <J^T u, t> is J t, whatever u is (u only gives the output structure: zeros do). Grad of grad
    runs in graph mode, so this works in both modes."""
    vjp_fn = _GradFunction(fn, tuple(positions), None, False, False, sens_param=True)

    def pairing(inputs, u, tangents):
        cotangents = vjp_fn(*inputs, u)
        acc = 0.0
        for c, t in zip(cotangents, tangents):
            acc = acc + (c * t).sum()
        return acc
    linear = _GradFunction(pairing, 1, None, False, False)

    def jvp_entry(inputs, u, tangents):
        return linear(inputs, u, tangents)
    return api.jit(jvp_entry)


# The form graph mode parses when jvp is called inside compiled code (functional_ad marks it
# `_mycel_graph_impl`): the gradients are taken in the graph, as grad inside a graph is. (vjp is built
# by the frontend instead: its vjp_fn must be a graph nested in the caller.)

def jvp_in_graph(fn, inputs, v):
    """(fn(*inputs), J @ v) by the linear transpose of reverse mode (see jvp_program)."""
    if isinstance(inputs, tuple):
        xs = inputs
        ts = v
    else:
        xs = (inputs,)
        ts = (v,)
    out = fn(*xs)
    u = _mycel.ops.zeros_like(out)

    def pairing(w):
        cotangents = _VJP_ALL(fn)(*xs, w)
        acc = 0.0
        for c, t in zip(cotangents, ts):
            acc = acc + (c * t).sum()
        return acc
    return out, grad(pairing)(u)
