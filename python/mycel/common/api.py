"""Graph mode from Python: @jit (alias ms_function) stages one function or method; a Cell called
in GRAPH_MODE compiles its construct on first call and reuses the Program after (one Program per
input signature; set_inputs with None dims makes one Program serve every size of those dims)."""
import functools
import inspect
import itertools
import linecache

from mycel import _mycel
from mycel.common.symbol import check_symbols, has_symbols
from mycel.common.records import jit_class  # noqa: F401  (MindSpore: mindspore.common.api.jit_class)


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
        # A Cell's construct with keyword-only parameters or **kwargs: _Compiled._keyword_call.
        self.takes_keywords = bool(self._keyword_only) and hasattr(obj, "construct")

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


def _with_ranks(spec, args):
    """The signature with each dynamic-rank entry (Tensor(dtype=...), MindSpore's shape [-2])
    made an entry of the argument's rank with every dim dynamic: one compiled Program per rank."""
    if not any(getattr(s, "_dynamic_rank", False) for s in spec):
        return spec
    out = []
    for i, (s, a) in enumerate(zip(spec, args)):
        if getattr(s, "_dynamic_rank", False):
            if not isinstance(a, _mycel.Tensor):
                raise TypeError(f"graph mode: set_inputs gave a dynamic-rank Tensor, the call passes {type(a).__name__}")
            if a.dtype != s.dtype:
                raise TypeError(f"graph mode: input {i} has dtype {a.dtype:}, set_inputs declared {s.dtype:}")
            s = _mycel.Tensor(shape=[None] * a.ndim, dtype=s.dtype) if a.ndim else _mycel.Tensor(shape=[], dtype=s.dtype)
        out.append(s)
    return tuple(out) + tuple(spec[len(out):])


class _Compiled:
    """The compiled form of one function, bound method or Cell."""

    def __init__(self, obj, input_spec=None):
        self._obj = obj
        self._binder = ArgBinder(obj)
        # A construct taking keywords is compiled inside an entry per keyword set
        # (_keyword_call), never as itself.
        self._graph = None if self._binder.takes_keywords else _mycel.graph.compile(obj)
        self._input_spec = input_spec
        self._symbolic = has_symbols(input_spec)  # Symbol dims: sizes checked at each call

    def bind(self, args, kwargs):
        """The positional arguments of a call (see ArgBinder)."""
        return self._binder.bind(args, kwargs)

    def __call__(self, *args, **kwargs):
        if self._binder.takes_keywords:
            return self._keyword_call(args, kwargs)
        return self._run(self.bind(args, kwargs))

    def _run(self, args):
        if self._input_spec is not None:
            if self._symbolic:
                check_symbols(self._input_spec, args)
            return self._graph.run_with_signature(_with_ranks(self._input_spec, args), *args)
        return self._graph(*args)

    def _keyword_call(self, args, kwargs):
        # construct(self, x, *, k=..., **kw): each set of keyword names runs an entry of its own
        # that passes them on by name (_keyword_entry), compiled with this Cell inside it.
        fn = getattr(self._obj, "construct", self._obj)
        positional, keys, values = _bind_keywords(fn, args, kwargs, type(self._obj).__name__)
        entries = self.__dict__.setdefault("_keyword_entries", {})
        key = (len(positional), keys)
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = _JitFunction(_keyword_entry(fn, len(positional), keys), self._input_spec)
        return entry(*positional, *values)

    def run_sink(self, pipeline, steps, until_epoch_end=False):
        """Dataset sink mode: up to `steps` runs of the compiled step, each on the next row of
        the running dataset `pipeline`, in one C++ loop (no Python per step); with
        until_epoch_end, stops at the pipeline's next epoch end. Returns (the last step's
        outputs, or None when no step ran; steps run)."""
        return self._graph.run_sink(pipeline, steps, self._input_spec, until_epoch_end)

    @property
    def graph(self):
        """The C++ CompiledGraph (IR dumps, statistics)."""
        if self._graph is None:
            raise TypeError(f"{type(self._obj).__name__}.construct takes keyword parameters, so it is compiled "
                            "inside an entry per set of keywords it is called with: call it")
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
        if self._keyword_params():
            return self._keyword_call(args, kwargs)
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

    def _keyword_params(self):
        """Whether fn has keyword-only parameters or **kwargs (cached)."""
        if not hasattr(self, "_has_keywords"):
            try:
                params = inspect.signature(self._fn).parameters.values()
            except (TypeError, ValueError):
                params = ()
            self._has_keywords = any(p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
                                     for p in params)
        return self._has_keywords

    def _keyword_call(self, args, kwargs):
        # A compiled entry takes positional inputs only, so each set of keyword names gets an
        # entry function of its own that passes them on by name: fn(a0, .., **{"k": k0, ..}).
        positional, keys, values = _bind_keywords(self._fn, args, kwargs, "jit: " + getattr(self._fn, "__name__", "fn"))
        key = (len(positional), keys)
        entries = self.__dict__.setdefault("_keyword_entries", {})
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = _JitFunction(_keyword_entry(self._fn, len(positional), keys), self._input_signature)
        return entry(*positional, *values)

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


_entry_counter = itertools.count()


def _bind_keywords(fn, args, kwargs, who):
    """fn(*args, **kwargs) bound as Python binds it, defaults filled in: (the positional
    arguments, the names of those passed by keyword, their values)."""
    sig = inspect.signature(fn)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{who}{sig}: {e}") from None
    bound.apply_defaults()
    return bound.args, tuple(bound.kwargs), tuple(bound.kwargs.values())


def _keyword_entry(fn, num_positional, keys):
    """A function of num_positional + len(keys) positional inputs calling fn with the last ones
    by keyword. Its source goes to linecache, where graph mode reads it."""
    params = [f"a{i}" for i in range(num_positional)] + [f"k{i}" for i in range(len(keys))]
    passed = ", ".join(f"{k!r}: k{i}" for i, k in enumerate(keys))
    name = getattr(fn, "__name__", "fn")
    call = ", ".join([f"a{i}" for i in range(num_positional)] + [f"**{{{passed}}}"])
    source = f"def {name}_kw({', '.join(params)}):\n    return fn({call})\n"
    filename = f"<mycel jit keywords {name} #{next(_entry_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"fn": fn}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own generated source)
    return namespace[f"{name}_kw"]


def jit(fn=None, *, input_signature=None, jit_config=None, mode="PSJit", **options):
    """Compiles `fn` (a function or method) to a graph on its first call: `@mycel.jit`.
    jit_config (a JitConfig or dict) and MindSpore's mode='PSJit' are validated; Mycel has one
    compiled path (see common/jit_config.py)."""
    if jit_config is not None:
        from mycel.common.jit_config import check_jit_config
        check_jit_config("jit", jit_config)
    if mode not in ("PSJit", "PIJit"):
        raise ValueError(f"jit: mode must be 'PSJit' or 'PIJit', got {mode!r}")
    if options:
        raise TypeError(f"jit: unexpected keyword argument(s) {sorted(options)}")
    if fn is None:
        return lambda f: _JitFunction(f, input_signature)
    return _JitFunction(fn, input_signature)


ms_function = jit


class _PynativeExecutor:
    """MindSpore's `mindspore.common.api._pynative_executor`, as its tests use it: `sync()` waits
    for the eager kernels launched so far. Mycel's eager ops run synchronously, so there is
    nothing to wait for."""

    def sync(self):
        return None


_pynative_executor = _PynativeExecutor()
