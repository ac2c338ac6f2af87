"""Graph mode from Python: @jit (alias ms_function) stages one function or method; a Cell called
in GRAPH_MODE compiles its construct on first call and reuses the Program after (one Program per
input signature; set_inputs with None dims makes one Program serve every size of those dims)."""
import functools

from mycel import _mycel


class _Compiled:
    """The compiled form of one function, bound method or Cell."""

    def __init__(self, obj, input_spec=None):
        self._obj = obj
        self._graph = _mycel.graph.compile(obj)
        self._input_spec = input_spec

    def __call__(self, *args):
        if self._input_spec is not None:
            return self._graph.run_with_signature(self._input_spec, *args)
        return self._graph(*args)

    @property
    def graph(self):
        """The C++ CompiledGraph (IR dumps, statistics)."""
        return self._graph


class _JitFunction:
    """What @jit returns: calls compile on first use, per bound instance for methods."""

    def __init__(self, fn, input_signature=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._input_signature = input_signature
        self._compiled = None
        self._parsed = None  # the IR a PyNative gradient recording calls

    def __call__(self, *args):
        if self._compiled is None:
            self._compiled = _Compiled(self._fn, self._input_signature)
        out = self._compiled(*args)
        if _mycel.pynative.recording():
            # Inside an eager grad: one call node of this function's graph, differentiated through.
            if self._parsed is None:
                self._parsed = _mycel.frontend.parse(self._fn)
            _mycel.pynative.record_jit_call(self._parsed, tuple(args), out)
        return out

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        cache = obj.__dict__.setdefault("_mycel_jit_methods", {})
        bound = cache.get(id(self))
        if bound is None:
            bound = cache[id(self)] = _JitFunction(self._fn.__get__(obj, objtype), self._input_signature)
        return bound


def jit(fn=None, *, input_signature=None):
    """Compiles `fn` (a function or method) to a graph on its first call: `@mycel.jit`."""
    if fn is None:
        return lambda f: _JitFunction(f, input_signature)
    return _JitFunction(fn, input_signature)


ms_function = jit
