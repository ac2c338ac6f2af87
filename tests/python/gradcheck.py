"""Finite-difference gradient checks in float64 (shared by the gradient tests)."""
import numpy as np

import mycel
from mycel import _mycel


def as_tensor(a):
    if a is None:
        return None
    if isinstance(a, (list, tuple)):
        return [mycel.Tensor(np.asarray(x)) for x in a]
    return mycel.Tensor(np.asarray(a))


def flat_outputs(out):
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.asnumpy().astype(np.float64) for o in outs]


def numeric_vjp(f, arrays, i, douts, eps):
    """d/dx_i of sum_k <f(x)_k, dout_k> by central differences (x_i may be a list for variadic)."""
    base = arrays[i]
    items = base if isinstance(base, (list, tuple)) else [base]
    grads = []
    for j, item in enumerate(items):
        g = np.zeros(np.shape(item), dtype=np.float64)
        it = np.nditer(np.asarray(item), flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            vals = []
            for sgn in (1.0, -1.0):
                x = np.array(item, dtype=np.float64, copy=True)
                x[idx] += sgn * eps
                new = list(items)
                new[j] = x
                args = list(arrays)
                args[i] = new if isinstance(base, (list, tuple)) else x
                # outputs without a cotangent are skipped (their -inf entries would give nan)
                vals.append(sum(float(np.sum(o * d)) for o, d in zip(f(args), douts) if np.any(d)))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return grads if isinstance(base, (list, tuple)) else grads[0]


def op_forward(op, attrs):
    fn = getattr(_mycel.ops, op)  # the registry's signature (mycel.ops may reorder, as gather_elements)

    def f(args):
        tensors = [as_tensor(a) for a in args]
        return flat_outputs(fn(*tensors, **attrs))
    return f


def random_douts(rng, outs, only=None):
    """A random cotangent per float output (zeros for the others and for outputs not in `only`)."""
    return [rng.standard_normal(o.shape) if o.dtype.kind == "f" and (only is None or k in only)
            else np.zeros(o.shape) for k, o in enumerate(outs)]


def check_close(analytic, numeric, rtol, atol, what):
    analytic = np.asarray(analytic, dtype=np.float64)
    assert analytic.shape == np.shape(numeric), f"{what}: shape {analytic.shape} vs numeric {np.shape(numeric)}"
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol, err_msg=what)
