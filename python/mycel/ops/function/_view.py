"""The lookup every module of mycel.ops.function shares: a name not defined in the module is
mycel.ops's (PEP 562 module __getattr__), so the topic modules need no name lists to keep in
sync with the registry."""


def view_getattr(name):
    if name.startswith("__"):
        raise AttributeError(name)
    from mycel import ops
    try:
        return getattr(ops, name)
    except AttributeError:
        raise AttributeError(f"module 'mycel.ops.function' has no attribute '{name}' (mycel.ops has no "
                             f"function of that name)") from None
