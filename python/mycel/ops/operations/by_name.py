"""A user's primitive with no Python implementation runs the kernel registered under its name,
as in MindSpore (a test's `class Shift(PrimitiveWithInfer)` with only __init__ and infer hooks
runs the backend's Shift). The kernel is P's class of that name, configured with the
primitive's attributes; eager calls and graph mode (Primitive._mycel_graph_impl) both use it."""
import inspect

# Attributes every user primitive may carry that configure no kernel.
_BOOKKEEPING = {"input_names", "output_names", "primitive_target"}
# Where the base classes' own __call__ live: a __call__ defined elsewhere is an implementation.
_BASE_MODULES = ("mycel.ops.operations", "mycel.ops.primitive")


def has_python_impl(prim):
    """Whether a user's primitive computes in Python: its own __call__, construct, bprop or
    infer_value (a constant result), or an implementation registered with vm_impl_registry."""
    cls = type(prim)
    if getattr(cls.__call__, "__module__", None) not in _BASE_MODULES:
        return True
    if any(hasattr(cls, m) for m in ("construct", "bprop", "infer_value")):
        return True
    from mycel.ops.vm_impl_registry import get_vm_impl_fn
    return get_vm_impl_fn(prim) is not None


def kernel_of(prim):
    """P's primitive named prim.name, configured with prim's attributes (those its constructor
    takes); NotImplementedError naming the primitive when no kernel has that name."""
    from mycel.ops import operations as P
    cls = getattr(P, prim.name, None) if isinstance(prim.name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, P.Primitive)) or isinstance(prim, cls):
        raise NotImplementedError(
            f"primitive '{prim.name}' has no kernel: no kernel is registered under the name "
            f"'{prim.name}' and the primitive has no Python implementation; define __call__ (or "
            f"register one with vm_impl_registry, or infer_value for a constant result), or name "
            f"it after a registry op (a class of ops.operations, e.g. 'Shift')")
    attrs = {k: v for k, v in prim.attrs.items() if k not in _BOOKKEEPING}
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        attrs = {k: v for k, v in attrs.items() if k in params}
    try:
        return cls(**attrs)
    except (TypeError, ValueError) as e:
        raise type(e)(f"primitive '{prim.name}' runs the kernel registered under its name with "
                      f"its attributes {attrs}: {e}") from None
