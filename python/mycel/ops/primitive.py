"""MindSpore's `ops.primitive` path: the Primitive base class, PrimitiveWithInfer/WithCheck for
primitives defined in Python, prim_attr_register (constructor arguments become attributes) and
constexpr (a function run on compile-time values while a graph is compiled)."""
import functools
import inspect

from mycel.ops.operations import Primitive


class PrimitiveWithCheck(Primitive):
    """A Python primitive with `check_shape`/`check_dtype` hooks run before it is called; a
    user's subclass then runs its implementation registered with vm_impl_registry (eagerly)."""

    def __call__(self, *args):
        shapes = [getattr(a, "shape", None) for a in args]
        dtypes = [getattr(a, "dtype", None) for a in args]
        if hasattr(self, "check_shape"):
            self.check_shape(*shapes)
        if hasattr(self, "check_dtype"):
            self.check_dtype(*dtypes)
        from mycel.ops.vm_impl_registry import get_vm_impl_fn
        impl = get_vm_impl_fn(self) if self._bound is None else None
        if impl is not None:  # eagerly, the registered implementation (no output signature here)
            return impl(*args)
        return super().__call__(*args)


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
        if op is None:
            raise AttributeError("no registered implementation")
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


def _custom_of(prim):
    """ops.Custom(pyfunc) over prim's vm_impl, with prim's infer hooks and registered bprop."""
    import numpy as np

    from mycel.common.tensor import Tensor
    from mycel.ops._grad.grad_base import bprop_getters
    from mycel.ops.custom import Custom
    from mycel.ops.vm_impl_registry import get_vm_impl_fn
    impl = get_vm_impl_fn(prim)
    if impl is None:
        return None
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

    def out_shape(*shapes):
        return prim.infer_shape(*[list(s) for s in shapes])

    getter = bprop_getters.get_for(prim)
    return Custom(run, out_shape, prim.infer_dtype, func_type="pyfunc",
                  bprop=getter(prim) if getter is not None else None)


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
