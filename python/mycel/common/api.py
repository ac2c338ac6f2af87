"""Graph mode from Python: @jit (alias ms_function) stages one function or method; a Cell called
in GRAPH_MODE compiles its construct on first call and reuses the Program after (one Program per
input signature; set_inputs with None dims makes one Program serve every size of those dims)."""
import functools
import inspect

from mycel import _mycel
from mycel.common import error_frames


class ArgBinder:
    """Binds a call's arguments to the positional parameters of what graph mode compiles (a
    Cell's construct, else the function itself), as Python does: keywords placed, defaults
    filled in (a default None or scalar then specializes the graph like a passed one)."""

    def __init__(self, obj):
        self._obj = obj
        fn = getattr(obj, "construct", getattr(obj, "_mycel_graph_function", obj))
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError):  # builtins and the like: arguments are passed as given
            self._signature = None
        params = self._signature.parameters.values() if self._signature else ()
        kinds = [p.kind for p in params]
        # Calls with exactly the positional parameters (or more, into *args) need no binding.
        self._num_positional = sum(k in (inspect.Parameter.POSITIONAL_ONLY,
                                         inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)
        self._has_varargs = inspect.Parameter.VAR_POSITIONAL in kinds
        self._keyword_only = [p.name for p in params if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                                   inspect.Parameter.VAR_KEYWORD)]

    def bind(self, args, kwargs):
        """The positional arguments of the call f(*args, **kwargs)."""
        n = len(args)
        if self._signature is None or (not kwargs and (n == self._num_positional or
                                                       (self._has_varargs and n > self._num_positional))):
            return args
        name = getattr(self._obj, "__name__", type(self._obj).__name__)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"graph mode: {name}{self._signature}: {e}") from None
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(f"graph mode: {name}{self._signature}: keyword-only parameters and "
                            f"**kwargs ({', '.join(self._keyword_only)}) are not supported on the "
                            "compiled function itself; make them positional, or pass a dict as one "
                            "positional argument")
        return bound.args


class _Compiled:
    """The compiled form of one function, bound method or Cell."""

    def __init__(self, obj, input_spec=None):
        self._obj = obj
        try:
            self._graph = _mycel.graph.compile(obj)
        except Exception as e:  # a parse error in a called Cell: name the Cells on the way
            error_frames.annotate(e, obj)
            raise
        self._input_spec = input_spec
        self._binder = ArgBinder(obj)

    def bind(self, args, kwargs):
        """The positional arguments of a call (see ArgBinder)."""
        return self._binder.bind(args, kwargs)

    def __call__(self, *args, **kwargs):
        args = self.bind(args, kwargs)
        try:
            if self._input_spec is not None:
                return self._graph.run_with_signature(self._input_spec, *args)
            return self._graph(*args)
        except Exception as e:  # name the Cells on the way to the error (error_frames.py)
            error_frames.annotate(e, self._obj)
            raise

    def run_sink(self, pipeline, steps, until_epoch_end=False):
        """Dataset sink mode: up to `steps` runs of the compiled step, each on the next row of
        the running dataset `pipeline`, in one C++ loop (no Python per step); with
        until_epoch_end, stops at the pipeline's next epoch end. Returns (the last step's
        outputs, or None when no step ran; steps run)."""
        try:
            return self._graph.run_sink(pipeline, steps, self._input_spec, until_epoch_end)
        except Exception as e:
            error_frames.annotate(e, self._obj)
            raise

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

    def __call__(self, *args, **kwargs):
        if self._compiled is None:
            self._compiled = _Compiled(self._fn, self._input_signature)
        args = self._compiled.bind(args, kwargs)
        out = self._compiled(*args)
        if _mycel.pynative.recording():
            # Inside an eager grad: one call node of this function's graph, differentiated through.
            if self._parsed is None:
                self._parsed = _mycel.frontend.parse(self._fn)
            _mycel.pynative.record_jit_call(self._parsed, tuple(args), out)
        return out

    @property
    def _mycel_graph_function(self):
        """What graph mode parses in place of this object (called from compiled code, or taken
        by mycel.grad): the plain function or bound method."""
        return self._fn

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
