"""Rewrites that make an exported quantized network run int8 end to end in the lite runtime.

A quantized net exports (quant.set_int8) as quantize_linear -> qconv2d/qdense with float32
outputs followed by the float ops of the original net (batch_norm, relu, pooling, flatten) and
the next layer's quantize_linear. Each rewrite here but quantize_pools is exact, so the int8
model computes what the fake-quant float32 model computes, up to float rounding:

- fold_batch_norm: an inference batch_norm after a float-output qconv2d becomes part of its
  per-channel output scale and bias (a negative scale flips the channel's integer weights).
- fuse_relu: relu (or relu6) after a float-output qconv2d/qdense becomes the kernel's fused one.
- sink_quantize: quantize_linear after max_pool2d / flatten / reshape moves before it (both
  commute with a monotonic elementwise rounding), so pooling and reshapes run on uint8.
- fuse_requantize: quantize_linear of a float-output qconv2d/qdense (its only reader) becomes the
  kernel's uint8 output: int32 accumulators requantized straight to the next layer's scale.
- merge_quantize: identical quantize_linear nodes of one value (a residual block's two branches).
- quantize_pools / fold_pool_requantize: an average pooling (avg_pool2d, or a mean over H and W)
  whose input range calibration recorded (quant.pool_qparams) becomes quantize_linear then
  qavg_pool2d (exact int32 window sums), requantized straight to the next layer's input scale.
  The fake-quant net keeps these poolings float32: its sole difference from the int8 graph.
- fuse_qadd: a residual add (+ relu) whose sum only quantized layers read becomes qadd,
  requantized straight to their scale (exact: they quantize the float sum anyway). With
  EXACT_RESIDUAL (the default) a sum that a shortcut also reads stays float32 (add, then the next
  block's quantize_linear), as in the fake-quant net. EXACT_RESIDUAL = False quantizes it as
  well and lets the shortcut read it dequantized (fold_dequantize), as ONNX Runtime's QDQ int8
  adds do: faster, but each shortcut then carries its sum within half a step of the next
  layer's scale instead of exactly.
- requantize_shortcut (EXACT_RESIDUAL = False only): a qconv2d output that a quantize_linear and
  qadd nodes read (the stem feeding the first block) is written uint8 for both.

The graph is the flat form of mycel.lite.mindir.flatten: values, weights, nodes, inputs, outputs."""
import numpy as np

import mycel
from mycel.common.tensor import Tensor

_QOPS = ("qconv2d", "qdense")
_COMMUTING = ("max_pool2d", "flatten", "reshape")


class _Graph:
    def __init__(self, values, weights, nodes, inputs, outputs):
        self.values = [list(v) for v in values]  # [name, dtype, shape, weight index]
        self.weights = list(weights)
        self.nodes = [{"op": op, "loc": loc, "args": list(args), "outs": list(outs), "attrs": dict(attrs)}
                      for op, loc, args, outs, attrs in nodes]
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    def uses(self):
        u = [0] * len(self.values)
        for n in self.nodes:
            for a in n["args"]:
                if a >= 0:
                    u[a] += 1
        for o in self.outputs:
            u[o] += 1
        return u

    def producers(self):
        p = {}
        for k, n in enumerate(self.nodes):
            for o in n["outs"]:
                if o >= 0:
                    p[o] = k
        return p

    def weight(self, vid):
        if vid is None or vid < 0 or self.values[vid][3] < 0:
            return None
        return self.weights[self.values[vid][3]].asnumpy()

    def add_weight(self, name, array):
        t = Tensor(np.ascontiguousarray(array))
        self.weights.append(t)
        self.values.append([name, t.dtype, list(array.shape), len(self.weights) - 1])
        return len(self.values) - 1

    def new_value(self, name, dtype, shape):
        self.values.append([name, dtype, list(shape), -1])
        return len(self.values) - 1

    def result(self):
        """The flat graph with values and weights nobody reads dropped and ids renumbered."""
        used = set(self.inputs) | set(self.outputs)
        for n in self.nodes:
            used.update(a for a in n["args"] if a >= 0)
            used.update(o for o in n["outs"] if o >= 0)
        ids = sorted(used)
        remap = {old: new for new, old in enumerate(ids)}
        values, weights = [], []
        for old in ids:
            name, dtype, shape, w = self.values[old]
            if w >= 0:
                weights.append(self.weights[w])
                w = len(weights) - 1
            values.append((name, dtype, shape, w))
        r = lambda i: remap[i] if i >= 0 else -1  # noqa: E731
        nodes = [(n["op"], n["loc"], [r(a) for a in n["args"]], [r(o) for o in n["outs"]], n["attrs"])
                 for n in self.nodes]
        return values, weights, nodes, [r(i) for i in self.inputs], [r(o) for o in self.outputs]


def _float_out(n):
    return n["op"] in _QOPS and str(n["attrs"].get("out_dtype", mycel.float32)).lower().endswith("float32")


def _dtype_is(d, name):
    return str(d).lower().replace("mycel.", "") == name


def fold_batch_norm(g):
    uses, prod, dead, count = g.uses(), g.producers(), set(), 0
    for k, bn in enumerate(g.nodes):
        if bn["op"] != "batch_norm" or bn["attrs"].get("is_training") or len(bn["args"]) < 5:
            continue
        x = bn["args"][0]
        stats = [g.weight(a) for a in bn["args"][1:5]]
        if any(s is None for s in stats) or x not in prod or uses[x] != 1:
            continue
        if any(o >= 0 and uses[o] for o in bn["outs"][1:]):
            continue
        conv = g.nodes[prod[x]]
        if conv["op"] != "qconv2d" or not _float_out(conv) or conv["attrs"].get("relu") or conv["attrs"].get("relu6"):
            continue
        w = g.weight(conv["args"][1])
        if w is None:
            continue
        gamma, beta, mean, var = (s.astype(np.float64) for s in stats)
        s = gamma / np.sqrt(var + float(bn["attrs"]["epsilon"]))
        if not np.all(np.isfinite(s)) or np.any(s == 0):
            continue  # a zero scale has no per-channel int8 form; the batch_norm stays
        b0 = g.weight(conv["args"][2]) if len(conv["args"]) > 2 and conv["args"][2] >= 0 else None
        b0 = np.zeros_like(s) if b0 is None else b0.astype(np.float64)
        ws = np.asarray(conv["attrs"]["w_scale"], np.float64)
        neg = s < 0
        if neg.any():  # the scale stays positive; the channel's integers change sign instead
            w = np.where(neg.reshape(-1, 1, 1, 1), -w.astype(np.int16), w).astype(np.int8)
        name = g.values[conv["args"][1]][0]
        args = list(conv["args"][:2]) + [None]
        args[1] = g.add_weight(name + ".bn_folded", w) if neg.any() else conv["args"][1]
        args[2] = g.add_weight(name + ".bn_folded_bias", ((b0 - mean) * s + beta).astype(np.float32))
        conv["args"] = args
        conv["attrs"]["w_scale"] = tuple(float(v) for v in (ws * np.abs(s)).astype(np.float32))
        conv["outs"] = [bn["outs"][0]]
        dead.add(k)
        count += 1
    g.nodes = [n for k, n in enumerate(g.nodes) if k not in dead]
    return count


def fuse_relu(g):
    uses, prod, dead, count = g.uses(), g.producers(), set(), 0
    for k, n in enumerate(g.nodes):
        if n["op"] not in ("relu", "relu6") or not n["args"]:
            continue
        x = n["args"][0]
        if x not in prod or uses[x] != 1:
            continue
        p = g.nodes[prod[x]]
        if not _float_out(p) or p["attrs"].get("relu") or p["attrs"].get("relu6"):
            continue
        p["attrs"][n["op"]] = True
        p["outs"] = [n["outs"][0]]
        dead.add(k)
        count += 1
    g.nodes = [n for k, n in enumerate(g.nodes) if k not in dead]
    return count


def sink_quantize(g):
    count = 0
    changed = True
    while changed:
        changed = False
        uses, prod = g.uses(), g.producers()
        for k, q in enumerate(g.nodes):
            if q["op"] != "quantize_linear":
                continue
            v = q["args"][0]
            if v not in prod or uses[v] != 1:
                continue
            pk = prod[v]
            p = g.nodes[pk]
            if p["op"] not in _COMMUTING or len(p["outs"]) != 1:
                continue
            u = p["args"][0]
            if uses[u] != 1 or not _dtype_is(g.values[u][1], "float32"):
                continue
            # quantize(u) at the pooling's place, the pooling (now uint8) at the quantize's.
            qdt = g.values[q["outs"][0]][1]
            uq = g.new_value(g.values[u][0] + ".q", qdt, g.values[u][2])
            q["args"][0] = u
            qout = q["outs"][0]
            q["outs"] = [uq]
            p["args"][0] = uq
            p["outs"] = [qout]
            g.nodes[pk], g.nodes[k] = q, p
            count += 1
            changed = True
            break
    return count


def fuse_requantize(g):
    uses, prod, dead, count = g.uses(), g.producers(), set(), 0
    for k, q in enumerate(g.nodes):
        if q["op"] != "quantize_linear" or not _dtype_is(q["attrs"].get("dtype", "uint8"), "uint8"):
            continue
        v = q["args"][0]
        if v not in prod or uses[v] != 1:
            continue
        p = g.nodes[prod[v]]
        if not _float_out(p):
            continue
        p["attrs"].update(out_dtype=mycel.uint8, y_scale=float(q["attrs"]["scale"]),
                          y_zero_point=int(q["attrs"].get("zero_point", 0)))
        p["outs"] = [q["outs"][0]]
        dead.add(k)
        count += 1
    g.nodes = [n for k, n in enumerate(g.nodes) if k not in dead]
    return count


def merge_quantize(g):
    seen, alias, dead = {}, {}, set()
    for k, n in enumerate(g.nodes):
        n["args"] = [alias.get(a, a) for a in n["args"]]
        if n["op"] != "quantize_linear":
            continue
        key = (n["args"][0], float(n["attrs"]["scale"]), int(n["attrs"].get("zero_point", 0)),
               str(n["attrs"].get("dtype", "uint8")))
        if key in seen:
            alias[n["outs"][0]] = seen[key]
            dead.add(k)
        else:
            seen[key] = n["outs"][0]
    g.outputs = [alias.get(o, o) for o in g.outputs]
    g.nodes = [n for k, n in enumerate(g.nodes) if k not in dead]
    return len(dead)


def fuse_qadd(g, exact=True):
    """add (+ relu) whose result the next layer quantizes becomes qadd: the sum requantized
    straight to that scale (uint8). Other readers of the float sum (the next block's shortcut)
    read it dequantized, which fold_dequantize then moves into their qadd."""
    count = 0
    for a in list(g.nodes):
        if a["op"] != "add" or len(a["args"]) != 2 or len(a["outs"]) != 1:
            continue
        x, y = a["args"]
        if x < 0 or y < 0 or any(not _dtype_is(g.values[v][1], "float32") for v in (x, y)):
            continue
        if list(g.values[x][2]) != list(g.values[y][2]):
            continue  # broadcasting: qadd takes one shape
        uses = g.uses()
        s = a["outs"][0]
        readers = [n for n in g.nodes if s in n["args"]]
        relu = len(readers) == 1 and uses[s] == 1 and readers[0]["op"] == "relu"
        out = readers[0]["outs"][0] if relu else s
        quants = [n for n in g.nodes if out in n["args"] and n["op"] == "quantize_linear"
                  and _dtype_is(n["attrs"].get("dtype", "uint8"), "uint8")]
        if not quants:
            continue  # no calibrated scale for the sum: it stays float32
        if exact and any(n["op"] != "quantize_linear" for n in g.nodes if out in n["args"]):
            continue  # a shortcut reads the float sum: add + quantize_linear keep it exact
        q = quants[0]
        dead = [q] + ([readers[0]] if relu else [])
        a["op"] = "qadd"
        a["attrs"] = {"a_scale": 1.0, "a_zero_point": 0, "b_scale": 1.0, "b_zero_point": 0, "relu": relu,
                      "y_scale": float(q["attrs"]["scale"]), "y_zero_point": int(q["attrs"].get("zero_point", 0))}
        yq = q["outs"][0]
        a["outs"] = [yq]
        g.nodes = [n for n in g.nodes if all(n is not d for d in dead)]
        if g.uses()[out] > 0:  # other readers: the float sum, dequantized from the uint8 one
            deq = {"op": "dequantize_linear", "loc": a["loc"], "args": [yq], "outs": [out],
                   "attrs": {"scale": a["attrs"]["y_scale"], "zero_point": a["attrs"]["y_zero_point"]}}
            k = next(i for i, n in enumerate(g.nodes) if n is a)
            g.nodes.insert(k + 1, deq)
        count += 1
    return count


def requantize_shortcut(g, exact=True):
    """A float-output qconv2d/qdense whose result a quantize_linear reads and otherwise only qadd
    nodes (ResNet's stem feeding the first block and its shortcut) outputs uint8 at that scale
    (fuse_requantize's rewrite), its qadd readers reading the uint8 value."""
    count = 0
    if exact:
        return 0  # the shortcut reads the float value, as the fake-quant net does
    for p in g.nodes:
        if not _float_out(p) or len(p["outs"]) != 1:
            continue
        v = p["outs"][0]
        readers = [n for n in g.nodes if v in n["args"]]
        quants = [n for n in readers if n["op"] == "quantize_linear"
                  and _dtype_is(n["attrs"].get("dtype", "uint8"), "uint8")]
        if len(quants) != 1 or v in g.outputs or any(n["op"] not in ("qadd", "quantize_linear") for n in readers):
            continue
        if len(readers) == 1:
            continue  # fuse_requantize's case
        q = quants[0]
        scale, zp = float(q["attrs"]["scale"]), int(q["attrs"].get("zero_point", 0))
        p["attrs"].update(out_dtype=mycel.uint8, y_scale=scale, y_zero_point=zp)
        vq = q["outs"][0]
        p["outs"] = [vq]
        for n in readers:
            if n["op"] != "qadd":
                continue
            for i, side in enumerate(("a", "b")):
                if n["args"][i] == v:
                    n["args"][i] = vq
                    n["attrs"][side + "_scale"], n["attrs"][side + "_zero_point"] = scale, zp
        g.nodes = [n for n in g.nodes if n is not q]
        count += 1
    return count


def fold_dequantize(g):
    """A qadd input produced by dequantize_linear of uint8 reads the uint8 value itself, with its
    scale and zero point (the same float32 operand); the dequantize goes when nothing else reads it."""
    prod, count = g.producers(), 0
    for n in g.nodes:
        if n["op"] != "qadd":
            continue
        for i, side in enumerate(("a", "b")):
            v = n["args"][i]
            d = g.nodes[prod[v]] if v in prod else None
            if d is None or d["op"] != "dequantize_linear" or not _dtype_is(g.values[d["args"][0]][1], "uint8"):
                continue
            n["args"][i] = d["args"][0]
            n["attrs"][side + "_scale"] = float(d["attrs"]["scale"])
            n["attrs"][side + "_zero_point"] = int(d["attrs"].get("zero_point", 0))
            count += 1
    uses = g.uses()
    g.nodes = [n for n in g.nodes if n["op"] != "dequantize_linear" or any(uses[o] > 0 for o in n["outs"])]
    return count


def _pool_candidates(g):
    """Nodes that quant's calibration records as average poolings, in graph order: avg_pool2d
    and a mean over H and W, each of a 4-D float32 input."""
    out = []
    for n in g.nodes:
        if n["op"] not in ("avg_pool2d", "mean") or not n["args"] or len(n["outs"]) != 1:
            continue
        x = n["args"][0]
        if x < 0 or not _dtype_is(g.values[x][1], "float32") or len(g.values[x][2]) != 4:
            continue
        if n["op"] == "mean" and not is_spatial_mean(n["attrs"]):
            continue
        out.append(n)
    return out


def is_spatial_mean(attrs):
    """Whether a mean node's axes are H and W of a 4-D input: global average pooling."""
    axes = attrs.get("axis", ())
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    return sorted(int(a) % 4 for a in axes) == [2, 3]


def pools_match(cands, pools):
    """Whether the graph's average poolings, (op, input shape) in graph order, are the calls
    calibration recorded (quant.pool_qparams, call order): same number, ops and (C, H, W)."""
    if not pools or len(cands) != len(pools):
        return False
    for (op, shape), p in zip(cands, pools):
        if shape is None or len(shape) != 4 or any(d is None for d in shape[1:]):
            return False
        if p["op"] != op or tuple(shape[1:]) != tuple(p["shape"]) or min(shape[1:]) <= 0:
            return False
    return True


def quantize_pools(g, pools):
    """Each average pooling with a calibrated input scale (quant.pool_qparams, in call order, the
    graph's order) runs int8: quantize_linear of its input, qavg_pool2d at that scale, then
    dequantize_linear (fold_pool_requantize merges it into the next layer's quantize). A global
    mean becomes a whole-image window (and a flatten unless keep_dims). Nothing changes when the
    recorded calls and the graph's poolings disagree in number or shape."""
    cands = _pool_candidates(g)
    if not pools_match([(n["op"], g.values[n["args"][0]][2]) for n in cands], pools):
        return 0
    count = 0
    for n, p in zip(cands, pools):
        x, y = n["args"][0], n["outs"][0]
        name, shape = g.values[x][0], g.values[x][2]
        scale, zp = float(p["scale"]), int(p["zero_point"])
        xq = g.new_value(name + ".q", mycel.uint8, shape)
        quant = {"op": "quantize_linear", "loc": n["loc"], "args": [x], "outs": [xq],
                 "attrs": {"scale": scale, "zero_point": zp, "dtype": mycel.uint8}}
        q = {"x_scale": scale, "x_zero_point": zp, "y_scale": scale, "y_zero_point": zp}
        if n["op"] == "avg_pool2d":
            a = n["attrs"]
            q.update(kernel_size=list(a["kernel_size"]), strides=list(a["strides"]), pad_mode=a["pad_mode"],
                     pad=list(a["pad"]), count_include_pad=bool(a.get("count_include_pad", False)))
            pooled_shape, keep = g.values[y][2], True
        else:
            q.update(kernel_size=[int(shape[2]), int(shape[3])], strides=[1, 1], pad_mode="valid", pad=[0],
                     count_include_pad=False)
            pooled_shape, keep = [shape[0], shape[1], 1, 1], bool(n["attrs"].get("keep_dims", False))
        yq = g.new_value(g.values[y][0] + ".q", mycel.uint8, pooled_shape)
        chain = [quant, {"op": "qavg_pool2d", "loc": n["loc"], "args": [xq], "outs": [yq], "attrs": q}]
        if not keep:
            yf = g.new_value(g.values[y][0] + ".qflat", mycel.uint8, g.values[y][2])
            chain.append({"op": "flatten", "loc": n["loc"], "args": [yq], "outs": [yf], "attrs": {}})
            yq = yf
        chain.append({"op": "dequantize_linear", "loc": n["loc"], "args": [yq], "outs": [y],
                      "attrs": {"scale": scale, "zero_point": zp}})
        k = next(i for i, m in enumerate(g.nodes) if m is n)
        g.nodes[k:k + 1] = chain
        count += 1
    return count


def _reshape_before_dequantize(g):
    """dequantize_linear -> flatten/reshape (its only reader) becomes the reshape on the uint8
    values, then the dequantize (exact)."""
    changed = True
    while changed:
        changed = False
        uses = g.uses()
        for k, d in enumerate(g.nodes):
            if d["op"] != "dequantize_linear" or d["outs"][0] in g.outputs or uses[d["outs"][0]] != 1:
                continue
            readers = [(j, n) for j, n in enumerate(g.nodes) if d["outs"][0] in n["args"]]
            if len(readers) != 1 or readers[0][1]["op"] not in ("flatten", "reshape"):
                continue
            j, r = readers[0]
            if r["args"][0] != d["outs"][0] or len(r["outs"]) != 1:
                continue
            xq, y = d["args"][0], r["outs"][0]
            rq = g.new_value(g.values[y][0] + ".q", g.values[xq][1], g.values[y][2])
            r["args"][0], r["outs"] = xq, [rq]
            d["args"], d["outs"] = [rq], [y]
            g.nodes[k], g.nodes[j] = r, d
            changed = True
            break


def fold_pool_requantize(g):
    """qavg_pool2d (then maybe flatten/reshape) -> dequantize_linear -> one uint8 quantize_linear
    becomes qavg_pool2d requantizing straight to that quantize's scale: one rounding, as the
    float pooling followed by the quantize has. A float flatten/reshape between the dequantize
    and the quantize (ops.ReduceMean(keep_dims=True) then a reshape) first moves before the
    dequantize: a reshape commutes with a per-tensor dequantize."""
    _reshape_before_dequantize(g)
    prod, uses, count = g.producers(), g.uses(), 0
    dead = set()
    for d in g.nodes:
        if d["op"] != "dequantize_linear" or d["outs"][0] in g.outputs:
            continue
        readers = [n for n in g.nodes if d["outs"][0] in n["args"]]
        if len(readers) != 1 or readers[0]["op"] != "quantize_linear" or uses[d["outs"][0]] != 1:
            continue
        q = readers[0]
        if not _dtype_is(q["attrs"].get("dtype", "uint8"), "uint8"):
            continue
        v, chain = d["args"][0], []
        while v in prod and g.nodes[prod[v]]["op"] in ("flatten", "reshape") and uses[v] == 1:
            chain.append(g.nodes[prod[v]])
            v = g.nodes[prod[v]]["args"][0]
        if v not in prod or g.nodes[prod[v]]["op"] != "qavg_pool2d" or uses[v] != 1:
            continue
        pool = g.nodes[prod[v]]
        pool["attrs"]["y_scale"] = float(q["attrs"]["scale"])
        pool["attrs"]["y_zero_point"] = int(q["attrs"].get("zero_point", 0))
        (chain[0] if chain else pool)["outs"] = [q["outs"][0]]
        dead.update((id(d), id(q)))
        count += 1
    g.nodes = [n for n in g.nodes if id(n) not in dead]
    return count


EXACT_RESIDUAL = True  # rewrite's default (module doc)


def rewrite(values, weights, nodes, inputs, outputs, report=None, pools=None, exact=None):
    """The flat graph with the int8 rewrites applied (module doc); `report` (a dict) gets counts;
    `pools`: the average poolings' calibrated input scales (quant.pool_qparams)."""
    exact = EXACT_RESIDUAL if exact is None else bool(exact)
    g = _Graph(values, weights, nodes, inputs, outputs)
    counts = {"pools_quantized": quantize_pools(g, pools), "pool_requantizes_fused": fold_pool_requantize(g),
              "batch_norms_folded": fold_batch_norm(g), "relus_fused": fuse_relu(g),
              "quantizes_merged": merge_quantize(g), "quantizes_sunk": sink_quantize(g),
              "requantizes_fused": fuse_requantize(g), "adds_quantized": fuse_qadd(g, exact),
              "dequantizes_folded": fold_dequantize(g), "shortcuts_requantized": requantize_shortcut(g, exact)}
    if report is not None:
        report.update(counts)
    return g.result()


def has_quantized_ops(nodes):
    return any(n[0] in ("quantize_linear", "qconv2d", "qdense") for n in nodes)
