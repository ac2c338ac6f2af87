"""MindSpore's `ops.primitive` path: the Primitive base class, PrimitiveWithInfer/WithCheck for
primitives defined in Python, prim_attr_register (constructor arguments become attributes) and
constexpr (a function run on compile-time values while a graph is compiled)."""
import functools
import inspect

from mycel.ops.operations import Primitive


class PrimitiveWithCheck(Primitive):
    """A Python primitive with `check_shape`/`check_dtype` hooks run before it is called. A user's
    subclass with an implementation registered with vm_impl_registry runs it, eagerly and
    compiled into graph mode as a host operator (ops.Custom "pyfunc"); graph mode's output
    signature comes from infer_shape/infer_dtype where the subclass defines them, else from a
    trial run of the implementation on ones of the input shapes and dtypes (once per signature,
    after the checks), and gradients from a bprop registered with bprop_getters."""

    def __call__(self, *args):
        shapes = [getattr(a, "shape", None) for a in args]
        dtypes = [getattr(a, "dtype", None) for a in args]
        _run_checks(self, shapes, dtypes)
        from mycel.common.tensor import Tensor
        from mycel.ops.vm_impl_registry import get_vm_impl_fn
        impl = get_vm_impl_fn(self) if self._bound is None else None
        if impl is not None:
            # Tensors go through the host operator, so a registered bprop differentiates the
            # call eagerly too; other arguments reach the implementation itself.
            if all(isinstance(a, Tensor) for a in args):
                return self._mycel_custom()(*args)
            return impl(*args)
        return super().__call__(*args)

    def _mycel_custom(self):
        """The ops.Custom running the registered implementation (built once), or None."""
        op = self.__dict__.get("_mycel_custom_op")
        if op is None:
            op = _custom_of(self, checked=True)
            if op is not None:
                self.__dict__["_mycel_custom_op"] = op
        return op

    @property
    def _mycel_graph_impl(self):
        """What graph mode compiles for a call: the registered implementation as a host op."""
        op = self._mycel_custom()
        if op is None:  # no implementation: the kernel registered under its name, if any
            return Primitive._mycel_graph_impl.fget(self)
        return op._mycel_graph_impl


def _run_checks(prim, shapes, dtypes):
    """MindSpore's __check__: check_shape(*shapes) and check_dtype(*dtypes) where defined."""
    if hasattr(prim, "check_shape"):
        prim.check_shape(*shapes)
    if hasattr(prim, "check_dtype"):
        prim.check_dtype(*dtypes)


class PrimitiveWithInfer(Primitive):
    """A Python primitive with infer_shape/infer_dtype/infer_value hooks. Calling it evaluates
    infer_value on the inputs first (MindSpore folds such primitives to that constant); otherwise
    the implementation registered with vm_impl_registry runs as a host operator (ops.Custom
    "pyfunc") whose output shape and dtype are infer_shape's and infer_dtype's, differentiable
    through a bprop registered with bprop_getters, in both modes. Without either it says so."""

    def __call__(self, *args):
        infer_value = getattr(self, "infer_value", None)
        value = infer_value(*args) if infer_value is not None else None
        if value is not None:
            return value
        op = self._mycel_custom()
        if op is not None:
            return op(*args)
        return super().__call__(*args)

    def _mycel_custom(self):
        """The ops.Custom running this primitive's registered implementation (built once), or None."""
        op = self.__dict__.get("_mycel_custom_op")
        if op is None:
            op = _custom_of(self)
            if op is not None:
                self.__dict__["_mycel_custom_op"] = op
        return op

    @property
    def _mycel_graph_impl(self):
        """What graph mode compiles for a call: the registered implementation as a host op."""
        op = self._mycel_custom()
        if op is None:  # no implementation: the kernel registered under its name, if any
            return Primitive._mycel_graph_impl.fget(self)
        return op._mycel_graph_impl

    def __infer__(self, *args):
        """{'shape', 'dtype', 'value'} from the hooks, given dicts with those keys (MindSpore's form)."""
        shapes = [a["shape"] for a in args]
        dtypes = [a["dtype"] for a in args]
        out = {"shape": self.infer_shape(*shapes) if hasattr(self, "infer_shape") else None,
               "dtype": self.infer_dtype(*dtypes) if hasattr(self, "infer_dtype") else None,
               "value": None}
        if hasattr(self, "infer_value"):
            out["value"] = self.infer_value(*[a.get("value") for a in args])
        return out


def _custom_of(prim, checked=False):
    """ops.Custom(pyfunc) over prim's vm_impl, with prim's registered bprop and an output
    signature from its infer hooks; for a PrimitiveWithCheck (`checked`) the checks run first,
    and without both hooks the signature is a trial run's (see _TrialSignature)."""
    import numpy as np

    from mycel.common.tensor import Tensor
    from mycel.ops._grad.grad_base import bprop_getters
    from mycel.ops.custom import Custom
    from mycel.ops.vm_impl_registry import get_vm_impl_fn
    impl = get_vm_impl_fn(prim)
    if impl is None:
        return None
    hooks = all(hasattr(prim, h) for h in ("infer_shape", "infer_dtype"))
    if not checked and not hooks:
        for hook in ("infer_shape", "infer_dtype"):
            if not hasattr(prim, hook):
                raise TypeError(f"primitive '{prim.name}': a registered implementation needs {hook} "
                                f"(the output signature graph mode compiles against)")

    def run(*arrays):
        res = impl(*[Tensor(np.ascontiguousarray(a)) for a in arrays])
        items = res if isinstance(res, (list, tuple)) else (res,)
        outs = tuple(o.asnumpy() if isinstance(o, Tensor) else np.asarray(o) for o in items)
        return outs if isinstance(res, (list, tuple)) else outs[0]
    run.__name__ = prim.name

    getter = bprop_getters.get_for(prim)
    bprop = getter(prim) if getter is not None else None
    if not checked:
        def out_shape(*shapes):
            return prim.infer_shape(*[list(s) for s in shapes])
        return Custom(run, out_shape, prim.infer_dtype, func_type="pyfunc", bprop=bprop)
    return _CheckedCustom(prim, run, hooks, bprop)


def _checked_custom_class():
    from mycel.common import dtype as mstype
    from mycel.ops.custom import Custom

    class CheckedCustom(Custom):
        """Custom whose output signature runs prim's checks, then its infer hooks or a trial
        run of the implementation on ones (cached per input signature)."""

        def __init__(self, prim, run, hooks, bprop):
            super().__init__(run, lambda *s: None, lambda *d: None, func_type="pyfunc", bprop=bprop)
            self._prim, self._hooks, self._trials = prim, hooks, {}

        def _expected(self, shapes, dtypes):
            import numpy as np

            from mycel.ops.custom import _dtype_name
            prim = self._prim
            key = (tuple(tuple(s) for s in shapes), tuple(_dtype_name(d) for d in dtypes))
            if key in self._trials:
                return self._trials[key]
            _run_checks(prim, [list(s) for s in shapes], list(dtypes))
            if self._hooks:
                sig = Custom(self.func, lambda *s: prim.infer_shape(*[list(x) for x in s]),
                             prim.infer_dtype, func_type="pyfunc")._expected(shapes, dtypes)
            else:
                ones = [np.ones(s, dtype=mstype.dtype_to_nptype(d)) for s, d in zip(shapes, dtypes)]
                res = self.func(*ones)
                items = res if isinstance(res, tuple) else (res,)
                sig = [(tuple(np.shape(o)), _dtype_name(np.asarray(o).dtype.name)) for o in items]
            self._trials[key] = sig
            return sig

    return CheckedCustom


def _CheckedCustom(prim, run, hooks, bprop):
    global _CHECKED_CUSTOM
    if _CHECKED_CUSTOM is None:
        _CHECKED_CUSTOM = _checked_custom_class()
    return _CHECKED_CUSTOM(prim, run, hooks, bprop)


_CHECKED_CUSTOM = None


def prim_attr_register(fn):
    """Decorates a primitive's __init__: each argument (defaults filled in) becomes an attribute
    (`self.<name>` and `self.attrs[name]`), as MindSpore's prim_attr_register does."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def init(self, *args, **kwargs):
        if "_bound" not in self.__dict__:
            Primitive.__init__(self, type(self).__name__)
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            if sig.parameters[name].kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            setattr(self, name, value)
            self.add_prim_attr(name, value)
        fn(self, *args, **kwargs)

    return init


class _Constexpr:
    """A function evaluated in Python: eagerly at each call, and in graph mode once while the graph
    is specialized (the frontend leaves calls of non-function objects to compile time), so its
    arguments must be compile-time values there (shapes, dtypes, Python numbers)."""

    def __init__(self, fn):
        self._fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"constexpr<{self._fn.__qualname__}>"


def constexpr(fn=None, get_instance=True, name=None, reuse_result=True, check=True):
    """`@constexpr` or `@constexpr(...)`: marks a function of compile-time values (MindSpore's
    constexpr; the other arguments are accepted for compatibility and change nothing here)."""
    del get_instance, name, reuse_result, check
    if fn is not None:
        return _Constexpr(fn)
    return _Constexpr


__all__ = ["Primitive", "PrimitiveWithInfer", "PrimitiveWithCheck", "prim_attr_register", "constexpr"]
