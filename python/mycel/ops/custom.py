"""ops.Custom (issue 18): a user operator written in mycel.te ("te") or as a Python function on
numpy arrays ("pyfunc"). A te operator runs as the registry op te_call, so mycel.grad records it
and differentiates it with te.differentiate's adjoint (te_call's bprop). A pyfunc operator runs
eagerly; its bprop is reachable through Custom.bprop_call."""
import numpy as np

from mycel import te
from mycel._mycel import te as _te
from mycel.ops import functional as _functional


def _dtype_name(dtype):
    return te.expr._dtype_name(dtype)


class Custom:
    """Custom(func, out_shape, out_dtype, func_type="te", bprop=None) (MindSpore's ops.Custom).

    func_type "te": func(*placeholders) returns a te tensor; it is compiled once per input
    signature. "pyfunc": func(*numpy arrays) returns a numpy array. out_shape / out_dtype are a
    shape and dtype, or functions of the input shapes / dtypes (MindSpore's infer callables).
    """

    def __init__(self, func, out_shape=None, out_dtype=None, func_type="te", bprop=None):
        if func_type not in ("te", "pyfunc"):
            raise ValueError(f"[Custom] func_type must be 'te' or 'pyfunc', got {func_type!r} "
                             "('aot' is not supported yet)")
        if not callable(func):
            raise TypeError(f"[Custom] func must be callable, got {type(func).__name__}")
        self.func, self.func_type, self.bprop = func, func_type, bprop
        self.out_shape, self.out_dtype = out_shape, out_dtype
        self._cache = {}

    def _expected(self, shapes, dtypes):
        shape = self.out_shape(*shapes) if callable(self.out_shape) else self.out_shape
        dtype = self.out_dtype(*dtypes) if callable(self.out_dtype) else self.out_dtype
        return (None if shape is None else tuple(shape)), (None if dtype is None else _dtype_name(dtype))

    def _check(self, shape, dtype, want_shape, want_dtype):
        if want_shape is not None and tuple(shape) != want_shape:
            raise ValueError(f"[Custom] func returned shape {tuple(shape)}, but out_shape says {want_shape}")
        if want_dtype is not None and _dtype_name(dtype) != want_dtype:
            raise TypeError(f"[Custom] func returned dtype {_dtype_name(dtype)}, but out_dtype says {want_dtype}")

    def _compiled(self, arrays):
        key = tuple((a.shape, a.dtype.str) for a in arrays)
        entry = self._cache.get(key)
        if entry is None:
            xs = [te.placeholder(a.shape, a.dtype.name, f"in{k}") for k, a in enumerate(arrays)]
            out = self.func(*xs)
            if not isinstance(out, te.TensorExpr):
                raise TypeError(f"[Custom] a te func must return a te tensor, got {type(out).__name__}")
            self._check(out.shape, out.dtype, *self._expected([x.shape for x in xs], [x.dtype for x in xs]))
            fn = te.build(xs, [out])
            entry = self._cache[key] = (xs, out, fn, {"id": _te.register_function(fn._built)})
        return entry

    def __call__(self, *args):
        from mycel.common.tensor import Tensor
        arrays = [np.ascontiguousarray(a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)) for a in args]
        if self.func_type == "pyfunc":
            out = np.asarray(self.func(*arrays))
            self._check(out.shape, out.dtype, *self._expected([a.shape for a in arrays], [a.dtype.name for a in arrays]))
            return Tensor(np.ascontiguousarray(out))
        entry = self._compiled(arrays)
        if self.bprop is None:  # the registry op: recorded by mycel.grad, te gradient
            tensors = [a if isinstance(a, Tensor) else Tensor(x) for a, x in zip(args, arrays)]
            return _functional.te_call(tuple(tensors), kernel=entry[3]["id"])
        return entry[2](*arrays)

    def bprop_call(self, *args_and_dout):
        """Adjoints of the inputs given (*inputs, dout): the user's bprop(*inputs, out, dout) if
        given, else the te.differentiate gradient of the te func, compiled once per signature."""
        *args, dout = args_and_dout
        if self.bprop is not None:
            out = self(*args)
            res = self.bprop(*args, out, dout)
            return tuple(res) if isinstance(res, (list, tuple)) else (res,)
        if self.func_type != "te":
            raise NotImplementedError("[Custom] a pyfunc op needs a bprop to be differentiated")
        arrays = [np.ascontiguousarray(a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)) for a in args]
        xs, out, _, grads = self._compiled(arrays)
        if "fn" not in grads:
            head = te.placeholder(out.shape, out.dtype, "dout")
            adj = te.differentiate(out, xs, head)
            grads["fn"] = te.build(xs + [head], adj)
        d = dout.asnumpy() if hasattr(dout, "asnumpy") else np.asarray(dout)
        res = grads["fn"](*arrays, np.ascontiguousarray(d))
        return res if isinstance(res, tuple) else (res,)
