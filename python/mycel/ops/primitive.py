"""MindSpore's `ops.primitive` path: the Primitive base class, PrimitiveWithInfer/WithCheck for
primitives defined in Python, prim_attr_register (constructor arguments become attributes) and
constexpr (a function run on compile-time values while a graph is compiled)."""
import functools
import inspect

from mycel.ops.operations import Primitive


class PrimitiveWithCheck(Primitive):
    """A Python primitive with `check_shape`/`check_dtype` hooks run before it is called."""

    def __call__(self, *args):
        shapes = [getattr(a, "shape", None) for a in args]
        dtypes = [getattr(a, "dtype", None) for a in args]
        if hasattr(self, "check_shape"):
            self.check_shape(*shapes)
        if hasattr(self, "check_dtype"):
            self.check_dtype(*dtypes)
        return super().__call__(*args)


class PrimitiveWithInfer(Primitive):
    """A Python primitive with infer_shape/infer_dtype/infer_value hooks. Calling it evaluates
    infer_value on the inputs (MindSpore folds such primitives to that constant); a primitive
    without a value has no kernel here and says so."""

    def __call__(self, *args):
        infer_value = getattr(self, "infer_value", None)
        value = infer_value(*args) if infer_value is not None else None
        if value is not None:
            return value
        return super().__call__(*args)

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
