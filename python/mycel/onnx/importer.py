"""ONNX import: an ONNX model becomes a Cell whose construct is generated Python calling registry
ops, so it is parsed into IR, specialized, optimized and compiled by the normal graph-mode pipeline
(DESIGN.md section 9). Initializers become Parameters (float) or constants; attributes that ONNX
passes as constant inputs (shapes, axes, clip bounds) become op attributes. An op without a rule, or
a use of an op we cannot honour (a dynamic shape input, an unsupported attribute value), is an
error naming the op type and the node."""

import linecache
import re

import numpy as np

import mycel
from mycel import _mycel, nn
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor
from mycel.onnx import model as onnx_model
from mycel.onnx import proto as pb
from mycel.onnx.shape_rules import RULES as SHAPE_RULES

_DTYPES = {pb.FLOAT: "float32", pb.DOUBLE: "float64", pb.FLOAT16: "float16", pb.INT8: "int8",
           pb.UINT8: "uint8", pb.INT16: "int16", pb.INT32: "int32", pb.INT64: "int64", pb.BOOL: "bool_",
           pb.BFLOAT16: "bfloat16"}


class Unsupported(NotImplementedError):
    """An ONNX construct the importer has no rule for."""


class _Emitter:
    """State of one graph's translation: ONNX value name -> Python expression, constants, code."""

    def __init__(self, graph, opset):
        self.graph = graph
        self.opset = opset
        self.exprs = {}
        self.consts = dict(graph.initializers)
        self.tensors = {}  # attribute name -> Tensor/Parameter held by the Cell
        self.lines = []
        self._n = 0
        self.node = None
        self.params = {}        # graph input name -> construct parameter
        self.value_inputs = set()  # graph inputs used as shapes/axes: passed as Python tuples
        self.dtypes = {name: arr.dtype for name, arr in graph.initializers.items()}
        for vi in graph.inputs:
            if vi.elem_type in onnx_model.NP_DTYPES:
                self.dtypes[vi.name] = np.dtype(onnx_model.NP_DTYPES[vi.elem_type])

    def fail(self, why):
        n = self.node
        label = n.name or (n.outputs[0] if n.outputs else f"#{self.graph.nodes.index(n)}")
        raise Unsupported(f"ONNX import: op type '{n.op_type}' (node '{label}'): {why}")

    def fresh(self):
        self._n += 1
        return f"v{self._n}"

    def has(self, i):
        return i < len(self.node.inputs) and self.node.inputs[i] != ""

    def arg(self, i):
        """Expression for input i (None when absent)."""
        if not self.has(i):
            return None
        name = self.node.inputs[i]
        if name in self.exprs:
            return self.exprs[name]
        if name in self.consts:
            attr = "c_" + re.sub(r"\W", "_", name)[:40] + f"_{len(self.tensors)}"
            arr = self.consts[name]
            if arr.dtype in (np.uint16, np.uint32, np.uint64):
                self.fail(f"input '{name}' has dtype {arr.dtype}, which the importer's op rules "
                          "do not take (few Mycel ops take the wider unsigned types)")
            t = Tensor(np.ascontiguousarray(arr))
            if name in self.graph.initializers and arr.dtype.kind == "f" and arr.ndim > 0:
                t = Parameter(t, name=name)
            self.tensors[attr] = t
            self.exprs[name] = f"self.{attr}"
            return self.exprs[name]
        self.fail(f"input '{name}' is not produced by any earlier node")

    def args(self):
        return [self.arg(i) for i in range(len(self.node.inputs))]

    def const(self, i, what, required=True):
        """The constant value of input i (an initializer or a Constant's output)."""
        if not self.has(i):
            if required:
                self.fail(f"input {i} ({what}) is required")
            return None
        name = self.node.inputs[i]
        if name not in self.consts:
            self.fail(f"input '{name}' ({what}) must be a constant (initializer or Constant); "
                      "data-dependent shapes are not supported")
        return self.consts[name]

    def const_expr(self, i, what, required=True):
        """A Python expression for input i's value as a tuple of ints, evaluated at compile time:
        the literal of a constant, or a graph input passed as a tuple (the compiled program is
        specialized on its value, one compile per distinct value)."""
        if not self.has(i):
            if required:
                self.fail(f"input {i} ({what}) is required")
            return None
        name = self.node.inputs[i]
        if name in self.consts:
            return repr(_ints(self.consts[name]))
        if name in self.params:  # translated again with its value once the call gives it
            self.value_inputs.add(name)
            return "()"
        self.fail(f"input '{name}' ({what}) is computed in the graph; data-dependent shapes are "
                  "not supported")

    def dtype(self, i):
        """numpy dtype of input i when known from the graph's declarations, else None."""
        return self.dtypes.get(self.node.inputs[i]) if self.has(i) else None

    def attr(self, name, default=None):
        return self.node.attrs.get(name, default)

    def bind(self, expr):
        """Assigns expr to a fresh variable; returns the variable."""
        v = self.fresh()
        self.lines.append(f"        {v} = {expr}")
        return v


def _ints(v):
    return tuple(int(x) for x in np.asarray(v).reshape(-1))


def _call(op, *args, **attrs):
    parts = [a if a is not None else "None" for a in args]
    parts += [f"{k}={v!r}" for k, v in attrs.items()]
    return f"P.{op}({', '.join(parts)})"


def _pads_2d(e, x, kernel):
    """Mycel pad_mode and pad for a 2-d window op: 'valid'/'same' as such when they mean the same
    as Mycel's, else explicit (t, b, l, r) computed at compile time from x's shape."""
    auto = e.attr("auto_pad", "NOTSET")
    ceil = int(e.attr("ceil_mode", 0))
    if not ceil and auto == "VALID":
        return "'valid'", "(0,)"
    if not ceil and auto == "NOTSET":
        t, l, b, r = e.attr("pads", (0, 0, 0, 0))
        return "'pad'", repr((t, b, l, r))
    return "'pad'", (f"S['window_pads']({x}.shape, {_ints(kernel)!r}, {_ints(e.attr('strides', (1, 1)))!r}, "
                     f"{_ints(e.attr('dilations', (1, 1)))!r}, {auto!r}, {_ints(e.attr('pads', (0, 0, 0, 0)))!r}, {ceil})")


def _wide_pads(pads, kernel):
    """Whether explicit (t, b, l, r) pads exceed half the kernel (Mycel's pooling limit)."""
    t, b, l, r = pads
    return 2 * max(t, b) > kernel[0] or 2 * max(l, r) > kernel[1]


def _window_checks(e, kernel):
    if len(kernel) != 2:
        e.fail(f"only 2-d windows are supported, got kernel_shape {tuple(kernel)}")


def _conv(e):
    w = e.const(1, "W", required=False) if e.has(1) and e.node.inputs[1] in e.consts else None
    kernel = e.attr("kernel_shape") or (w.shape[2:] if w is not None else None)
    if kernel is None:
        e.fail("kernel_shape is needed when the weights are not a constant")
    _window_checks(e, kernel)
    x, wx, b = e.arg(0), e.arg(1), e.arg(2)
    mode, pad = _pads_2d(e, x, kernel)
    return [f"P.conv2d({x}, {wx}, {b}, stride={_ints(e.attr('strides', (1, 1)))!r}, pad_mode={mode}, "
            f"pad={pad}, dilation={_ints(e.attr('dilations', (1, 1)))!r}, groups={int(e.attr('group', 1))})"]


def _as_2d_window(e):
    """A 1-d window op's attributes as the 2-d op over (N, C, 1, L) would have them."""
    a = dict(e.node.attrs)
    a["kernel_shape"] = (1,) + tuple(a["kernel_shape"])
    a["strides"] = (1,) + tuple(a.get("strides", (1,)))
    a["dilations"] = (1,) + tuple(a.get("dilations", (1,)))
    p = tuple(a.get("pads", (0, 0)))
    a["pads"] = (0, p[0], 0, p[1])
    e.node = onnx_model.Node(e.node.op_type, e.node.name, e.node.inputs, e.node.outputs, a, e.node.domain)


def _pool_by_taps(e, op, x, indices=False):
    """An N-d pooling as the max (or sum) of one strided slice per kernel tap over the explicitly
    padded input: dilated windows and 3-d ones, which Mycel's pooling ops do not take. An
    average divides by the window's count: the kernel size with count_include_pad (explicit pads
    counted, a ceil_mode overhang not), else the real positions (the same taps over a mask)."""
    import itertools
    kernel = _ints(e.attr("kernel_shape"))
    nd = len(kernel)
    strides = _ints(e.attr("strides", (1,) * nd))
    dil = _ints(e.attr("dilations", (1,) * nd))
    pads = _ints(e.attr("pads", (0,) * 2 * nd))
    if nd == 0 or min(kernel) < 1 or len(strides) != nd or len(dil) != nd or len(pads) != 2 * nd or \
            min(strides + dil) < 1 or min(pads) < 0:
        e.fail(f"kernel_shape {kernel}, strides {strides}, dilations {dil} and pads {pads} must be positive "
               f"(pads >= 0), one per spatial dim (two for pads)")
    plan = e.bind(f"S['pool_pads']({x}.shape, {kernel!r}, {strides!r}, {dil!r}, {e.attr('auto_pad', 'NOTSET')!r}, "
                  f"{pads!r}, {int(e.attr('ceil_mode', 0))})")
    is_max = op == "max_pool2d"
    fill = "float('-inf')" if is_max else "0.0"
    xp = e.bind(f"P.pad({x}, paddings=S['pool_flat_pads']({x}.shape, {plan}, True, True), value={fill})")

    def taps(src):
        acc = None
        for off in itertools.product(*(range(k) for k in kernel)):
            sl = f"S['pool_slice']({x}.shape, {plan}, {off!r}, {strides!r}, {dil!r})"
            t = f"P.strided_slice({src}, begin={sl}[0], end={sl}[1], strides={sl}[2])"
            acc = t if acc is None else e.bind(f"P.{'maximum' if is_max else 'add'}({acc}, {t})")
        return acc

    if is_max and indices:  # the first maximum's flat index into x (ONNX's row-major Indices)
        iota = f"P.arange(start=0.0, limit=S['numel']({x}.shape), delta=1.0, dtype=D.int64)"
        if e.attr("storage_order", 0):  # column-major over the spatial dims: their order reversed
            perm = (0, 1) + tuple(range(nd + 1, 1, -1))
            iota = f"P.transpose(P.reshape({iota}, S['reverse_spatial']({x}.shape)), perm={perm!r})"
        else:
            iota = f"P.reshape({iota}, {x}.shape)"
        ip = e.bind(f"P.pad({iota}, paddings=S['pool_flat_pads']({x}.shape, {plan}, True, True), value=-1.0)")
        acc = idx = None
        for off in itertools.product(*(range(k) for k in kernel)):
            sl = f"S['pool_slice']({x}.shape, {plan}, {off!r}, {strides!r}, {dil!r})"
            t = e.bind(f"P.strided_slice({xp}, begin={sl}[0], end={sl}[1], strides={sl}[2])")
            ti = f"P.strided_slice({ip}, begin={sl}[0], end={sl}[1], strides={sl}[2])"
            if acc is None:
                acc, idx = t, e.bind(ti)
                continue
            better = e.bind(f"P.greater({t}, {acc})")
            acc, idx = e.bind(f"P.select({better}, {t}, {acc})"), e.bind(f"P.select({better}, {ti}, {idx})")
        return acc, idx
    total = taps(xp)
    if is_max:
        return total
    ones = f"P.ones_like({x})"
    if e.attr("count_include_pad", 0):  # the explicit pads count, the ceil overhang does not
        mask = (f"P.pad(P.pad({ones}, paddings=S['pool_flat_pads']({x}.shape, {plan}, True, False), value=1.0), "
                f"paddings=S['pool_flat_pads']({x}.shape, {plan}, False, True), value=0.0)")
    else:
        mask = f"P.pad({ones}, paddings=S['pool_flat_pads']({x}.shape, {plan}, True, True), value=0.0)"
    return f"P.div({total}, {taps(e.bind(mask))})"


def _pool(op):
    def window(e, x):
        kernel = e.attr("kernel_shape")
        if len(e.node.outputs) > 1 and e.node.outputs[1]:
            if len(kernel) > 3 or int(np.prod(kernel)) > 512:
                e.fail(f"the Indices output of a {int(np.prod(kernel))}-tap window is not supported")
            return _pool_by_taps(e, op, x, indices=True)
        if len(kernel) != 2 or any(d != 1 for d in e.attr("dilations", (1, 1))):
            if len(kernel) > 3 or int(np.prod(kernel)) > 512:
                e.fail(f"a {len(kernel)}-d or dilated window of {int(np.prod(kernel))} taps is not supported")
            return _pool_by_taps(e, op, x)
        mode, pad = _pads_2d(e, x, kernel)
        extra = ""
        include = bool(e.attr("count_include_pad", 0))
        if op == "avg_pool2d":
            if include and e.attr("ceil_mode", 0):
                return _pool_by_taps(e, op, x)
            extra = f", count_include_pad={include}"
        strides = _ints(e.attr("strides", (1, 1)))
        if mode == "'pad'" and not pad.startswith("S[") and _wide_pads(eval(pad), kernel):
            # ONNX allows pads past half the kernel, Mycel's pooling does not: pad explicitly
            # (-inf for max, 0 for average), then pool without padding; an average that
            # excludes the padding divides by the pooled mask of real positions.
            t, b, l, r = eval(pad)
            flat = (0, 0, 0, 0, t, b, l, r)
            fill = "float('-inf')" if op == "max_pool2d" else "0.0"
            call = (lambda v: f"P.{op}(P.pad({v}, paddings={flat!r}, value={fill}), kernel_size={_ints(kernel)!r}, "
                    f"strides={strides!r}, pad_mode='valid', pad=(0,))")
            if op == "avg_pool2d" and not include:
                return f"P.div({call(x)}, {call(f'P.ones_like({x})')})"
            return call(x)
        return (f"P.{op}({x}, kernel_size={_ints(kernel)!r}, strides={strides!r}, "
                f"pad_mode={mode}, pad={pad}{extra})")

    def rule(e):
        x = e.arg(0)
        if len(e.attr("kernel_shape") or ()) == 1:  # 1-d: the 2-d op over (N, C, 1, L)
            if len(e.node.outputs) > 1 and e.node.outputs[1]:
                return list(window(e, x))  # the taps take 1-d windows as they are
            _as_2d_window(e)
            x4 = e.bind(f"P.expand_dims({x}, axis=2)")
            return [f"P.squeeze({window(e, x4)}, axis=(2,))"]
        y = window(e, x)
        return list(y) if isinstance(y, tuple) else [y]
    return rule


def _global_pool(op):
    def rule(e):
        x = e.arg(0)
        return [f"P.{op}({x}, axis=S['spatial_axes'](S['rank_of']({x}.shape)), keep_dims=True)"]
    return rule


def _batch_norm_training(e):
    """training_mode=1: Y normalized with the batch's mean and (population) variance, and the
    running statistics updated as ONNX says: input_mean * momentum + current * (1 - momentum)."""
    x, scale, bias, mean, var = e.args()[:5]
    eps, m = float(e.attr("epsilon", 1e-5)), float(e.attr("momentum", 0.9))
    axes = f"S['bn_axes']({x}.shape)"
    mu = e.bind(f"P.mean({x}, axis={axes}, keep_dims=True)")
    centered = e.bind(f"P.sub({x}, {mu})")
    v = e.bind(f"P.mean(P.mul({centered}, {centered}), axis={axes}, keep_dims=True)")
    shape = f"S['bn_channel_shape']({x}.shape)"
    y = (f"P.add(P.mul(P.div({centered}, P.sqrt(P.add({v}, {eps!r}))), P.reshape({scale}, {shape})), "
         f"P.reshape({bias}, {shape}))")
    outs = [y]
    n_out = len(e.node.outputs)
    if n_out > 1:
        flat_mu, flat_v = f"P.reshape({mu}, {mean}.shape)", f"P.reshape({v}, {var}.shape)"
        outs.append(f"P.add(P.mul({mean}, {m!r}), P.mul({flat_mu}, {1.0 - m!r}))")
    if n_out > 2:
        outs.append(f"P.add(P.mul({var}, {m!r}), P.mul({flat_v}, {1.0 - m!r}))")
    return outs


def _batch_norm(e):
    if e.attr("training_mode", 0):
        return _batch_norm_training(e)
    if any(o for o in e.node.outputs[1:]):
        e.fail("running mean/var outputs are not supported (inference only)")
    return [_call("batch_norm", *e.args()[:5], is_training=False, epsilon=float(e.attr("epsilon", 1e-5))) + "[0]"]


def _gemm(e):
    a, b, c = e.arg(0), e.arg(1), e.arg(2)
    alpha, beta = float(e.attr("alpha", 1.0)), float(e.attr("beta", 1.0))
    ta, tb = bool(e.attr("transA", 0)), bool(e.attr("transB", 0))
    c_1d = c is None or (e.node.inputs[2] in e.consts and e.consts[e.node.inputs[2]].ndim == 1)
    if tb and not ta and alpha == 1.0 and beta == 1.0 and c_1d:
        return [_call("dense", a, b, c)]
    y = _call("matmul", a, b, transpose_a=ta, transpose_b=tb)
    if alpha != 1.0:
        y = f"P.mul({y}, {alpha!r})"
    if c is not None:
        y = f"P.add({y}, {c if beta == 1.0 else f'P.mul({c}, {beta!r})'})"
    return [y]


def _div(e):
    a, b = e.arg(0), e.arg(1)
    dt = e.dtype(0)
    if dt is not None and dt.kind in "iu":  # integer Div truncates toward zero
        q = f"P.floor_div(P.abs({a}), P.abs({b}))"
        return [f"P.cast(P.mul(P.mul({q}, P.sign({a})), P.sign({b})), dtype=D.{dt.name})"]
    return [_call("div", a, b)]


def _pow(e):
    a, b = e.arg(0), e.arg(1)
    dt = e.dtype(0)
    y = _call("pow", a, b)
    if dt is not None and e.dtype(1) is not None and dt != e.dtype(1):  # the base's type, as ONNX
        return [f"P.cast({y}, dtype=D.{dt.name})"]
    return [y]


def _binary(op):
    return lambda e: [_call(op, e.arg(0), e.arg(1))]


def _unary(op, **attrs):
    return lambda e: [_call(op, e.arg(0), **attrs)]


def _variadic(op):
    def rule(e):
        xs = [a for a in e.args() if a is not None]
        y = xs[0]
        for x in xs[1:]:
            y = _call(op, y, x)
        return [y if len(xs) > 1 else f"P.identity({y})"]
    return rule


def _clip(e):
    x = e.arg(0)
    if e.opset < 11:
        lo, hi = e.attr("min"), e.attr("max")
        lo = None if lo is None else repr(float(lo))
        hi = None if hi is None else repr(float(hi))
    else:
        lo, hi = e.arg(1), e.arg(2)
    if lo is not None:
        x = _call("maximum", x, lo)
    if hi is not None:
        x = _call("minimum", x, hi)
    return [x if (lo or hi) else f"P.identity({x})"]


def _softmax(op):
    def rule(e):
        axis = int(e.attr("axis", -1 if e.opset >= 13 else 1))
        if e.opset < 13:
            e.fail("opset < 13 Softmax (coerced to 2-d) is not supported")
        return [_call(op, e.arg(0), axis=axis)]
    return rule


def _reshape(e):
    x = e.arg(0)
    target = e.const_expr(1, "shape")
    return [f"P.reshape({x}, S['reshape_target']({x}.shape, {target}, {int(e.attr('allowzero', 0))}))"]


def _flatten(e):
    x = e.arg(0)
    return [f"P.reshape({x}, S['flatten_shape']({x}.shape, {int(e.attr('axis', 1))}))"]


def _axes(e, input_index):
    """Axes given as an attribute (older opsets) or as a constant input: an expression."""
    if "axes" in e.node.attrs:
        return repr(_ints(e.attr("axes")))
    if e.has(input_index):
        return e.const_expr(input_index, "axes")
    return "None"


def _unsqueeze(e):
    x = e.arg(0)
    return [f"P.reshape({x}, S['unsqueeze_shape']({x}.shape, {_axes(e, 1)}))"]


def _squeeze(e):
    x = e.arg(0)
    return [f"P.reshape({x}, S['squeeze_shape']({x}.shape, {_axes(e, 1)}))"]


def _reduce(op):
    def rule(e):
        x = e.arg(0)
        axes = _axes(e, 1)
        keep = bool(e.attr("keepdims", 1))
        noop = int(e.attr("noop_with_empty_axes", 0))
        if noop and axes in ("None", "()"):
            return [f"P.identity({x})"]
        red = f"S['reduce_axes'](S['rank_of']({x}.shape), {axes}, 0)"
        y = f"P.{op}({x}, axis={red}, keep_dims={keep})"
        if op in ("max", "min"):  # an empty set reduces to the op's identity (ONNX), not an error
            y = (f"(P.fill(type={x}.dtype, shape=S['reduced_shape']({x}.shape, {red}, {keep}), "
                 f"value=S['reduce_identity']({op!r}, {x}.dtype)) if S['reduces_empty']({x}.shape, {red}) else {y})")
        if noop and axes not in ("None", "()"):  # axes from a graph input: decided at compile time
            return [f"P.identity({x}) if len({axes}) == 0 else {y}"]
        return [y]
    return rule


def _transpose(e):
    x = e.arg(0)
    perm = e.attr("perm")
    return [f"P.transpose({x}, perm=S['perm_or_reverse'](S['rank_of']({x}.shape), {tuple(perm or ())!r}))"]


def _concat(e):
    xs = [a for a in e.args() if a is not None]
    return [f"P.concat(({', '.join(xs)},), axis={int(e.attr('axis'))})"]


def _cast(e):
    to = int(e.attr("to"))
    if to not in _DTYPES:
        e.fail(f"cast to ONNX data type {to} is not supported")
    return [f"P.cast({e.arg(0)}, dtype=D.{_DTYPES[to]})"]


def _gather(e):
    return [_call("gather", e.arg(0), e.arg(1), axis=int(e.attr("axis", 0)))]


def _scalar_input(e, i, what, default):
    """The value of optional scalar input i: a constant's, a graph input's (None on the first
    translation: the model is then specialized on its value, one compile per value), or `default`
    when absent."""
    if not e.has(i):
        return default
    name = e.node.inputs[i]
    if name in e.consts:
        value = np.asarray(e.consts[name]).reshape(-1)
        if value.size != 1:  # a malformed file: the scalar input holds no value, or several
            raise ValueError(f"ONNX import: op type '{e.node.op_type}': input '{name}' ({what}) must hold "
                             f"one value, got {value.size}")
        return value[0].item()
    if name in e.params:
        e.value_inputs.add(name)
        return None
    e.fail(f"input '{name}' ({what}) is computed in the graph; only a constant or a graph input is supported")


def _dropout(e):
    """Dropout: the identity (and an all-true mask) unless training_mode (opset 12+) is true and
    the ratio nonzero. Training with a `seed` draws the mask ONNX's reference implementation draws,
    numpy's MT19937 `RandomState(seed).uniform(0, 1, shape) >= ratio`, once per input shape (the
    reference reseeds at every call, so each run keeps it); without a seed a new mask is drawn
    from Mycel's generator at every run. Kept values are scaled by 1 / (1 - ratio)."""
    x = e.arg(0)
    identity = [f"P.identity({x})", f"P.cast(P.ones_like({x}), dtype=D.bool_)"]
    if e.opset < 12:  # Dropout-7/10: no training mode
        return identity
    training = _scalar_input(e, 2, "training_mode", False)
    if training is False or training == 0:
        return identity
    ratio = _scalar_input(e, 1, "ratio", 0.5)
    if training is None or ratio is None:  # translated again with the graph inputs' values
        return identity
    ratio = float(ratio)
    if not 0.0 <= ratio < 1.0:
        e.fail(f"ratio must lie in [0, 1), got {ratio}")
    if ratio == 0.0:  # nothing is dropped
        return identity
    seed = e.attr("seed")
    if seed is not None:
        if not 0 <= int(seed) < 2 ** 32:
            e.fail(f"seed must lie in [0, 2**32), got {seed}")
        scale = float(np.float32(1.0) / (np.float32(1.0) - np.float32(ratio)))
        mask = e.bind(f"S['dropout_mask']({x}.shape, {ratio!r}, {int(seed)})")
        return [f"P.mul(P.mul({x}, P.cast({mask}, dtype={x}.dtype)), {scale!r})", mask]
    drawn = e.bind(f"P.dropout({x}, keep_prob={1.0 - ratio!r})")
    return [f"{drawn}[0]", f"P.cast({drawn}[1], dtype=D.bool_)"]


def _slice(e):
    x = e.arg(0)
    if e.opset < 10:
        starts, ends, axes, steps = e.attr("starts"), e.attr("ends"), e.attr("axes"), None
    else:
        starts, ends = e.const_expr(1, "starts"), e.const_expr(2, "ends")
        axes = e.const_expr(3, "axes", required=False)
        steps = e.const_expr(4, "steps", required=False)
    if e.opset < 10:
        starts, ends, axes = repr(tuple(starts)), repr(tuple(ends)), repr(tuple(axes) if axes else None)
    v = e.bind(f"S['slice_args']({x}.shape, {starts}, {ends}, {axes}, {steps})")
    return [f"P.strided_slice({x}, begin={v}[0], end={v}[1], strides={v}[2], end_mask={v}[3])"]


def _layer_norm(e):
    axis = int(e.attr("axis", -1))
    if int(e.attr("stash_type", 1)) != 1:
        e.fail("stash_type other than float32 is not supported")
    x, scale, bias = e.arg(0), e.arg(1), e.arg(2)
    if bias is None:
        bias = f"P.zeros_like({scale})"
    r = e.bind(f"P.layer_norm({x}, {scale}, {bias}, begin_norm_axis={axis}, begin_params_axis={axis}, "
               f"epsilon={float(e.attr('epsilon', 1e-5))!r})")
    shape = f"S['stat_shape']({x}.shape, {axis})"
    return [f"{r}[0]", f"P.reshape({r}[1], {shape})", f"P.reshape({r}[2], {shape})"]


def _hard_sigmoid(e):
    a, b = float(e.attr("alpha", 0.2)), float(e.attr("beta", 0.5))
    x = e.arg(0)
    return [f"P.minimum(P.maximum(P.add(P.mul({x}, {a!r}), {b!r}), 0.0), 1.0)"]


def _hard_swish(e):
    x = e.arg(0)
    return [f"P.mul({x}, P.minimum(P.maximum(P.add(P.mul({x}, {1 / 6!r}), 0.5), 0.0), 1.0))"]


def _where(e):
    return [_call("select", e.arg(0), e.arg(1), e.arg(2))]


def _argmax(op):
    def rule(e):
        x, axis, keep = e.arg(0), int(e.attr("axis", 0)), bool(e.attr("keepdims", 1))
        if e.attr("select_last_index", 0):  # the first index of the reversed axis, counted back
            r = e.bind(f"S['reverse_args']({x}.shape, {axis})")
            xr = e.bind(f"P.strided_slice({x}, begin={r}[0], end={r}[1], strides={r}[2], end_mask={r}[3])")
            idx = _call(op, xr, axis=axis, keep_dims=keep)
            return [f"P.sub(S['dim']({x}.shape, {axis}) - 1, {idx})"]
        return [_call(op, x, axis=axis, keep_dims=keep)]
    return rule


def _tile(e):
    return [f"P.tile({e.arg(0)}, multiples={e.const_expr(1, 'repeats')})"]


def _gelu(e):
    approx = e.attr("approximate", "none")
    return [_call("gelu", e.arg(0), approximate="tanh" if approx == "tanh" else "none")]


RULES = {
    "Conv": _conv, "MaxPool": _pool("max_pool2d"), "AveragePool": _pool("avg_pool2d"),
    "GlobalAveragePool": _global_pool("mean"), "GlobalMaxPool": _global_pool("max"),
    "BatchNormalization": _batch_norm, "Gemm": _gemm, "MatMul": _binary("matmul"),
    "Add": _binary("add"), "Sub": _binary("sub"), "Mul": _binary("mul"), "Div": _div,
    "Pow": _pow, "Equal": _binary("equal"), "Less": _binary("less"),
    "Greater": _binary("greater"), "LessOrEqual": _binary("less_equal"),
    "GreaterOrEqual": _binary("greater_equal"), "And": _binary("logical_and"),
    "Or": _binary("logical_or"), "Xor": _binary("logical_xor"),
    "Max": _variadic("maximum"), "Min": _variadic("minimum"), "Sum": _variadic("add"),
    "Relu": _unary("relu"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"), "Exp": _unary("exp"),
    "Log": _unary("log"), "Sqrt": _unary("sqrt"), "Neg": _unary("neg"), "Abs": _unary("abs"),
    "Erf": _unary("erf"), "Reciprocal": _unary("reciprocal"), "Floor": _unary("floor"),
    "Ceil": _unary("ceil"), "Sin": _unary("sin"), "Cos": _unary("cos"), "Tan": _unary("tan"),
    "Sign": _unary("sign"), "Identity": _unary("identity"), "Not": _unary("logical_not"),
    "Softplus": _unary("softplus"), "IsNaN": _unary("isnan"),
    "LeakyRelu": lambda e: [_call("leaky_relu", e.arg(0), alpha=float(e.attr("alpha", 0.01)))],
    "Elu": lambda e: [_call("elu", e.arg(0), alpha=float(e.attr("alpha", 1.0)))],
    "HardSigmoid": _hard_sigmoid, "HardSwish": _hard_swish, "Clip": _clip, "Gelu": _gelu,
    "Softmax": _softmax("softmax"), "LogSoftmax": _softmax("log_softmax"),
    "Reshape": _reshape, "Flatten": _flatten, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze,
    "Transpose": _transpose, "Concat": _concat, "Cast": _cast, "Gather": _gather,
    "Dropout": _dropout, "Slice": _slice, "LayerNormalization": _layer_norm, "Where": _where,
    "ArgMax": _argmax("argmax"), "ArgMin": _argmax("argmin"), "Tile": _tile,
    "ReduceMean": _reduce("mean"), "ReduceSum": _reduce("sum"), "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"), "ReduceProd": _reduce("prod"),
}


def _translate(m, known):
    """(source of construct, tensors the Cell holds, input names, output count)."""
    g = m.graph
    e = _Emitter(g, m.opset)
    params = []
    for vi in g.inputs:
        if vi.name in known:
            e.consts[vi.name] = known[vi.name]
            continue
        p = f"x{len(params)}"
        params.append(p)
        e.params[vi.name] = p
        e.exprs[vi.name] = p
    if not g.outputs:
        raise ValueError("ONNX import: the graph declares no outputs")
    for node in g.nodes:
        e.node = node
        if not node.outputs:
            raise ValueError(f"ONNX import: node #{g.nodes.index(node)} ('{node.name}', "
                             f"{node.op_type}) has no outputs")
        if node.domain not in ("", "ai.onnx"):
            e.fail(f"domain '{node.domain}' is not supported")
        if node.op_type == "Constant":
            value = node.attrs.get("value")
            if value is None:
                for k, conv in (("value_float", np.float32), ("value_floats", np.float32),
                                ("value_int", np.int64), ("value_ints", np.int64)):
                    if k in node.attrs:
                        value = np.array(node.attrs[k], conv)
            if value is None:
                e.fail("only value/value_float(s)/value_int(s) constants are supported")
            e.consts[node.outputs[0]] = np.asarray(value)
            continue
        rule = RULES.get(node.op_type)
        if rule is None:
            e.fail("not supported")
        exprs = rule(e)
        for out, expr in zip(node.outputs, exprs):
            if out:
                e.exprs[out] = e.bind(expr)
        for out in node.outputs[len(exprs):]:
            if out:
                e.fail(f"output '{out}' is not supported")
    outs = []
    for o in g.outputs:
        e.node = onnx_model.Node("output", o.name, [o.name], [o.name], {})
        outs.append(e.arg(0))
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ",)"
    head = f"    def construct(self, {', '.join(params)}):" if params else "    def construct(self):"
    value_inputs = [i for i, vi in enumerate(g.inputs) if vi.name in e.value_inputs]
    return ("\n".join([head] + e.lines + [f"        return {ret}"]) + "\n", e.tensors,
            [vi.name for vi in g.inputs if vi.name not in known], value_inputs)


class OnnxModel(nn.Cell):
    """An imported ONNX model: call it with the graph's inputs (Tensors or numpy arrays, in the
    order of `input_names`); it always runs compiled (graph mode)."""

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"ONNX model takes {len(self.input_names)} inputs {self.input_names}, "
                            f"got {len(inputs)}")
        inputs = tuple(x if isinstance(x, Tensor) else Tensor(np.asarray(x)) for x in inputs)
        old = mycel.get_context("mode")
        if old != mycel.GRAPH_MODE:
            mycel.set_context(mode=mycel.GRAPH_MODE)
        try:
            return super().__call__(*inputs)
        finally:
            if old != mycel.GRAPH_MODE:
                mycel.set_context(mode=old)


class OnnxModelBySpec(nn.Cell):
    """An imported model some of whose inputs are shapes or axes (Reshape's shape, Slice's starts
    given as graph inputs): each distinct value of those inputs gets its own OnnxModel, compiled
    with them as constants (specialization on value)."""

    def __init__(self, m, source_name, value_inputs):
        super().__init__()
        object.__setattr__(self, "_model", m)
        object.__setattr__(self, "_source_name", source_name)
        object.__setattr__(self, "value_inputs", value_inputs)
        object.__setattr__(self, "input_names", [vi.name for vi in m.graph.inputs])
        object.__setattr__(self, "output_names", [o.name for o in m.graph.outputs])
        object.__setattr__(self, "_variants", {})

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"ONNX model takes {len(self.input_names)} inputs {self.input_names}, "
                            f"got {len(inputs)}")
        values = {self.input_names[i]: np.asarray(inputs[i].asnumpy() if isinstance(inputs[i], Tensor)
                                                  else inputs[i]) for i in self.value_inputs}
        key = tuple((k, v.dtype.str, v.shape, v.tobytes()) for k, v in values.items())
        cell = self._variants.get(key)
        if cell is None:
            cell = from_model(self._model, self._source_name, known=values)
            self._variants[key] = cell
        rest = [x for i, x in enumerate(inputs) if i not in self.value_inputs]
        return cell(*rest)


_counter = [0]


def from_model(m, source_name="<onnx>", known=None):
    """An OnnxModel Cell for a decoded onnx_model.Model; `known` gives values of graph inputs that
    are shapes or axes (they become constants)."""
    src_body, tensors, input_names, value_inputs = _translate(m, known or {})
    if value_inputs:
        return OnnxModelBySpec(m, source_name, value_inputs)
    _counter[0] += 1
    filename = f"<onnx:{source_name}:{_counter[0]}>"
    src = f"class Imported(OnnxModel):\n{src_body}"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # graph mode reads it
    scope = {"OnnxModel": OnnxModel, "P": _mycel.ops, "S": SHAPE_RULES, "D": mycel}
    exec(compile(src, filename, "exec"), scope)
    cell = scope["Imported"]()
    for k, t in tensors.items():
        setattr(cell, k, t)
    object.__setattr__(cell, "input_names", input_names)
    object.__setattr__(cell, "output_names", [o.name for o in m.graph.outputs])
    object.__setattr__(cell, "source", src)
    object.__setattr__(cell, "opset", m.opset)
    cell.set_train(False)
    return cell


def load_model(path):
    """Imports the ONNX model at `path` as an OnnxModel Cell (graph mode)."""
    m = onnx_model.load(path)
    if m.opset and m.opset < 7:
        raise Unsupported(f"ONNX import: {path} uses opset {m.opset}; opset 7 or newer is needed")
    return from_model(m, source_name=str(path).rsplit("/", 1)[-1])


def load_model_from_bytes(data, name="<bytes>"):
    """Imports an ONNX model from its serialized bytes."""
    return from_model(onnx_model.model(data), source_name=name)


