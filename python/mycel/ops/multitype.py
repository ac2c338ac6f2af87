"""MindSpore's MultitypeFuncGraph (one name, one function per registered type signature) and
HyperMap/Map (apply a function over the leaves of nested tuples and lists), in both modes.

Eagerly both are plain Python. In graph mode a MultitypeFuncGraph is parsed as a generated
dispatcher, one `isinstance` test per registered signature, which analysis decides while it
specializes (a tensor's, a scalar's or a tuple's type is known then), so only the matching
function is compiled. The dispatcher's source lives in linecache, where the frontend reads it."""
import itertools
import linecache

from mycel import _mycel

# MindSpore's type names in register(...) and the Python types they stand for.
_TYPE_NAMES = {"Tensor": _mycel.Tensor, "Number": (int, float), "Int": int, "Float": float,
               "Bool": bool, "Tuple": tuple, "List": list, "String": str, "Dictionary": dict,
               "None": type(None), "Function": object}
_counter = itertools.count()


def _type_of(name):
    if isinstance(name, type) or (isinstance(name, tuple) and all(isinstance(t, type) for t in name)):
        return name
    if name not in _TYPE_NAMES:
        raise TypeError(f"MultitypeFuncGraph.register: unknown type name {name!r}; "
                        f"expected one of {sorted(_TYPE_NAMES)} or a Python type")
    return _TYPE_NAMES[name]


def _matches(types, args):
    return len(types) == len(args) and all(isinstance(a, t) for a, t in zip(args, types))


class MultitypeFuncGraph:
    """`f = MultitypeFuncGraph("name")`, then `@f.register("Tensor", "Number")` on each
    implementation; `f(x, 1.0)` calls the first implementation whose types match."""

    def __init__(self, name, read_value=False, doc_url=""):
        del read_value, doc_url
        self.name = name
        self.entries = []  # (types, fn), in registration order
        self._dispatcher = None

    def register(self, *type_names):
        types = tuple(_type_of(t) for t in type_names)

        def deco(fn):
            self.entries.append((types, fn))
            self._dispatcher = None
            return fn
        return deco

    def __call__(self, *args):
        for types, fn in self.entries:
            if _matches(types, args):
                return fn(*args)
        raise TypeError(self._no_match(args))

    def _no_match(self, args):
        given = ", ".join(type(a).__name__ for a in args)
        known = "; ".join("(" + ", ".join(getattr(t, "__name__", str(t)) for t in types) + ")"
                          for types, _ in self.entries)
        return f"MultitypeFuncGraph '{self.name}': no registered function takes ({given}); registered: {known}"

    @property
    def _mycel_graph_function(self):
        """The dispatcher graph mode parses (see the module's doc)."""
        if self._dispatcher is None:
            self._dispatcher = self._make_dispatcher()
        return self._dispatcher

    def _make_dispatcher(self):
        # Fixed parameters when every signature has the same arity: a function value called
        # through a variable (HyperMap, F.partial) gets its arguments as they are, unpacked.
        arities = {len(types) for types, _ in self.entries}
        namespace = {}
        if len(arities) == 1:
            (arity,) = arities
            params = [f"a{j}" for j in range(arity)]
            lines = [f"def dispatch({', '.join(params)}):", "    args = (" + "".join(p + ", " for p in params) + ")",
                     "    if True:"]
        else:
            lines = ["def dispatch(*args):"]
        by_arity = {}
        for i, (types, fn) in enumerate(self.entries):
            by_arity.setdefault(len(types), []).append(i)
            namespace[f"_f{i}"] = fn
            for j, t in enumerate(types):  # one global per type: a tuple of types is opaque there
                for k, one in enumerate(t if isinstance(t, tuple) else (t,)):
                    namespace[f"_t{i}_{j}_{k}"] = one
        for arity, indices in by_arity.items():
            if len(arities) > 1:
                lines.append(f"    if len(args) == {arity}:")
            for i in indices:
                test = " and ".join(
                    "(" + " or ".join(f"isinstance(args[{j}], _t{i}_{j}_{k})"
                                      for k in range(len(t) if isinstance(t, tuple) else 1)) + ")"
                    for j, t in enumerate(self.entries[i][0])) or "True"
                lines.append(f"        if {test}:")
                lines.append(f"            return _f{i}(*args)")
        known = "; ".join("(" + ", ".join(getattr(t, "__name__", str(t)) for t in types) + ")"
                          for types, _ in self.entries)
        message = f"MultitypeFuncGraph '{self.name}': no registered function takes these argument types; registered: {known}"
        lines.append(f"    raise TypeError({message!r})")
        source = "\n".join(lines) + "\n"
        filename = f"<mycel MultitypeFuncGraph {self.name} #{next(_counter)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own generated source)
        return namespace["dispatch"]


def _map(fn, reverse, *seqs):
    """fn over the leaves of equally nested tuples/lists (the structure of the first)."""
    first = seqs[0]
    if isinstance(first, (tuple, list)):
        for s in seqs[1:]:
            if not isinstance(s, (tuple, list)) or len(s) != len(first):
                raise ValueError(f"HyperMap: the sequences differ in length or nesting: {len(first)} items "
                                 f"and {len(s) if isinstance(s, (tuple, list)) else type(s).__name__}")
        order = range(len(first) - 1, -1, -1) if reverse else range(len(first))
        out = [None] * len(first)
        for i in order:
            out[i] = _map(fn, reverse, *[s[i] for s in seqs])
        return tuple(out) if isinstance(first, tuple) else out
    return fn(*seqs)


# Graph-mode forms of _map, one function per number of sequences (up to _MAX_SEQS): graph mode
# unrolls `for ... in zip(...)` over tuples, so each leaf gets its own specialized call; the
# sequences are passed one by one because a graph's *args are not packed when it is called with
# f(*t). Lists are compiled as tuples, so a graph-mode map returns tuples. The source is generated
# once and kept in linecache, where the frontend reads it.
_MAX_SEQS = 8


def _graph_map_source():
    # map_m(fn, fixed, x0..x{m-1}): fn(*fixed, leaves...) over the leaves (fixed: F.partial's
    # arguments, () without); map_once_m: one level. map/map_once pick m and unpack a partial.
    lines = []
    for m in range(1, _MAX_SEQS + 1):
        xs = ", ".join(f"x{j}" for j in range(m))
        ys = ", ".join(f"y{j}" for j in range(m))
        loop = f"        for {ys}{',' if m == 1 else ''} in zip({xs}):"
        for name, call in ((f"map_{m}", f"map_{m}(fn, fixed, {ys})"),
                           (f"map_once_{m}", f"fn(*(fixed + ({ys},)))")):
            lines += [f"def {name}(fn, fixed, {xs}):",
                      "    if isinstance(x0, tuple):",
                      "        out = ()",
                      loop,
                      f"            out = out + ({call},)",
                      "        return out"]
            lines += [f"    return fn(*(fixed + ({xs},)))", ""] if name.startswith(f"map_{m}") \
                else ["    raise TypeError('Map: the sequences must be tuples or lists')", ""]
    for name in ("map", "map_once"):
        for head, fn in ((f"def {name}(fn, *seqs):", "fn"), (f"def {name}_fixed(*seqs):", "ops")):
            lines += [head, f"    f = {fn}", "    fixed = ()", "    if isinstance(f, tuple):",
                      "        fixed = f[1]", "        f = f[0]"]
            for m in range(1, _MAX_SEQS + 1):
                lines += [f"    if len(seqs) == {m}:",
                          f"        return {name}_{m}(f, fixed, " + ", ".join(f"seqs[{j}]" for j in range(m)) + ")"]
            lines += [f"    raise TypeError('HyperMap/Map in graph mode: 1 to {_MAX_SEQS} sequences')", ""]
    return "\n".join(lines) + "\n"


_GRAPH_MAP_SOURCE = None


def _graph_map_function(name, ops=None):
    """The generated graph-mode function `name` (map, map_once, map_fixed, map_once_fixed), with
    `ops` as the fixed function of the *_fixed forms."""
    global _GRAPH_MAP_SOURCE
    filename = "<mycel HyperMap>"
    if _GRAPH_MAP_SOURCE is None:
        _GRAPH_MAP_SOURCE = _graph_map_source()
        linecache.cache[filename] = (len(_GRAPH_MAP_SOURCE), None, _GRAPH_MAP_SOURCE.splitlines(True), filename)
    namespace = {"ops": ops}
    exec(compile(_GRAPH_MAP_SOURCE, filename, "exec"), namespace)  # noqa: S102 (our generated source)
    return namespace[name]


class HyperMap:
    """HyperMap(ops=None, reverse=False): `hyper_map(fn, xs, ys)` (or `HyperMap(fn)(xs, ys)`) is
    fn applied to matching leaves of the (nested) tuples/lists xs, ys, keeping their structure."""

    def __init__(self, ops=None, reverse=False):
        self.ops = ops
        self.reverse = reverse

    def __call__(self, *args):
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        if not seqs:
            raise TypeError("HyperMap: no sequences to map over")
        return _map(fn, self.reverse, *seqs)

    @property
    def _mycel_graph_function(self):
        if getattr(self, "_graph_fn", None) is None:
            kind = "map_once" if isinstance(self, Map) else "map"
            self._graph_fn = _graph_map_function(kind if self.ops is None else kind + "_fixed", self.ops)
        return self._graph_fn


class Map(HyperMap):
    """Map: HyperMap over one level (MindSpore's Map applies fn to the items of the sequences)."""

    def __call__(self, *args):
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        n = len(seqs[0])
        return tuple(fn(*[s[i] for s in seqs]) for i in range(n))


__all__ = ["MultitypeFuncGraph", "HyperMap", "Map"]
