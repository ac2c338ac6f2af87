"""MindSpore's vm_impl registry: Python implementations of primitives defined in Python
(`@vm_impl_registry.register(MyPrim)` on a getter `fn(self)` that returns `impl(*inputs)`).
A PrimitiveWithInfer subclass with an implementation here runs it, eagerly and compiled into
graph mode, with its infer_shape/infer_dtype as the output signature (ops/primitive.py)."""
from collections import UserDict


class Registry(UserDict):
    """Getters keyed by primitive name (a class registers under its __name__)."""

    def register(self, prim):
        """Decorator: registers a getter for prim (a primitive class or its name)."""
        key = prim if isinstance(prim, str) else prim.__name__

        def deco(fn):
            self[key] = fn
            return fn
        return deco

    def get_for(self, prim):
        """The getter registered for the primitive instance prim (by its class, then its name)."""
        for cls in type(prim).__mro__:
            if cls.__name__ in self.data:
                return self.data[cls.__name__]
        return self.data.get(getattr(prim, "name", None))


vm_impl_registry = Registry()


def get_vm_impl_fn(prim):
    """The implementation function of prim, or None."""
    getter = vm_impl_registry.get_for(prim)
    return getter(prim) if getter is not None else None
