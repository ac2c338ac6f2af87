"""ops.Custom (issue 18): a user operator written in mycel.te ("te"), as a Python function on
numpy arrays ("pyfunc"), as a C/C++ function with MindSpore's aot calling convention ("aot") or
in MindSpore's Hybrid DSL ("hybrid", an ops.kernel function translated to C++ per input
signature: ops/hybrid.py).

A te operator runs as the registry op te_call (one compiled TE function per input signature),
the others as custom_call (a host function registered once). Both are ordinary registry ops, so
the same forward serves eager calls and graph mode, where the parser reads the operator's
`_mycel_graph_impl` and compiles the call into the step. The gradient is te.differentiate's
(te_call's bprop) unless the user gives `bprop(*inputs, out, dout)`: then the call is wrapped in
a Cell whose bprop is the user's, which mycel.grad uses in both modes."""
import inspect
import itertools
import linecache
import os
import re
import tempfile

import numpy as np

from mycel import te
from mycel._mycel import te as _te
from mycel.ops import functional as _functional
from mycel.ops.hybrid import HybridKernel
from mycel.ops.primitive import constexpr

_FUNC_TYPES = ("te", "pyfunc", "aot", "hybrid")
_cell_counter = itertools.count()


def _dtype_name(dtype):
    return te.expr._dtype_name(dtype)


def _core_dtype(name):
    """The mycel dtype named name ('bool' is mycel.bool_)."""
    import mycel
    return getattr(mycel, "bool_" if name == "bool" else name)


@constexpr
def _te_kernel_for_static_shapes(op, shapes, dtypes):
    """The te_call kernel id of op for these input shapes and dtypes (compiled once per
    signature); a compile-time value in graph mode."""
    return op._te_entry(tuple(tuple(s) for s in shapes), tuple(_dtype_name(d) for d in dtypes))[3]["id"]


@constexpr
def _hybrid_kernel_for_static_shapes(op, shapes, dtypes):
    """The custom_call host function of a hybrid op for these input shapes and dtypes (translated
    and compiled once per signature); a compile-time value in graph mode."""
    return op._hybrid_entry(tuple(tuple(s) for s in shapes), tuple(_dtype_name(d) for d in dtypes))


class Custom:
    """Custom(func, out_shape, out_dtype, func_type="te", bprop=None) (MindSpore's ops.Custom).

    func_type "te": func(*placeholders) returns a te tensor; it is compiled once per input
    signature. "pyfunc": func(*numpy arrays) returns a numpy array (or a tuple of them).
    "aot": func is "path/lib.so:name" or "path/source.cc:name" (compiled with the system
    compiler into the TE kernel cache), a function with MindSpore's aot signature.
    "hybrid" (the default for an ops.kernel function): the function is translated to C++ and
    compiled once per input signature; its output_tensor declarations give the outputs.
    out_shape / out_dtype are a shape and dtype (lists of them for several outputs), or
    functions of the input shapes / dtypes (MindSpore's infer callables); "pyfunc" and "aot"
    need them. bprop(*inputs, out, dout) returns the inputs' gradients (a tuple); without it a
    te operator is differentiated by te.differentiate.
    """

    def __init__(self, func, out_shape=None, out_dtype=None, func_type="te", bprop=None, reg_info=None):
        del reg_info  # MindSpore's registration info (device/format tables): nothing to register here
        if isinstance(func, HybridKernel) and func_type == "te":
            func_type = "hybrid"  # MindSpore: Custom(kernel_function) is a hybrid operator
        if func_type not in _FUNC_TYPES:
            raise ValueError(f"[Custom] func_type must be 'te', 'pyfunc', 'aot' or 'hybrid', got {func_type!r}")
        if func_type == "hybrid" and not isinstance(func, HybridKernel):
            raise TypeError("[Custom] a hybrid func must be decorated with ops.kernel")
        if func_type == "aot":
            if not isinstance(func, str):
                raise TypeError(f"[Custom] an aot func must be a string 'path:function', got {type(func).__name__}")
        elif not callable(func):
            raise TypeError(f"[Custom] func must be callable, got {type(func).__name__}")
        if func_type in ("pyfunc", "aot") and (out_shape is None or out_dtype is None):
            raise ValueError(f"[Custom] func_type {func_type!r} needs out_shape and out_dtype")
        if bprop is not None and not callable(bprop):
            raise TypeError(f"[Custom] bprop must be callable, got {type(bprop).__name__}")
        self.func, self.func_type, self.bprop = func, func_type, bprop
        self.out_shape, self.out_dtype = out_shape, out_dtype
        self._cache = {}
        self._cell = None
        self.library = self.cached = self.compile_seconds = None
        if func_type == "pyfunc":
            self._host = _te.register_pyfunc(getattr(func, "__name__", "pyfunc"), self._infer, self._run_pyfunc)
        elif func_type == "aot":
            self._host, self.library, self.cached, self.compile_seconds = _te.register_aot(func, self._infer)

    # ---- output signature -------------------------------------------------------------------
    def _expected(self, shapes, dtypes):
        """[(shape, dtype name)] declared for these inputs (None entries: not declared)."""
        shape = self.out_shape(*shapes) if callable(self.out_shape) else self.out_shape
        dtype = self.out_dtype(*dtypes) if callable(self.out_dtype) else self.out_dtype
        many = isinstance(shape, (list, tuple)) and len(shape) > 0 and isinstance(shape[0], (list, tuple))
        shapes_out = [tuple(s) for s in shape] if many else [None if shape is None else tuple(shape)]
        if isinstance(dtype, (list, tuple)):
            dtypes_out = [_dtype_name(d) for d in dtype]
        else:
            dtypes_out = [None if dtype is None else _dtype_name(dtype)] * len(shapes_out)
        if len(dtypes_out) != len(shapes_out):
            raise ValueError(f"[Custom] out_shape declares {len(shapes_out)} outputs, out_dtype {len(dtypes_out)}")
        return list(zip(shapes_out, dtypes_out))

    def _check(self, shape, dtype, want_shape, want_dtype):
        if want_shape is not None and tuple(shape) != want_shape:
            raise ValueError(f"[Custom] func returned shape {tuple(shape)}, but out_shape says {want_shape}")
        if want_dtype is not None and _dtype_name(dtype) != want_dtype:
            raise TypeError(f"[Custom] func returned dtype {_dtype_name(dtype)}, but out_dtype says {want_dtype}")

    def _infer(self, metas):
        """custom_call's inference: [(shape, dtype name)] in -> out, from out_shape/out_dtype."""
        shapes = [tuple(s) for s, _ in metas]
        dtypes = [_core_dtype(d) for _, d in metas]
        return [(list(s), d) for s, d in self._expected(shapes, dtypes)]

    def _run_pyfunc(self, tensors):
        """custom_call's kernel for pyfunc: the user's function on numpy arrays, checked."""
        arrays = [t.asnumpy() for t in tensors]
        res = self.func(*arrays)
        outs = list(res) if isinstance(res, (list, tuple)) else [res]
        want = self._expected([a.shape for a in arrays], [_core_dtype(a.dtype.name) for a in arrays])
        if len(outs) != len(want):
            raise ValueError(f"[Custom] func returned {len(outs)} outputs, out_shape declares {len(want)}")
        checked = []
        for o, (ws, wd) in zip(outs, want):
            o = np.asarray(o)
            self._check(o.shape, o.dtype, ws, wd)
            checked.append(np.ascontiguousarray(o))
        return tuple(checked)

    # ---- te -----------------------------------------------------------------------------------
    def _te_entry(self, shapes, dtypes):
        """(placeholders, output, function, {'id', 'fn'}) for one input signature, built once."""
        key = tuple(zip(shapes, dtypes))
        entry = self._cache.get(key)
        if entry is None:
            xs = [te.placeholder(s, d, f"in{k}") for k, (s, d) in enumerate(key)]
            out = self.func(*xs)
            if not isinstance(out, te.TensorExpr):
                raise TypeError(f"[Custom] a te func must return a te tensor, got {type(out).__name__}")
            (want_shape, want_dtype), = self._expected([x.shape for x in xs], [_core_dtype(d) for d in dtypes])
            self._check(out.shape, out.dtype, want_shape, want_dtype)
            fn = te.build(xs, [out])
            entry = self._cache[key] = (xs, out, fn, {"id": _te.register_function(fn._built)})
        return entry

    def _compiled(self, arrays):
        return self._te_entry(tuple(a.shape for a in arrays), tuple(a.dtype.name for a in arrays))

    # ---- hybrid -------------------------------------------------------------------------------
    def _hybrid_entry(self, shapes, dtypes):
        """The custom_call host function id for one input signature, translated and compiled once."""
        key = tuple(zip(shapes, dtypes))
        entry = self._cache.get(key)
        if entry is None:
            source, symbol, outs = self.func.translate(shapes, dtypes)
            for (s, d), (ws, wd) in zip(outs, self._expected([tuple(x) for x in shapes],
                                                              [_core_dtype(d) for d in dtypes])):
                self._check(s, d, ws, wd)
            metas = [(list(s), d) for s, d in outs]
            fd, path = tempfile.mkstemp(suffix=".cc", prefix=f"mycel_hybrid_{self.func.__name__}_")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(source)
                host, self.library, self.cached, self.compile_seconds = _te.register_aot(
                    f"{path}:{symbol}", lambda _metas: metas)
            finally:
                os.unlink(path)
            entry = self._cache[key] = host
        return entry

    def _hybrid_forward(self, *args):
        fn = _hybrid_kernel_for_static_shapes(self, [a.shape for a in args], [a.dtype for a in args])
        return _functional.custom_call(args, fn=fn)

    def _run_hybrid_eagerly(self, tensors):
        try:
            return self._hybrid_forward(*tensors)
        except RuntimeError as e:
            m = re.search(r"'mycel_hybrid_\w+' in .* returned (\d+)", str(e))
            if not m:
                raise
            _, filename, _ = self.func._tree()
            raise IndexError(f"hybrid kernel '{self.func.__name__}': an index out of range at line "
                             f"{m.group(1)} of {filename}") from None

    # ---- the forward, parsed by graph mode and run eagerly --------------------------------------
    def _te_forward(self, *args):
        kernel = _te_kernel_for_static_shapes(self, [a.shape for a in args], [a.dtype for a in args])
        return _functional.te_call(args, kernel=kernel)

    @property
    def host_fn(self):
        """The host function id of a "pyfunc" or "aot" operator, the `fn` attribute of the
        registry op ops.custom_call that runs it; None for a "te" operator."""
        return getattr(self, "_host", None)

    def _host_forward(self, *args):
        return _functional.custom_call(args, fn=self._host)

    def _forward(self):
        if self.func_type == "hybrid":
            return self._hybrid_forward
        return self._te_forward if self.func_type == "te" else self._host_forward

    @property
    def _mycel_graph_impl(self):
        """What graph mode compiles for a call: the registry op, or the Cell carrying bprop."""
        return self._forward() if self.bprop is None else self._bprop_cell()

    def _bprop_cell(self):
        if self._cell is None:
            self._cell = _make_bprop_cell(self)
        return self._cell

    def __call__(self, *args):
        from mycel.common.tensor import Tensor
        tensors = tuple(a if isinstance(a, Tensor) else Tensor(np.ascontiguousarray(np.asarray(a))) for a in args)
        if self.bprop is not None:
            return self._bprop_cell()(*tensors)
        if self.func_type == "hybrid":
            return self._run_hybrid_eagerly(tensors)
        return self._forward()(*tensors)

    def bprop_call(self, *args_and_dout):
        """Adjoints of the inputs given (*inputs, dout): the user's bprop(*inputs, out, dout) if
        given, else the te.differentiate gradient of the te func, compiled once per signature."""
        from mycel.common.tensor import Tensor
        *args, dout = args_and_dout
        if self.bprop is not None:
            tensors = [a if isinstance(a, Tensor) else Tensor(np.ascontiguousarray(a)) for a in args]
            out = self._forward()(*tensors)
            d = dout if isinstance(dout, Tensor) else Tensor(np.ascontiguousarray(dout))
            res = self.bprop(*tensors, out, d)
            return tuple(res) if isinstance(res, (list, tuple)) else (res,)
        if self.func_type != "te":
            raise NotImplementedError(f"[Custom] a {self.func_type} op needs a bprop to be differentiated")
        arrays = [np.ascontiguousarray(a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)) for a in args]
        xs, out, _, grads = self._compiled(arrays)
        if "fn" not in grads:
            head = te.placeholder(out.shape, out.dtype, "dout")
            adj = te.differentiate(out, xs, head)
            grads["fn"] = te.build(xs + [head], adj)
        d = dout.asnumpy() if hasattr(dout, "asnumpy") else np.asarray(dout)
        res = grads["fn"](*arrays, np.ascontiguousarray(d))
        return res if isinstance(res, tuple) else (res,)


def _make_bprop_cell(op):
    """A Cell running op's forward whose bprop is the user's: its arity is the bprop's (inputs,
    out, dout), so graph mode's parser binds it like any Cell with a custom bprop. The source is
    generated (and put in linecache, where the parser reads it) for that arity."""
    from mycel.nn.cell import Cell
    try:
        params = inspect.signature(op.bprop).parameters.values()
    except (TypeError, ValueError) as e:
        raise TypeError(f"[Custom] cannot read bprop's signature: {e}") from None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TypeError("[Custom] bprop must take the inputs, out and dout as named parameters, not *args")
    n = len(params) - 2
    if n < 1:
        raise TypeError(f"[Custom] bprop must take (*inputs, out, dout), it takes {len(params)} arguments")
    names = ", ".join(f"x{i}" for i in range(n))
    source = (f"class CustomWithBprop(Cell):\n"
              f"    def __init__(self, forward, bprop):\n"
              f"        super().__init__()\n"
              f"        self.forward_fn = forward\n"
              f"        self.bprop_fn = bprop\n\n"
              f"    def construct(self, {names}):\n"
              f"        return self.forward_fn({names})\n\n"
              f"    def bprop(self, {names}, out, dout):\n"
              f"        return self.bprop_fn({names}, out, dout)\n")
    filename = f"<mycel ops.Custom bprop cell #{next(_cell_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"Cell": Cell}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own generated source)
    return namespace["CustomWithBprop"](op._forward(), op.bprop)
