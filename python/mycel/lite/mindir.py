"""MINDIR export: the optimized graph-mode IR (CompiledGraph.graph_data) flattened to registry
ops over numbered values, weights attached, and serialized by the C++ writer (FlatBuffers, see
src/mycel/lite/schema/mindir.fbs). Graph primitives that only route values (tuple_getitem,
depend, make_tuple) disappear here; anything else left in the graph is an error."""
import numpy as np

from mycel import _mycel
from mycel.common.graph_data import route
from mycel.common.tensor import Tensor


def _tensor_of(v):
    if isinstance(v, Tensor):
        return v
    if isinstance(v, bool):
        return Tensor(np.array(v))
    if isinstance(v, int):
        return Tensor(np.array(v, np.int64))
    if isinstance(v, float):
        return Tensor(np.array(v, np.float32))
    raise NotImplementedError(f"MINDIR export: a constant {v!r} of type {type(v).__name__} cannot be stored")


def flatten(data):
    """(values, weights, nodes, inputs, outputs) of a graph_data dict."""
    values, weights, nodes = [], [], []
    env = {}

    def new_value(name, abstract, weight=-1):
        if abstract is None or abstract[0] != "tensor":
            raise NotImplementedError(f"MINDIR export: value {name} is not a tensor ({abstract})")
        shape = [-1 if d is None else int(d) for d in abstract[1]]
        values.append((name, abstract[2], shape, weight))
        return len(values) - 1

    def weight_value(name, t):
        weights.append(t)
        return new_value(name, ("tensor", tuple(t.shape), t.dtype), len(weights) - 1)

    inputs = []
    folded = data.get("constant_args") or []
    for i, p in enumerate(data["params"]):
        if p["weight"] is not None:
            env[("param", i)] = weight_value(p["name"], p["weight"])
        elif i < len(folded) and folded[i]:
            continue
        else:
            env[("param", i)] = new_value(p["name"], p["abstract"])
            inputs.append(env[("param", i)])

    def value(ref):
        if ref[0] == "const":
            return -1 if ref[1] is None else weight_value(f"const_{len(weights)}", _tensor_of(ref[1]))
        return env[tuple(ref)]

    for n in data["nodes"]:
        if route(n, env, value, "MINDIR export"):
            continue
        key = ("node", n["id"])
        args = []
        for r in n["inputs"]:  # a variadic input (concat's tensors) arrives as one tuple
            v = value(r)
            args.extend(v) if isinstance(v, tuple) else args.append(v)
        ab = n["abstract"]
        if ab[0] == "tuple":
            outs = tuple(new_value(f"{n['op']}_{n['id']}_{j}", a) for j, a in enumerate(ab[1]))
            env[key] = outs
        else:
            outs = (new_value(f"{n['op']}_{n['id']}", ab),)
            env[key] = outs[0]
        nodes.append((n["op"], n["loc"] or "", args, list(outs), dict(n["attrs"])))
    out = env[tuple(data["output"])] if data["output"][0] != "const" else value(data["output"])
    outputs = list(out) if isinstance(out, tuple) else [out]
    return values, weights, nodes, inputs, outputs


def graph_to_mindir(data, report=None, pools=None):
    """MINDIR file bytes for a graph from CompiledGraph.graph_data. A quantized graph gets the
    int8 rewrites of mycel.lite.int8 (their counts go to `report`, a dict, when given); `pools`:
    the average poolings' calibrated input scales (quant.pool_qparams)."""
    values, weights, nodes, inputs, outputs = flatten(data)
    from mycel.lite import int8
    if int8.has_quantized_ops(nodes):
        values, weights, nodes, inputs, outputs = int8.rewrite(values, weights, nodes, inputs, outputs, report,
                                                               pools=pools)
    return _mycel.lite.serialize(values, weights, nodes, inputs, outputs)
