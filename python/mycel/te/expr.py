"""Expression wrappers: Python operators over the C++ TE nodes (mycel._mycel.te)."""
import builtins
import inspect
import itertools

from numpy import integer as np_integer

from mycel._mycel import te as _te

_names = itertools.count()
_INT = ("int32", "int64")


def _dtype_name(dtype):
    """'float32' etc. from a string, a mycel dtype or a numpy dtype."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None) or str(dtype)
    return {"bool_": "bool", "Bool": "bool"}.get(name, name).lower()


def _wrap(node):
    return Expr(node)


class SizeVar:
    """A symbolic extent (``te.var("n")``): a dimension known only when the built function is
    called. Equal names are one variable; a function built over it compiles once for all sizes."""

    __slots__ = ("name", "code")

    def __init__(self, name):
        if not isinstance(name, str) or not name:
            raise TypeError(f"[te.var] a size variable needs a non-empty str name, got {name!r}")
        self.name = name
        self.code = _te.size_var(name)

    def __repr__(self):  # a size written as an expression shows it: (2 * n)
        return f"te.var({self.name!r})" if self.name.isidentifier() else f"({self.name})"

    def __eq__(self, other):
        return isinstance(other, SizeVar) and other.code == self.code

    def __hash__(self):
        return hash(("te.var", self.code))

    # In index arithmetic a size variable is its value at the call (x[i + n], x[n - 1 - i],
    # flat[i * m + j]): an int64 expression.
    expr = property(lambda self: Expr(_te.size_value(self.code)),
                    doc="The size's value as an int64 index expression.")
    def __add__(self, o): return _bin("add", self, o)
    def __radd__(self, o): return _bin("add", o, self)
    def __sub__(self, o): return _bin("sub", self, o)
    def __rsub__(self, o): return _bin("sub", o, self)
    def __mul__(self, o): return _bin("mul", self, o)
    def __rmul__(self, o): return _bin("mul", o, self)
    def __floordiv__(self, o): return _bin("div", self, o)
    def __rfloordiv__(self, o): return _bin("div", o, self)
    def __mod__(self, o): return _bin("mod", self, o)
    def __rmod__(self, o): return _bin("mod", o, self)
    def __neg__(self): return -self.expr


def var(name):
    """A size variable for symbolic dimensions: ``te.placeholder((te.var("n"), 784))``."""
    return SizeVar(name)


def _extent(d, what):
    """A dimension as the C++ core holds it: an int > 0, or a size variable's (negative) code;
    an expression of size variables (2 * n, n + 1) is a size variable computed from theirs."""
    if isinstance(d, SizeVar):
        return d.code
    if isinstance(d, Expr):
        return _te.size_expr(d.node)
    if isinstance(d, bool) or not isinstance(d, (int, np_integer)):
        raise TypeError(f"[te.{what}] dimensions are ints or te.var (or expressions of te.var: "
                        f"2 * n), got {type(d).__name__} {d!r}")
    return int(d)


def _dims(shape, what):
    return [_extent(d, what) for d in shape]


def _public(d):
    """A dimension for Python: the int, or the te.var it stands for."""
    if d >= 0:
        return d
    sv = SizeVar.__new__(SizeVar)
    sv.name, sv.code = _te.size_var_name(d), d
    return sv


def _lift(value, like):
    """An Expr from an Expr or a Python scalar (scalars take the other operand's dtype)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (IterVar, SizeVar)):
        return value.expr
    if isinstance(value, bool):
        return Expr(_te.constant(float(value), "bool"))
    if isinstance(value, (int, float)):
        dt = like.dtype if like is not None else ("int64" if isinstance(value, int) else "float32")
        if isinstance(value, float) and dt in _INT:
            dt = "float32"
        return Expr(_te.constant(float(value), dt))
    raise TypeError(f"[te] cannot use {type(value).__name__} {value!r} in an expression")


def _bin(op, a, b):
    a = a.expr if isinstance(a, (IterVar, SizeVar)) else a
    b = b.expr if isinstance(b, (IterVar, SizeVar)) else b
    la = _lift(a, b if isinstance(b, Expr) else None)
    lb = _lift(b, la)
    return Expr(_te.binary(op, la.node, lb.node))


class Expr:
    """A scalar expression of the index variables (one element of a tensor)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    dtype = property(lambda self: self.node.dtype)

    def __repr__(self):
        return f"te.Expr({self.node!r})"

    def __add__(self, o): return _bin("add", self, o)
    def __radd__(self, o): return _bin("add", o, self)
    def __sub__(self, o): return _bin("sub", self, o)
    def __rsub__(self, o): return _bin("sub", o, self)
    def __mul__(self, o): return _bin("mul", self, o)
    def __rmul__(self, o): return _bin("mul", o, self)
    def __truediv__(self, o): return _bin("div", self, o)
    def __rtruediv__(self, o): return _bin("div", o, self)
    def __floordiv__(self, o): return _bin("div", self, o)
    def __mod__(self, o): return _bin("mod", self, o)
    def __pow__(self, o): return _bin("pow", self, o)
    def __neg__(self): return Expr(_te.unary("neg", self.node))
    def __lt__(self, o): return _bin("lt", self, o)
    def __le__(self, o): return _bin("le", self, o)
    def __gt__(self, o): return _bin("gt", self, o)
    def __ge__(self, o): return _bin("ge", self, o)
    def equal(self, o): return _bin("eq", self, o)
    def not_equal(self, o): return _bin("ne", self, o)
    def astype(self, dtype): return cast(self, dtype)

    def __bool__(self):
        raise TypeError("[te] an expression has no truth value; use te.if_then_else, te.all_of")


class IterVar(Expr):
    """A loop variable (compute axis or reduce axis); usable wherever an Expr is."""

    __slots__ = ("var",)

    def __init__(self, var):
        super().__init__(_te.var(var))
        self.var = var

    expr = property(lambda self: self)
    dom = property(lambda self: (self.var.lo, _public(self.var.hi)))


class TensorExpr:
    """A placeholder or compute tensor; t(i, j) or t[i, j] reads one element."""

    def __init__(self, node):
        self.node = node

    shape = property(lambda self: tuple(_public(d) for d in self.node.shape),
                     doc="Dimensions: ints, and te.var for symbolic ones.")
    dtype = property(lambda self: self.node.dtype)
    name = property(lambda self: self.node.name)
    ndim = property(lambda self: len(self.node.shape))
    axis = property(lambda self: tuple(IterVar(v) for v in self.node.axes),
                    doc="The compute's axes (loops to schedule), as TVM's t.op.axis.")
    reduce_axis = property(lambda self: tuple(IterVar(v) for v in self.node.reduce_axes),
                           doc="The reduce axes of a reduction at the top of the body.")

    def __call__(self, *indices):
        if len(indices) == 1 and isinstance(indices[0], (tuple, list)):
            indices = tuple(indices[0])
        idx = [_lift(i, None).node if not isinstance(i, Expr) else i.node for i in indices]
        return Expr(_te.load(self.node, idx))

    def __getitem__(self, indices):
        return self(*(indices if isinstance(indices, tuple) else (indices,)))

    def __hash__(self):
        return hash(self.node.id)

    def __eq__(self, other):
        return isinstance(other, TensorExpr) and other.node.id == self.node.id

    def __repr__(self):
        return f"te.Tensor({self.node!r})"

    # Whole-tensor arithmetic (MindSpore's examples write out * (1.0 - out)).
    def __add__(self, o): return _elementwise(lambda a, b: a + b, self, o)
    def __radd__(self, o): return _elementwise(lambda a, b: b + a, self, o)
    def __sub__(self, o): return _elementwise(lambda a, b: a - b, self, o)
    def __rsub__(self, o): return _elementwise(lambda a, b: b - a, self, o)
    def __mul__(self, o): return _elementwise(lambda a, b: a * b, self, o)
    def __rmul__(self, o): return _elementwise(lambda a, b: b * a, self, o)
    def __truediv__(self, o): return _elementwise(lambda a, b: a / b, self, o)
    def __rtruediv__(self, o): return _elementwise(lambda a, b: b / a, self, o)
    def __neg__(self): return compute(self.shape, lambda *i: -self(*i), self.name + "_neg")


def _elementwise(fn, t, other):
    if isinstance(other, TensorExpr):
        if other.shape != t.shape:
            raise ValueError(f"[te] elementwise op on tensors of shapes {t.shape} and "
                             f"{other.shape}: shapes must be equal")
        return compute(t.shape, lambda *i: fn(t(*i), other(*i)), t.name + "_ew")
    return compute(t.shape, lambda *i: fn(t(*i), other), t.name + "_ew")


def _fresh(prefix):
    return f"{prefix}{next(_names)}"


def placeholder(shape, dtype="float32", name=None):
    """An input tensor of the given shape (ints, or te.var for a size known at call time)."""
    return TensorExpr(_te.placeholder(_dims(shape, "placeholder"), _dtype_name(dtype),
                                      name or _fresh("x")))


def compute(shape, fcompute, name=None):
    """A tensor whose element at index i is fcompute(*i)."""
    shape = tuple(_dims(shape, "compute"))
    nparams = len(inspect.signature(fcompute).parameters)
    has_varargs = any(p.kind == p.VAR_POSITIONAL
                      for p in inspect.signature(fcompute).parameters.values())
    if not has_varargs and nparams != len(shape):
        raise ValueError(f"[te.compute] '{name}': the function takes {nparams} indices but the "
                         f"shape {shape} has rank {len(shape)}")
    names = "ijklmnpq"
    axes = [_te.make_var(names[k] if k < len(names) else f"i{k}", 0, d, False)
            for k, d in enumerate(shape)]
    body = fcompute(*[IterVar(a) for a in axes])
    body = _lift(body, None)
    return TensorExpr(_te.compute(list(shape), axes, body.node, name or _fresh("t")))


def reduce_axis(dom, name=None):
    """A reduction variable over the half-open range dom = (lo, hi)."""
    lo, hi = (0, dom) if isinstance(dom, (int, SizeVar, Expr)) else dom
    return IterVar(_te.make_var(name or _fresh("r"), int(lo), _extent(hi, "reduce_axis"), True))


def _reducer(kind):
    def reducer(expr, axis):
        axes = axis if isinstance(axis, (list, tuple)) else [axis]
        for a in axes:
            if not isinstance(a, IterVar):
                raise TypeError(f"[te.{kind}] axis must be te.reduce_axis, got {type(a).__name__}")
        return Expr(_te.reduce(kind, _lift(expr, None).node, [a.var for a in axes]))
    reducer.__name__ = kind
    reducer.__doc__ = f"The {kind} of expr over the reduce axes."
    return reducer


sum = _reducer("sum")  # noqa: A001 (MindSpore/TVM spelling)
max = _reducer("max")  # noqa: A001
min = _reducer("min")  # noqa: A001


def if_then_else(cond, then_value, else_value):
    """cond ? then_value : else_value (only the chosen branch is evaluated)."""
    a = then_value if isinstance(then_value, Expr) else None
    b = else_value if isinstance(else_value, Expr) else None
    t = _lift(then_value, b)
    e = _lift(else_value, t)
    return Expr(_te.select(_lift(cond, None).node, t.node, e.node))


def cast(x, dtype):
    """x converted to dtype."""
    return Expr(_te.cast(_lift(x, None).node, _dtype_name(dtype)))


def const(value, dtype="float32"):
    """A constant of the given dtype."""
    return Expr(_te.constant(float(value), _dtype_name(dtype)))


def all_of(*conds):
    """Logical and of conditions."""
    out = _lift(conds[0], None)
    for c in conds[1:]:
        out = Expr(_te.binary("and", out.node, _lift(c, None).node))
    return out


def any_of(*conds):
    """Logical or of conditions."""
    out = _lift(conds[0], None)
    for c in conds[1:]:
        out = Expr(_te.binary("or", out.node, _lift(c, None).node))
    return out


def _unary(op):
    def f(x):
        return Expr(_te.unary(op, _lift(x, None).node))
    f.__name__ = op
    f.__doc__ = f"Elementwise {op}."
    return f


exp, log, sqrt, rsqrt, tanh, sigmoid, abs, sin, cos, erf = (  # noqa: A001
    _unary(n) for n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "sin", "cos", "erf"))


def power(x, y):
    """x ** y."""
    return _bin("pow", x, y)


_ = builtins  # builtins stays reachable for readers of this module's shadowed names
