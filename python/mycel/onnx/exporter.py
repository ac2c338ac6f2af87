"""ONNX export: the graph-mode IR of a network's inference graph (specialized for the example
inputs, optimized: inlined, tuples eliminated, constants folded) written as an ONNX ModelProto,
opset 17. One rule per registry op turns an IR node into ONNX nodes; an op without a rule is an
error naming it and its source line."""
import numpy as np

from mycel.common.graph_data import route
from mycel.onnx import proto as pb
from mycel.onnx.proto import Writer

OPSET = 17
IR_VERSION = 8  # the IR version that goes with opset 17

_DTYPE_CODES = {"float32": pb.FLOAT, "float64": pb.DOUBLE, "float16": pb.FLOAT16, "int8": pb.INT8,
                "uint8": pb.UINT8, "int16": pb.INT16, "int32": pb.INT32, "int64": pb.INT64,
                "bool": pb.BOOL, "bfloat16": pb.BFLOAT16}


def dtype_code(dtype):
    name = str(dtype).lower().replace("mycel.", "")
    if name not in _DTYPE_CODES:
        raise TypeError(f"export: dtype {dtype} has no ONNX counterpart")
    return _DTYPE_CODES[name]


def tensor_proto(name, array):
    """TensorProto with raw little-endian data (fields: dims 1, data_type 2, name 8, raw_data 9)."""
    array = np.asarray(array, order="C")  # not ascontiguousarray: it makes a 0-d scalar 1-d
    w = Writer()
    w.packed_ints(1, array.shape)
    w.int(2, dtype_code(array.dtype.name if array.dtype != np.bool_ else "bool"))
    w.bytes(8, name)
    w.bytes(9, array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
    return w


def value_info(name, dtype, shape, dynamic_names):
    """ValueInfoProto name 1, type 2 -> TypeProto.tensor_type 1 -> elem_type 1, shape 2 -> dim 1
    -> dim_value 1 | dim_param 2."""
    shape_w = Writer()
    for i, d in enumerate(shape):
        dim = Writer()
        if d is None:
            dim.bytes(2, dynamic_names(i))
        else:
            dim.int(1, d)
        shape_w.message(1, dim)
    tensor_type = Writer().int(1, dtype_code(dtype)).message(2, shape_w)
    return Writer().bytes(1, name).message(2, Writer().message(1, tensor_type))


def attribute(name, value):
    """AttributeProto: name 1, f 2, i 3, s 4, floats 7, ints 8, type 20."""
    w = Writer().bytes(1, name)
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        w.int(3, int(value)).int(20, pb.A_INT)
    elif isinstance(value, float):
        w.float(2, value).int(20, pb.A_FLOAT)
    elif isinstance(value, str):
        w.bytes(4, value).int(20, pb.A_STRING)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in value):
        w.packed_ints(8, value).int(20, pb.A_INTS)
    elif isinstance(value, (list, tuple)):
        w.packed_floats(7, [float(v) for v in value]).int(20, pb.A_FLOATS)
    else:
        raise TypeError(f"export: attribute {name}={value!r} has no ONNX encoding")
    return w


class _Builder:
    """Accumulates ONNX nodes and initializers while the rules run."""

    def __init__(self):
        self.nodes = []
        self.initializers = []
        self.read = set()  # value names some node reads
        self._count = 0

    def fresh(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, array, hint="const"):
        name = self.fresh(hint)
        self.initializers.append(tensor_proto(name, np.asarray(array)))
        return name

    def node(self, op_type, inputs, outputs=None, **attrs):
        outputs = outputs or [self.fresh(op_type)]
        self.read.update(i for i in inputs if i)
        w = Writer()
        for i in inputs:
            w.bytes(1, i or "")
        for o in outputs:
            w.bytes(2, o)
        w.bytes(3, self.fresh("n_" + op_type)).bytes(4, op_type)
        for k, v in attrs.items():
            if v is not None:
                w.message(5, attribute(k, v))
        self.nodes.append(w)
        return outputs[0] if len(outputs) == 1 else outputs


def _pair(v):
    v = tuple(v)
    return v if len(v) == 2 else (v[-2], v[-1]) if len(v) > 2 else (v[0], v[0])


def _window_pads(attrs):
    """ONNX pads (top, left, bottom, right) and auto_pad from Mycel's pad_mode/pad (t, b, l, r)."""
    mode = attrs.get("pad_mode", "valid")
    if mode == "same":
        return None, "SAME_UPPER"  # Mycel puts the odd padding at the end, as SAME_UPPER does
    p = tuple(attrs.get("pad", (0,))) if mode == "pad" else (0,)
    t, b, l, r = (p * 4 if len(p) == 1 else (p[0], p[0], p[1], p[1]) if len(p) == 2 else p)
    return [t, l, b, r], None


def _conv(b, n, x, w, bias=None):
    pads, auto = _window_pads(n["attrs"])
    a = n["attrs"]
    return b.node("Conv", [x, w] + ([bias] if bias else []), strides=list(_pair(a["stride"])),
                  dilations=list(_pair(a["dilation"])), group=int(a["groups"]), pads=pads,
                  auto_pad=auto)


def _pool(op_type):
    def rule(b, n, x):
        a = n["attrs"]
        pads, auto = _window_pads(a)
        extra = {}
        if op_type == "AveragePool":
            extra["count_include_pad"] = int(bool(a.get("count_include_pad", False)))
        return b.node(op_type, [x], kernel_shape=list(_pair(a["kernel_size"])),
                      strides=list(_pair(a["strides"])), pads=pads, auto_pad=auto, **extra)
    return rule


def _batch_norm(b, n, x, scale, bias, mean, var):
    if n["attrs"].get("is_training"):
        raise NotImplementedError("export: batch_norm in training mode; call net.set_train(False)")
    return (b.node("BatchNormalization", [x, scale, bias, mean, var],
                   epsilon=float(n["attrs"]["epsilon"])), None, None)


def _dense(b, n, x, w, bias=None):
    if len(n["x_shape"]) == 2:
        return b.node("Gemm", [x, w] + ([bias] if bias else []), transB=1)
    wt = b.node("Transpose", [w], perm=[1, 0])
    y = b.node("MatMul", [x, wt])
    return b.node("Add", [y, bias]) if bias else y


def _matmul(b, n, x, y):
    a = n["attrs"]
    for flag, name, rank in (("transpose_a", "x", n["x_rank"]), ("transpose_b", "y", n["y_rank"])):
        if a.get(flag):
            perm = list(range(rank))
            perm[-2], perm[-1] = perm[-1], perm[-2]
            if name == "x":
                x = b.node("Transpose", [x], perm=perm)
            else:
                y = b.node("Transpose", [y], perm=perm)
    return b.node("MatMul", [x, y])


def _reduce(op_type):
    def rule(b, n, x):
        a = n["attrs"]
        axes = list(a.get("axis") or ())
        if op_type == "ReduceSum":  # opset 13+: axes is an input for ReduceSum only
            ins = [x] + ([b.const(np.array(axes, np.int64), "axes")] if axes else [])
            return b.node(op_type, ins, keepdims=int(bool(a["keep_dims"])))
        return b.node(op_type, [x], axes=axes or None, keepdims=int(bool(a["keep_dims"])))
    return rule


def _simple(op_type, **fixed):
    return lambda b, n, *xs: b.node(op_type, list(xs), **fixed)


def _clip(lo, hi):
    def rule(b, n, x):
        dt = np.dtype(n["dtype"])
        return b.node("Clip", [x, b.const(np.array(lo, dt), "min"), b.const(np.array(hi, dt), "max")])
    return rule


def _gelu(b, n, x):
    # opset 17 has no Gelu: x * 0.5 * (1 + erf(x / sqrt(2))), or the tanh form.
    dt = np.dtype(n["dtype"])
    if n["attrs"].get("approximate", "none") == "tanh":
        c = b.const(np.array(np.sqrt(2 / np.pi), dt))
        cube = b.node("Mul", [b.node("Mul", [x, x]), x])
        inner = b.node("Mul", [c, b.node("Add", [x, b.node("Mul", [b.const(np.array(0.044715, dt)), cube])])])
        t = b.node("Tanh", [inner])
    else:
        t = b.node("Erf", [b.node("Div", [x, b.const(np.array(np.sqrt(2.0), dt))])])
    half = b.node("Mul", [x, b.const(np.array(0.5, dt))])
    return b.node("Mul", [half, b.node("Add", [t, b.const(np.array(1.0, dt))])])


def _qparams(b, scale, zero_point, dtype):
    return b.const(np.array(scale, np.float32), "scale"), b.const(np.array(zero_point, dtype), "zero_point")


def _quantize(b, n, x):
    a = n["attrs"]
    dt = np.dtype(_np_dtype(a.get("dtype", "uint8")))
    return b.node("QuantizeLinear", [x, *_qparams(b, a["scale"], a.get("zero_point", 0), dt)])


def _dequantize(b, n, x):
    a = n["attrs"]
    dt = np.dtype(_np_dtype(n["x_dtype"]))
    return b.node("DequantizeLinear", [x, *_qparams(b, a["scale"], a.get("zero_point", 0), dt)])


def _qdq_operands(b, n, x, w):
    """QDQ form of a quantized op's operands: the uint8 input and the int8 weights dequantized
    (per output channel, axis 0) for the float op between them."""
    a = n["attrs"]
    xf = b.node("DequantizeLinear", [x, *_qparams(b, a["x_scale"], a.get("x_zero_point", 0), np.uint8)])
    ws = np.asarray(a["w_scale"], np.float32)
    wf = b.node("DequantizeLinear", [w, b.const(ws, "w_scale"), b.const(np.zeros(ws.shape, np.int8), "w_zero_point")],
                axis=0)
    return xf, wf


def _qoutput(b, n, y):
    a = n["attrs"]
    if a.get("relu6"):
        y = b.node("Clip", [y, b.const(np.float32(0), "clip_min"), b.const(np.float32(6), "clip_max")])
    elif a.get("relu"):
        y = b.node("Relu", [y])
    if _np_dtype(a.get("out_dtype", "float32")) == "uint8":
        y = b.node("QuantizeLinear", [y, *_qparams(b, a.get("y_scale", 1.0), a.get("y_zero_point", 0), np.uint8)])
    return y


def _qconv(b, n, x, w, bias=None):
    return _qoutput(b, n, _conv(b, n, *_qdq_operands(b, n, x, w), bias))


def _qdense(b, n, x, w, bias=None):
    return _qoutput(b, n, _dense(b, n, *_qdq_operands(b, n, x, w), bias))


def _pool_qdq(data, pools):
    """{node id: (scale, zero_point)} of the poolings that the QDQ file runs on uint8, as the int8
    MINDIR does (mycel.lite.int8): each average pooling (avg_pool2d, a mean over H and W) whose
    input range calibration recorded (`pools`, quant.pool_qparams) gets its input quantized at
    that scale; each max pooling read only by quantize_linear nodes of one scale (maybe through
    flatten/reshape) gets its input quantized at their scale, which is exact, since max commutes
    with the monotonic rounding. ONNX Runtime fuses DequantizeLinear -> pool -> QuantizeLinear
    into its int8 poolings."""
    from mycel.lite import int8
    nodes = [n for n in data["nodes"] if n["kind"] != "prim"]
    readers = {}
    for n in data["nodes"]:
        for r in n["inputs"]:
            if r[0] == "node":
                readers.setdefault(r[1], []).append(n)
    out_ref = tuple(data["output"])
    cands = []
    for n in nodes:
        if n["op"] not in ("avg_pool2d", "mean") or not n["inputs"]:
            continue
        shape, dtype = _shape_of(data, n["inputs"][0]), _dtype_of(data, n["inputs"][0])
        if shape is None or len(shape) != 4 or _np_dtype(dtype) != "float32":
            continue
        if n["op"] == "mean" and not int8.is_spatial_mean(n["attrs"]):
            continue
        cands.append((n, shape))
    marks = {}
    if int8.pools_match([(n["op"], shape) for n, shape in cands], pools or []):
        marks = {n["id"]: (float(p["scale"]), int(p["zero_point"])) for (n, _), p in zip(cands, pools)}

    def quantized_readers(nid):
        """The (scale, zero_point) of the uint8 quantize_linear nodes that alone read node nid's
        value (through flatten/reshape), else None."""
        if ("node", nid) == out_ref or not readers.get(nid):
            return None
        found = set()
        for r in readers[nid]:
            if r["op"] in ("flatten", "reshape") and r["kind"] != "prim":
                sub = quantized_readers(r["id"])
                if sub is None:
                    return None
                found.add(sub)
            elif r["op"] == "quantize_linear" and _np_dtype(r["attrs"].get("dtype", "uint8")) == "uint8":
                found.add((float(r["attrs"]["scale"]), int(r["attrs"].get("zero_point", 0))))
            else:
                return None
        return found.pop() if len(found) == 1 else None

    for n in nodes:
        if n["op"] == "max_pool2d" and _np_dtype(_dtype_of(data, n["inputs"][0])) == "float32":
            q = quantized_readers(n["id"])
            if q is not None:
                marks[n["id"]] = q
    return marks


def _global_mean(b, n, x):
    """A mean over H and W as ONNX's GlobalAveragePool (ONNX Runtime's QDQ int8 form has it)."""
    y = b.node("GlobalAveragePool", [x])
    return y if n["attrs"].get("keep_dims") else b.node("Flatten", [y], axis=1)


RULES = {
    "quantize_linear": _quantize,
    "dequantize_linear": _dequantize,
    "qconv2d": _qconv,
    "qdense": _qdense,
    "conv2d": _conv,
    "max_pool2d": _pool("MaxPool"),
    "avg_pool2d": _pool("AveragePool"),
    "batch_norm": _batch_norm,
    "dense": _dense,
    "matmul": _matmul,
    "flatten": _simple("Flatten", axis=1),
    "relu": _simple("Relu"),
    "relu6": _clip(0.0, 6.0),
    "sigmoid": _simple("Sigmoid"),
    "tanh": _simple("Tanh"),
    "silu": lambda b, n, x: b.node("Mul", [x, b.node("Sigmoid", [x])]),
    "gelu": _gelu,
    "exp": _simple("Exp"), "log": _simple("Log"), "sqrt": _simple("Sqrt"), "neg": _simple("Neg"),
    "abs": _simple("Abs"), "erf": _simple("Erf"), "reciprocal": _simple("Reciprocal"),
    "floor": _simple("Floor"), "ceil": _simple("Ceil"), "sin": _simple("Sin"), "cos": _simple("Cos"),
    "sign": _simple("Sign"), "identity": _simple("Identity"),
    "round": _simple("Round"),  # both round half to even
    "stop_gradient": _simple("Identity"),  # inference: gradients do not exist
    "clip_by_value": _simple("Clip"),
    "rsqrt": lambda b, n, x: b.node("Reciprocal", [b.node("Sqrt", [x])]),
    "square": lambda b, n, x: b.node("Mul", [x, x]),
    "add": _simple("Add"), "sub": _simple("Sub"), "mul": _simple("Mul"), "div": _simple("Div"),
    "pow": _simple("Pow"), "maximum": _simple("Max"), "minimum": _simple("Min"),
    "equal": _simple("Equal"), "less": _simple("Less"), "greater": _simple("Greater"),
    "softmax": lambda b, n, x: b.node("Softmax", [x], axis=int(n["attrs"]["axis"])),
    "log_softmax": lambda b, n, x: b.node("LogSoftmax", [x], axis=int(n["attrs"]["axis"])),
    "leaky_relu": lambda b, n, x: b.node("LeakyRelu", [x], alpha=float(n["attrs"]["alpha"])),
    "elu": lambda b, n, x: b.node("Elu", [x], alpha=float(n["attrs"]["alpha"])),
    "mean": _reduce("ReduceMean"), "sum": _reduce("ReduceSum"),
    "max": _reduce("ReduceMax"), "min": _reduce("ReduceMin"),
    "reshape": lambda b, n, x: b.node("Reshape", [x, b.const(np.array(n["attrs"]["shape"], np.int64), "shape")]),
    "transpose": lambda b, n, x: b.node("Transpose", [x], perm=list(n["attrs"]["perm"]) or None),
    "concat": lambda b, n, *xs: b.node("Concat", list(xs), axis=int(n["attrs"]["axis"])),
    "cast": lambda b, n, x: b.node("Cast", [x], to=dtype_code(n["attrs"]["dtype"])),
    "expand_dims": lambda b, n, x: b.node("Unsqueeze", [x, b.const(np.array([n["attrs"]["axis"]], np.int64), "axes")]),
    "squeeze": lambda b, n, x: b.node("Squeeze", [x] + ([b.const(np.array(n["attrs"]["axis"], np.int64), "axes")] if n["attrs"]["axis"] else [])),
    "gather": lambda b, n, x, i: b.node("Gather", [x, i], axis=int(n["attrs"]["axis"])),
    "adaptive_avg_pool2d": lambda b, n, x: _adaptive(b, n, x),
    "dropout": lambda b, n, x: (x, None),  # inference: identity (the mask output is unused)
}


def _adaptive(b, n, x):
    if tuple(n["attrs"]["output_size"]) != (1, 1):
        raise NotImplementedError("export: adaptive_avg_pool2d to a size other than (1, 1)")
    return b.node("GlobalAveragePool", [x])


def _np_dtype(dtype):
    name = str(dtype).lower().replace("mycel.", "")
    return {"bfloat16": "float32"}.get(name, name)


def graph_to_onnx(data, input_names=None, output_names=None, graph_name="mycel", pools=None):
    """ModelProto bytes for a graph from CompiledGraph.graph_data. In a quantized graph the
    poolings run on uint8 as in the int8 MINDIR (_pool_qdq; `pools`: the average poolings'
    calibrated input scales, quant.pool_qparams)."""
    b = _Builder()
    data = dict(data, _by_id={n["id"]: n for n in data["nodes"]})
    quantized = any(n["op"] in ("quantize_linear", "qconv2d", "qdense") for n in data["nodes"])
    pool_q = _pool_qdq(data, pools) if quantized else {}
    env = {}  # ("param", i) / ("node", id) -> ONNX value name (or a tuple of names)
    inputs = []
    names = list(input_names or [])
    params = []  # (name, weight): initializers, written at the end if a node reads them
    k = 0
    for i, p in enumerate(data["params"]):
        if p["weight"] is not None:
            name = p["name"]
            params.append((name, p["weight"]))
        else:
            if data["constant_args"] and i < len(data["constant_args"]) and data["constant_args"][i]:
                continue
            kind, shape, dtype = p["abstract"][:3] if p["abstract"][0] == "tensor" else (None,) * 3
            if kind != "tensor":
                raise NotImplementedError(f"export: input {p['name']} is not a tensor ({p['abstract']})")
            name = names[k] if k < len(names) else p["name"]
            k += 1
            inputs.append(value_info(name, dtype, shape, lambda d, name=name: "batch" if d == 0 else f"{name}_d{d}"))
        env[("param", i)] = name

    def value(ref):
        if ref[0] == "const":
            v = ref[1]
            if v is None:
                return None
            arr = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)
            if arr.dtype == np.float64 and not hasattr(v, "asnumpy"):
                arr = arr.astype(np.float32)
            return b.const(arr)
        return env[tuple(ref)]

    for n in data["nodes"]:
        if route(n, env, value, "export"):
            continue
        key = ("node", n["id"])
        rule = RULES.get(n["op"])
        if rule is None:
            raise NotImplementedError(f"export to ONNX: op '{n['op']}' (at {n['loc']}) has no ONNX rule; "
                                      f"supported: {', '.join(sorted(RULES))}")
        args = []
        for r in n["inputs"]:  # a variadic input (concat's tensors) arrives as one tuple
            v = value(r)
            args.extend(v) if isinstance(v, tuple) else args.append(v)
        while args and args[-1] is None:  # absent optional inputs (bias) are dropped
            args.pop()
        ab = n["abstract"]
        n = dict(n, dtype=_np_dtype(ab[2]) if ab[0] == "tensor" else "float32")
        shapes = [_shape_of(data, r) for r in n["inputs"]]
        n["x_shape"] = shapes[0] if shapes else None
        n["x_dtype"] = _dtype_of(data, n["inputs"][0]) if n["inputs"] else None
        n["x_rank"] = len(shapes[0]) if shapes and shapes[0] is not None else None
        n["y_rank"] = len(shapes[1]) if len(shapes) > 1 and shapes[1] is not None else None
        if n["id"] in pool_q:  # the pooling reads its input quantized (QDQ): int8 in ONNX Runtime
            qp = _qparams(b, *pool_q[n["id"]], np.uint8)
            args[0] = b.node("DequantizeLinear", [b.node("QuantizeLinear", [args[0], *qp]), *qp])
            if n["op"] == "mean":
                rule = _global_mean
        env[key] = rule(b, n, *args)

    out = env[tuple(data["output"])] if data["output"][0] != "const" else value(data["output"])
    out_abs = data["output_abstract"]
    outs = list(out) if isinstance(out, tuple) else [out]
    abss = out_abs[1] if out_abs[0] == "tuple" else [out_abs]
    graph = Writer()
    final = []
    onames = list(output_names or [])
    for j, (o, a) in enumerate(zip(outs, abss)):
        name = onames[j] if j < len(onames) else f"output_{j}"
        b.node("Identity", [o], [name])
        final.append(value_info(name, a[2], a[1], lambda d, j=j: "batch" if d == 0 else f"out{j}_d{d}"))
    # A quantized net's float weights are unread (its int8 copies are constants of the graph).
    b.initializers[:0] = [tensor_proto(name, w.asnumpy()) for name, w in params if name in b.read]
    for nd in b.nodes:
        graph.message(1, nd)
    graph.bytes(2, graph_name)
    for t in b.initializers:
        graph.message(5, t)
    for vi in inputs:
        graph.message(11, vi)
    for vi in final:
        graph.message(12, vi)
    model = Writer().int(1, IR_VERSION).bytes(2, "mycel").bytes(3, "0.1.0")
    model.message(7, graph)
    model.message(8, Writer().bytes(1, "").int(2, OPSET))
    return model.finish()


def _dtype_of(data, ref):
    if ref[0] == "param":
        a = data["params"][ref[1]]["abstract"]
    elif ref[0] == "node":
        a = data["_by_id"][ref[1]]["abstract"]
    else:
        return None
    return a[2] if a and a[0] == "tensor" else None


def _shape_of(data, ref):
    if ref[0] == "param":
        a = data["params"][ref[1]]["abstract"]
    elif ref[0] == "node":
        a = data["_by_id"][ref[1]]["abstract"] if "_by_id" in data else None
    else:
        return None
    return a[1] if a and a[0] == "tensor" else None
