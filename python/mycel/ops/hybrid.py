"""MindSpore's Hybrid DSL (`ops.kernel`): a Python function of explicit loops over tensors that
runs as a numpy function when called directly, and as compiled C++ in ops.Custom
(func_type="hybrid").

The translator turns the function's syntax tree into a C++ function with MindSpore's aot calling
convention, specialized to one input signature (shapes are constants, so loop bounds and strides
fold), and compiles it with the system compiler into the TE kernel cache (src/mycel/te/aot.cc).
What it accepts is MindSpore's spec: tensors from the inputs, `output_tensor(shape, dtype)` and
`allocate(shape, dtype)`; scalars declared by their first assignment, living in that block; the
loops `range`, `serial`, `vectorize`, `parallel` (an OpenMP loop when not nested in another),
`reduce` and `grid(shape)`; `if`/`elif`/`else`, the arithmetic and comparison operators, the math
intrinsics below and dtype casts (`float32(x)`). Element reads and writes are bounds-checked unless
the index is a loop variable whose range provably fits: an index out of range stops the kernel
with an error naming the line, as the numpy run raises IndexError.
"""
import ast
import functools
import inspect
import math
import textwrap
import types

import numpy as np

__all__ = ["kernel", "ms_kernel", "HybridKernel", "HybridError"]

# dtype name -> (C type, is float, is signed int)
_CTYPES = {"float32": "float", "float64": "double", "int8": "int8_t", "int16": "int16_t",
           "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t",
           "uint32": "uint32_t", "uint64": "uint64_t", "bool": "bool"}
_RANK = {"bool": 0, "uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "uint32": 3, "int32": 3,
         "uint64": 4, "int64": 4, "float32": 5, "float64": 6}
_FLOAT_FNS = {"sqrt": "std::sqrt", "exp": "std::exp", "log": "std::log", "sin": "std::sin",
              "cos": "std::cos", "tan": "std::tan", "tanh": "std::tanh", "sinh": "std::sinh",
              "cosh": "std::cosh", "asin": "std::asin", "acos": "std::acos", "atan": "std::atan",
              "floor": "std::floor", "ceil": "std::ceil", "trunc": "std::trunc",
              "round": "std::nearbyint", "log1p": "std::log1p", "expm1": "std::expm1",
              "erf": "std::erf", "exp2": "std::exp2", "log2": "std::log2", "log10": "std::log10"}
_LOOPS = ("range", "serial", "vectorize", "parallel", "reduce")


class HybridError(SyntaxError):
    """A construct the hybrid translator does not accept, with the line it is on."""


# ---- numpy mode: the function itself, with the DSL's names bound ----------------------------------
def _np_intrinsics():
    def output_tensor(shape, dtype):
        return np.zeros(tuple(shape), np.dtype(_dtype_name(dtype)))

    def grid(shape):
        return np.ndindex(*tuple(shape))

    def rsqrt(x):
        return 1.0 / np.sqrt(x)

    names = {"output_tensor": output_tensor, "allocate": output_tensor, "grid": grid,
             "serial": range, "vectorize": range, "parallel": range, "reduce": range,
             "rsqrt": rsqrt, "sign": np.sign, "power": np.power, "atan2": np.arctan2,
             "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "abs": np.abs,
             "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "round": np.rint}
    for name in _FLOAT_FNS:
        names.setdefault(name, getattr(np, name, None) or getattr(math, name))
    for name in _CTYPES:
        names[name] = np.bool_ if name == "bool" else getattr(np, name)
    return names


def _dtype_name(dtype):
    """'float32' for 'float32', np.float32, a numpy dtype or a mycel dtype."""
    if isinstance(dtype, str):
        name = dtype
    elif hasattr(dtype, "name") and not isinstance(dtype, type):
        name = str(dtype.name)
    else:
        name = np.dtype(dtype).name
    name = {"bool_": "bool", "Float32": "float32"}.get(name, name).lower()
    if name not in _CTYPES:
        raise TypeError(f"hybrid: dtype {dtype!r} is not supported (one of {', '.join(_CTYPES)})")
    return name


# ---- the translator -------------------------------------------------------------------------------
class _Tensor:
    def __init__(self, cname, shape, dtype, role):
        self.cname, self.shape, self.dtype, self.role = cname, tuple(int(d) for d in shape), dtype, role


class _Value:
    """A translated expression: C++ code and its dtype name ('float64' for a Python float, which
    adopts the other operand's float type), or a compile-time Python value (const)."""

    def __init__(self, code, dtype, const=None, weak=False):
        self.code, self.dtype, self.const, self.weak = code, dtype, const, weak


def _const(v):
    if isinstance(v, bool):
        return _Value("true" if v else "false", "bool", v)
    if isinstance(v, int):
        return _Value(f"INT64_C({v})", "int64", v, weak=True)
    if isinstance(v, float):
        return _Value(repr(v) if math.isfinite(v) else
                      ("NAN" if math.isnan(v) else ("INFINITY" if v > 0 else "-INFINITY")), "float64", v, weak=True)
    return _Value(None, None, v)


def _promote(a, b):
    """The dtype of a op b (numpy's rule with Python numbers weak)."""
    if a.weak and not b.weak:
        a, b = b, a
    if b.weak and not a.weak:
        if b.dtype == "float64" and a.dtype not in ("float32", "float64"):
            return "float64" if a.dtype in ("int64", "uint64", "int32", "uint32") else "float32"
        return a.dtype
    return a.dtype if _RANK[a.dtype] >= _RANK[b.dtype] else b.dtype


class _Translator:
    def __init__(self, name, fn_ast, inputs, filename, first_line):
        self.name, self.fn, self.filename, self.first_line = name, fn_ast, filename, first_line
        self.tensors = {}
        self.scopes = [{}]  # name -> ("var", dtype) | ("const", value) | ("index", [loop vars])
        self.loop_ranges = {}  # C name of a loop variable -> (lo, hi) when both are constants
        self.lines, self.indent, self.parallel_depth = [], 1, 0
        self.outputs = []
        self.assigned = {}  # name -> how many statements assign it (once: may be a constant)
        for n in ast.walk(fn_ast):
            targets = n.targets if isinstance(n, ast.Assign) else \
                [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
            for t in targets:
                if isinstance(t, ast.Name):
                    self.assigned[t.id] = self.assigned.get(t.id, 0) + 1 + isinstance(n, (ast.AugAssign, ast.For))
        params = [a.arg for a in fn_ast.args.args]
        if len(params) != len(inputs):
            raise TypeError(f"hybrid kernel '{name}' takes {len(params)} inputs, got {len(inputs)}")
        for k, (p, (shape, dtype)) in enumerate(zip(params, inputs)):
            if shape is None:  # a Python scalar argument: a compile-time constant
                self.scopes[0][p] = ("const", dtype)
            else:
                self.tensors[p] = _Tensor(f"in{k}", shape, dtype, "input")
                self.scopes[0][p] = ("tensor", p)
        self.n_inputs = sum(1 for s, _ in inputs if s is not None)

    # errors name the user's line
    def error(self, node, msg, kind=HybridError):
        line = self.first_line + getattr(node, "lineno", 1) - 1
        raise kind(f"hybrid kernel '{self.name}' ({self.filename}, line {line}): {msg}")

    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # ---- statements ------------------------------------------------------------------------
    def run(self):
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        for stmt in body:
            self.stmt(stmt)
        if not self.outputs:
            self.error(self.fn, "a hybrid kernel must return its output tensors (`return c`)")

    def block(self, stmts):
        self.scopes.append({})
        self.indent += 1
        for s in stmts:
            self.stmt(s)
        self.indent -= 1
        self.scopes.pop()

    def stmt(self, node):
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                self.error(node, "chained assignment is not supported")
            self.assign(node.targets[0], node.value, node)
        elif isinstance(node, ast.AugAssign):
            self.assign(node.target, ast.BinOp(left=_load(node.target), op=node.op, right=node.value,
                                               lineno=node.lineno, col_offset=node.col_offset), node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, node.value, node)
        elif isinstance(node, ast.For):
            self.loop(node)
        elif isinstance(node, ast.If):
            cond = self.expr(node.test)
            if cond.const is not None and cond.code is None:
                self.error(node.test, "the condition must be a number or a comparison")
            self.emit(f"if ({cond.code}) {{")
            self.block(node.body)
            if node.orelse:
                self.emit("} else {")
                self.block(node.orelse)
            self.emit("}")
        elif isinstance(node, ast.Return):
            self.ret(node)
        elif isinstance(node, ast.Pass):
            pass
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            pass  # a string used as a comment
        else:
            self.error(node, f"'{type(node).__name__}' statements are not supported in the hybrid DSL")

    def assign(self, target, value, node):
        if isinstance(target, ast.Subscript):
            t, index = self.element(target)
            v = self.expr(value)
            self.emit(f"{t.cname}[{index}] = static_cast<{_CTYPES[t.dtype]}>({self.code_of(v, value)});")
            return
        if not isinstance(target, ast.Name):
            self.error(node, "only names and tensor elements can be assigned")
        name = target.id
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
                value.func.id in ("output_tensor", "allocate"):
            if self.lookup(name) is not None:
                self.error(node, f"'{name}' is already defined; a tensor is declared once")
            self.declare_tensor(name, value)
            return
        v = self.expr(value)
        known = self.lookup(name)
        if known is None:
            if v.code is None or (v.const is not None and self.assigned.get(name, 0) == 1):
                # a compile-time value assigned once (a shape, a dtype, n = a.shape[0]): bind it
                self.scopes[-1][name] = ("const", v.const)
                return
            dtype = v.dtype
            self.scopes[-1][name] = ("var", dtype)
            self.emit(f"{_CTYPES[dtype]} {name} = static_cast<{_CTYPES[dtype]}>({v.code});")
        elif known[0] == "var":
            self.emit(f"{name} = static_cast<{_CTYPES[known[1]]}>({self.code_of(v, value)});")
        else:
            self.error(node, f"'{name}' cannot be assigned here (it is a {known[0]})")

    def declare_tensor(self, name, call):
        if len(call.args) != 2 or call.keywords:
            self.error(call, f"{call.func.id}(shape, dtype) takes a shape and a dtype")
        shape = self.compile_time(call.args[0], "the shape")
        dtype = self.compile_time(call.args[1], "the dtype")
        try:
            shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
            dtype = _dtype_name(dtype)
        except (TypeError, ValueError) as e:
            self.error(call, str(e))
        if any(d < 0 for d in shape):
            self.error(call, f"negative dimension in shape {shape}")
        if call.func.id == "output_tensor":
            t = _Tensor(f"out_{name}", shape, dtype, "output")
        else:
            t = _Tensor(f"tmp_{name}", shape, dtype, "temp")
            size = max(1, math.prod(shape))
            self.emit(f"std::vector<{_CTYPES[dtype]}> {t.cname}_buf({size});")
            self.emit(f"{_CTYPES[dtype]}* {t.cname} = {t.cname}_buf.data();")
        self.tensors[name] = t
        self.scopes[-1][name] = ("tensor", name)

    def loop(self, node):
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in _LOOPS + ("grid",)):
            self.error(node, "a loop must be over range/serial/vectorize/parallel/reduce(...) or grid(shape)")
        if node.orelse:
            self.error(node, "for ... else is not supported")
        if it.func.id == "grid":
            shape = self.compile_time(it.args[0], "grid's shape") if len(it.args) == 1 else None
            if not isinstance(node.target, ast.Name) or shape is None:
                self.error(node, "grid takes one shape and one loop name: `for idx in grid(shape):`")
            shape = tuple(int(d) for d in shape)
            names = [f"{node.target.id}_{k}" for k in range(len(shape))]
            for k, (v, n) in enumerate(zip(names, shape)):
                self.emit(f"for (int64_t {v} = 0; {v} < {n}; ++{v}) {{")
                self.loop_ranges[v] = (0, n)
                self.indent += 1
            self.scopes.append({node.target.id: ("index", names)})
            for s in node.body:
                self.stmt(s)
            self.scopes.pop()
            for _ in shape:
                self.indent -= 1
                self.emit("}")
            return
        if not isinstance(node.target, ast.Name):
            self.error(node, "the loop variable must be a name")
        args = [self.expr(a) for a in it.args]
        if not 1 <= len(args) <= 3 or it.keywords or any(a.code is None or a.dtype not in _RANK or
                                                         a.dtype.startswith("float") for a in args):
            self.error(node, f"{it.func.id}(...) takes 1 to 3 integers")
        lo, hi, step = (_const(0), args[0], _const(1)) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else _const(1))
        if step.const == 0:
            self.error(node, "a loop step of 0")
        var = node.target.id
        if self.lookup(var) is not None:
            self.error(node, f"the loop variable '{var}' is already defined")
        parallel = it.func.id == "parallel" and self.parallel_depth == 0
        if parallel:
            self.emit("#pragma omp parallel for")
        elif it.func.id == "vectorize":
            self.emit("#pragma omp simd")
        down = step.const is not None and step.const < 0
        self.emit(f"for (int64_t {var} = {lo.code}; {var} {'>' if down else '<'} {hi.code}; {var} += {step.code}) {{")
        if lo.const is not None and hi.const is not None and step.const is not None and step.const > 0:
            self.loop_ranges[var] = (lo.const, hi.const)
        self.parallel_depth += parallel
        self.scopes.append({var: ("var", "int64")})
        self.indent += 1
        for s in node.body:
            self.stmt(s)
        self.indent -= 1
        self.scopes.pop()
        self.parallel_depth -= parallel
        self.loop_ranges.pop(var, None)
        self.emit("}")

    def ret(self, node):
        vals = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        if self.outputs:
            self.error(node, "a hybrid kernel returns once, at its end")
        for v in vals:
            known = self.lookup(v.id) if isinstance(v, ast.Name) else None
            if known is None or known[0] != "tensor" or self.tensors[v.id].role != "output":
                self.error(node, "a hybrid kernel returns tensors declared with output_tensor")
            self.outputs.append(self.tensors[v.id])
        if self.indent != 1:
            self.error(node, "return must be the last statement, outside loops and branches")

    # ---- expressions -----------------------------------------------------------------------
    def compile_time(self, node, what):
        v = self.expr(node)
        if v.const is None:
            self.error(node, f"{what} must be known when the kernel is compiled (shapes, dtypes, numbers)")
        return v.const

    def code_of(self, v, node):
        if v.code is None:
            self.error(node, f"{v.const!r} is not a number")
        return v.code

    def element(self, node):
        """(tensor, flat index code) of t[i, j, ...], bounds-checked where not provably in range."""
        base = node.value
        known = self.lookup(base.id) if isinstance(base, ast.Name) else None
        if known is None or known[0] != "tensor":
            self.error(node, "only tensors can be indexed (t[i, j])")
        t = self.tensors[base.id]
        idx = node.slice
        if isinstance(idx, ast.Name) and (self.lookup(idx.id) or ("",))[0] == "index":
            items = [_Value(v, "int64") for v in self.lookup(idx.id)[1]]
            nodes = [idx] * len(items)
        else:
            nodes = idx.elts if isinstance(idx, ast.Tuple) else [idx]
            items = [self.expr(n) for n in nodes]
        if len(items) != len(t.shape):
            self.error(node, f"'{base.id}' has {len(t.shape)} dimensions, indexed with {len(items)}")
        terms, stride = [], 1
        for k in reversed(range(len(items))):
            it, n = items[k], t.shape[k]
            if it.code is None or it.dtype not in _RANK or it.dtype.startswith("float") or it.dtype == "bool":
                self.error(nodes[k], f"an index of '{base.id}' must be an integer")
            code = f"static_cast<int64_t>({it.code})"
            rng = self.loop_ranges.get(it.code)
            in_range = (it.const is not None and 0 <= it.const < n) or \
                (rng is not None and rng[0] >= 0 and rng[1] <= n)
            if it.const is not None and not in_range:
                self.error(nodes[k], f"index {it.const} is out of range for dimension {k} of '{base.id}' (size {n})")
            if not in_range:
                line = self.first_line + nodes[k].lineno - 1
                code = f"mycel_hybrid_index({code}, {n}, {line}, mycel_error)"
            terms.append(code if stride == 1 else f"{code} * {stride}")
            stride *= n
        return t, " + ".join(reversed(terms)) or "0"

    def expr(self, node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return _Value(None, None, node.value)
            return _const(node.value)
        if isinstance(node, ast.Name):
            return self.load_name(node)
        if isinstance(node, ast.Attribute):
            known = self.lookup(node.value.id) if isinstance(node.value, ast.Name) else None
            if known and known[0] == "tensor" and node.attr in ("shape", "dtype", "ndim", "size"):
                t = self.tensors[node.value.id]
                if node.attr in ("shape", "dtype"):
                    return _Value(None, None, t.shape if node.attr == "shape" else t.dtype)
                return _const(len(t.shape) if node.attr == "ndim" else math.prod(t.shape))
            self.error(node, "only a tensor's shape, dtype, ndim and size can be read")
        if isinstance(node, ast.Tuple) or isinstance(node, ast.List):
            vals = [self.compile_time(e, "a tuple's item") for e in node.elts]
            return _Value(None, None, tuple(vals))
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value) if not (isinstance(node.value, ast.Name) and
                                                 (self.lookup(node.value.id) or ("",))[0] in ("tensor", "index")) else None
            if base is None and (self.lookup(node.value.id) or ("",))[0] == "index":
                k = self.compile_time(node.slice, "a grid index's position")
                names = self.lookup(node.value.id)[1]
                return _Value(names[k], "int64")
            if base is not None:
                if isinstance(base.const, tuple):
                    k = self.compile_time(node.slice, "the position")
                    return _const(base.const[k])
                self.error(node, "only tensors, shapes and grid indices can be indexed")
            t, index = self.element(node)
            return _Value(f"{t.cname}[{index}]", t.dtype)
        if isinstance(node, ast.UnaryOp):
            v = self.expr(node.operand)
            if v.const is not None and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
                return _const({ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x}[type(node.op)](v.const))
            code = self.code_of(v, node)
            if isinstance(node.op, ast.Not):
                return _Value(f"(!{code})", "bool")
            if isinstance(node.op, ast.Invert):
                return _Value(f"(~{code})", v.dtype)
            return _Value(f"({'-' if isinstance(node.op, ast.USub) else '+'}{code})", v.dtype, weak=v.weak)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.BoolOp):
            vals = [self.expr(v) for v in node.values]
            op = " && " if isinstance(node.op, ast.And) else " || "
            return _Value("(" + op.join(f"static_cast<bool>({self.code_of(v, node)})" for v in vals) + ")", "bool")
        if isinstance(node, ast.Compare):
            parts, left = [], self.expr(node.left)
            ops_ = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
            for op, right_node in zip(node.ops, node.comparators):
                right = self.expr(right_node)
                if type(op) not in ops_:
                    self.error(node, f"comparison '{type(op).__name__}' is not supported")
                if left.const is not None and right.const is not None and left.code is None and right.code is None:
                    self.error(node, "compare numbers or tensor elements")
                parts.append(f"({self.code_of(left, node)} {ops_[type(op)]} {self.code_of(right, node)})")
                left = right
            return _Value("(" + " && ".join(parts) + ")", "bool")
        if isinstance(node, ast.IfExp):
            c, a, b = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
            dtype = _promote(a, b)
            ct = _CTYPES[dtype]
            return _Value(f"({self.code_of(c, node)} ? static_cast<{ct}>({self.code_of(a, node)}) : "
                          f"static_cast<{ct}>({self.code_of(b, node)}))", dtype)
        if isinstance(node, ast.Call):
            return self.call(node)
        self.error(node, f"'{type(node).__name__}' expressions are not supported in the hybrid DSL")

    def load_name(self, node):
        known = self.lookup(node.id)
        if known is None:
            if node.id in ("True", "False"):
                return _const(node.id == "True")
            self.error(node, f"name '{node.id}' is not defined here (a scalar lives in the block of "
                             "its first assignment)", kind=NameError)
        kind, what = known
        if kind == "var":
            return _Value(node.id, what)
        if kind == "const":
            return _const(what)
        if kind == "tensor":
            t = self.tensors[what]
            if t.shape == () and t.role == "input":  # a 0-d input reads as its value
                return _Value(f"{t.cname}[0]", t.dtype)
            self.error(node, f"'{node.id}' is a tensor: index it (t[i]) or read t.shape")
        self.error(node, f"'{node.id}' is a grid index: index a tensor with it, or read {node.id}[k]")

    def binop(self, node):
        a, b = self.expr(node.left), self.expr(node.right)
        op = type(node.op)
        if a.const is not None and b.const is not None and a.code is not None and b.code is not None:
            try:  # fold compile-time arithmetic (shape computations)
                return _const(_PY_BINOPS[op](a.const, b.const))
            except (KeyError, ZeroDivisionError, ArithmeticError):
                pass
        ca, cb = self.code_of(a, node.left), self.code_of(b, node.right)
        dtype = _promote(a, b)
        is_float = dtype.startswith("float")
        ct = _CTYPES[dtype]
        weak = a.weak and b.weak
        if op is ast.Div:
            dtype = dtype if is_float else "float64"
            ct = _CTYPES[dtype]
            return _Value(f"(static_cast<{ct}>({ca}) / static_cast<{ct}>({cb}))", dtype, weak=weak)
        if op is ast.FloorDiv:
            fn = "mycel_hybrid_floordiv" if not is_float else "mycel_hybrid_ffloordiv"
            return _Value(f"{fn}<{ct}>({ca}, {cb})", dtype, weak=weak)
        if op is ast.Mod:
            fn = "mycel_hybrid_mod" if not is_float else "mycel_hybrid_fmod"
            return _Value(f"{fn}<{ct}>({ca}, {cb})", dtype, weak=weak)
        if op is ast.Pow:
            if not is_float:
                dtype, ct = "float64", "double"
            return _Value(f"static_cast<{ct}>(std::pow(static_cast<{ct}>({ca}), static_cast<{ct}>({cb})))", dtype, weak=weak)
        sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
               ast.LShift: "<<", ast.RShift: ">>"}.get(op)
        if sym is None:
            self.error(node, f"operator '{op.__name__}' is not supported")
        if sym in "&|^<<>>" and is_float:
            self.error(node, f"operator '{sym}' needs integers")
        return _Value(f"static_cast<{ct}>(static_cast<{ct}>({ca}) {sym} static_cast<{ct}>({cb}))", dtype, weak=weak)

    def call(self, node):
        if not isinstance(node.func, ast.Name) or node.keywords:
            self.error(node, "only the hybrid intrinsics can be called (sqrt(x), float32(x), ...)")
        fn, args = node.func.id, [self.expr(a) for a in node.args]
        if fn in _CTYPES:
            if len(args) != 1:
                self.error(node, f"{fn}(x) takes one value")
            if args[0].code is None:  # float32 used as a dtype value: output_tensor(s, float32)
                self.error(node, f"{fn}(x) takes a number")
            return _Value(f"static_cast<{_CTYPES[fn]}>({args[0].code})", fn)
        codes = [self.code_of(a, node) for a in args]
        ftype = "float64" if any(a.dtype == "float64" and not a.weak for a in args) else "float32"
        if any(not a.dtype.startswith("float") and a.dtype in ("int64", "uint64", "int32", "uint32") and not a.weak for a in args):
            ftype = "float64"
        fct = _CTYPES[ftype]
        if fn in _FLOAT_FNS and len(args) == 1:
            return _Value(f"static_cast<{fct}>({_FLOAT_FNS[fn]}(static_cast<{fct}>({codes[0]})))", ftype)
        if fn == "rsqrt" and len(args) == 1:
            return _Value(f"static_cast<{fct}>(1 / std::sqrt(static_cast<{fct}>({codes[0]})))", ftype)
        if fn in ("power", "atan2") and len(args) == 2:
            f = "std::pow" if fn == "power" else "std::atan2"
            return _Value(f"static_cast<{fct}>({f}(static_cast<{fct}>({codes[0]}), static_cast<{fct}>({codes[1]})))", ftype)
        if fn in ("isnan", "isinf", "isfinite") and len(args) == 1:
            return _Value(f"std::{fn}(static_cast<double>({codes[0]}))", "bool")
        if fn == "abs" and len(args) == 1:
            ct = _CTYPES[args[0].dtype]
            return _Value(f"static_cast<{ct}>({codes[0]} < 0 ? -({codes[0]}) : ({codes[0]}))", args[0].dtype, weak=args[0].weak)
        if fn == "sign" and len(args) == 1:
            ct = _CTYPES[args[0].dtype]
            c = codes[0]
            return _Value(f"static_cast<{ct}>(({c} > 0) - ({c} < 0))", args[0].dtype, weak=args[0].weak)
        if fn in ("max", "min") and len(args) >= 2:
            dtype = functools.reduce(lambda x, y: _Value(None, _promote(x, y), weak=x.weak and y.weak), args).dtype
            ct = _CTYPES[dtype]
            out = f"static_cast<{ct}>({codes[0]})"
            for c in codes[1:]:
                out = f"mycel_hybrid_{fn}<{ct}>({out}, static_cast<{ct}>({c}))"
            return _Value(out, dtype)
        self.error(node, f"'{fn}' is not a hybrid intrinsic (or takes other arguments)", kind=NameError)


_PY_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Div: lambda a, b: a / b,
              ast.Pow: lambda a, b: a ** b}


def _load(target):
    node = ast.fix_missing_locations(ast.copy_location(
        type(target)(**{f: getattr(target, f) for f in target._fields}), target))
    node.ctx = ast.Load()
    return node


_PRELUDE = r"""#include <cmath>
#include <cstdint>
#include <vector>
// An index out of range reads or writes element 0 (or a dummy for an empty tensor) and records
// the source line, which the kernel returns at its end: no exception crosses an OpenMP region.
static inline int64_t mycel_hybrid_index(int64_t i, int64_t n, int line, int& error) {
  if (i >= 0 && i < n) return i;
#pragma omp atomic write
  error = line;
  return 0;
}
template <typename T> static inline T mycel_hybrid_floordiv(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> static inline T mycel_hybrid_ffloordiv(T a, T b) { return std::floor(a / b); }
template <typename T> static inline T mycel_hybrid_mod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> static inline T mycel_hybrid_fmod(T a, T b) {
  T r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> static inline T mycel_hybrid_max(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> static inline T mycel_hybrid_min(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
"""


class HybridKernel:
    """A function of MindSpore's Hybrid DSL: called on numpy arrays it runs as Python;
    ops.Custom(kernel) compiles it per input signature."""

    def __init__(self, fn):
        if not inspect.isfunction(fn):
            raise TypeError(f"kernel: expected a function, got {type(fn).__name__}")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        functools.update_wrapper(self, fn)
        self._ast = None

    def __call__(self, *args):
        """The numpy run (MindSpore's: the DSL's names bound to numpy functions)."""
        g = dict(self.fn.__globals__)
        g.update(_np_intrinsics())
        f = types.FunctionType(self.fn.__code__, g, self.fn.__name__, self.fn.__defaults__, self.fn.__closure__)
        arrays = [np.asarray(a.asnumpy() if hasattr(a, "asnumpy") else a) if not isinstance(a, (int, float)) else a
                  for a in args]
        return f(*arrays)

    def _tree(self):
        if self._ast is None:
            try:
                lines, first = inspect.getsourcelines(self.fn)
            except (OSError, TypeError) as e:
                raise HybridError(f"hybrid kernel '{self.__name__}': cannot read its source ({e})") from None
            tree = ast.parse(textwrap.dedent("".join(lines)))
            fn = tree.body[0]
            if not isinstance(fn, ast.FunctionDef):
                raise HybridError(f"hybrid kernel '{self.__name__}': expected a def")
            fn.decorator_list = []
            self._ast = (fn, inspect.getsourcefile(self.fn) or "<unknown>", first)
        return self._ast

    def translate(self, shapes, dtypes):
        """(C++ source, symbol, [(shape, dtype name)] of the outputs) for one input signature."""
        fn, filename, first = self._tree()
        inputs = [(tuple(s), _dtype_name(d)) for s, d in zip(shapes, dtypes)]
        tr = _Translator(self.__name__, fn, inputs, filename, first)
        tr.run()
        symbol = f"mycel_hybrid_{self.__name__}"
        head = [f'extern "C" int {symbol}(int nparam, void** params, int* ndims, int64_t** shapes,',
                "                   const char** dtypes, void* stream, void* extra) {",
                "  (void)nparam; (void)ndims; (void)shapes; (void)dtypes; (void)stream; (void)extra;",
                "  int mycel_error = 0;"]
        for name, t in tr.tensors.items():
            if t.role == "temp":
                continue
            k = int(t.cname[2:]) if t.role == "input" else tr.n_inputs + tr.outputs.index(t)
            ct = _CTYPES[t.dtype]
            if math.prod(t.shape) == 0:  # every access is out of range: point at a dummy
                head.append(f"  {ct} {t.cname}_dummy[1] = {{}};")
                head.append(f"  {ct}* {t.cname} = {t.cname}_dummy;")
            else:
                head.append(f"  {'const ' if t.role == 'input' else ''}{ct}* {t.cname} = "
                            f"static_cast<{'const ' if t.role == 'input' else ''}{ct}*>(params[{k}]);")
        body = tr.lines
        tail = ["  return mycel_error;", "}"]
        declared_outputs = {t.cname for t in tr.tensors.values() if t.role == "output"}
        returned = {t.cname for t in tr.outputs}
        if declared_outputs - returned:
            raise HybridError(f"hybrid kernel '{self.__name__}': output_tensor(s) "
                              f"{sorted(n[4:] for n in declared_outputs - returned)} are not returned")
        source = _PRELUDE + "\n".join(head + body + tail) + "\n"
        return source, symbol, [(t.shape, t.dtype) for t in tr.outputs]


def kernel(fn=None, reg_info=None, compile_attrs=None):
    """MindSpore's `ops.kernel` decorator (also `ms_kernel`): marks a Hybrid DSL function."""
    del reg_info, compile_attrs  # device registration and AKG options: nothing to set here
    if fn is None:
        return kernel
    return HybridKernel(fn)


ms_kernel = kernel
