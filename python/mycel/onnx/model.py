"""Reads an ONNX ModelProto into plain Python objects (graph, nodes, attributes, initializers as
numpy arrays), checking every size against the bytes present: a truncated or hostile file gives a
ValueError naming what is wrong, never a crash or a huge allocation."""
from dataclasses import dataclass, field

import numpy as np

from mycel.onnx import proto as pb

# TensorProto.DataType code -> numpy dtype (what the importer can hold as an array).
NP_DTYPES = {pb.FLOAT: np.float32, pb.UINT8: np.uint8, pb.INT8: np.int8, pb.UINT16: np.uint16,
             pb.INT16: np.int16, pb.INT32: np.int32, pb.INT64: np.int64, pb.BOOL: np.bool_,
             pb.FLOAT16: np.float16, pb.DOUBLE: np.float64, pb.UINT32: np.uint32, pb.UINT64: np.uint64}
MAX_ELEMENTS = 1 << 34  # a tensor claiming more elements than this is rejected before reading


@dataclass
class ValueInfo:
    name: str
    elem_type: int = 0
    shape: tuple = None  # ints, strings (symbolic) or None (unknown) per dim; None when unranked


@dataclass
class Node:
    op_type: str
    name: str
    inputs: list
    outputs: list
    attrs: dict
    domain: str = ""


@dataclass
class Graph:
    name: str
    nodes: list
    initializers: dict  # name -> np.ndarray
    inputs: list        # ValueInfo, initializers excluded
    outputs: list       # ValueInfo
    value_info: dict = field(default_factory=dict)


@dataclass
class Model:
    ir_version: int
    opset: int  # version of the default ("" / "ai.onnx") domain
    graph: Graph
    producer: str = ""


def _one(fields, k, default=None):
    v = fields.get(k)
    return v[-1] if v else default


def _int(fields, k, default=0):
    """The last value of varint field k (protobuf's rule for a repeated scalar), checked."""
    return pb.integer(_one(fields, k, default), f"field {k}")


def tensor(data):
    """numpy array of a TensorProto (dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7,
    name 8, raw_data 9, double_data 10, uint64_data 11, data_location 14)."""
    f = pb.parse(data, "TensorProto")
    name = pb.text(_one(f, 8, b""))
    dims = pb.unpack_ints(f.get(1, []))
    code = _int(f, 2)
    if _int(f, 14) == 1 or 13 in f:
        raise ValueError(f"ONNX tensor '{name}': external data is not supported")
    if code not in NP_DTYPES:
        raise ValueError(f"ONNX tensor '{name}': data type {code} is not supported")
    if any(d < 0 for d in dims):
        raise ValueError(f"ONNX tensor '{name}': negative dimension in {dims}")
    count = 1
    for d in dims:
        count *= d
        if count > MAX_ELEMENTS:
            raise ValueError(f"ONNX tensor '{name}': {dims} has more than {MAX_ELEMENTS} elements")
    dtype = np.dtype(NP_DTYPES[code])
    raw = _one(f, 9)
    if raw is not None:
        raw = pb.blob(raw, f"ONNX tensor '{name}': raw_data")
        if len(raw) != count * dtype.itemsize:
            raise ValueError(f"ONNX tensor '{name}': raw_data has {len(raw)} bytes, dims {dims} of "
                             f"{dtype.name} need {count * dtype.itemsize}")
        arr = np.frombuffer(bytes(raw), dtype.newbyteorder("<")).astype(dtype)
    elif code in (pb.FLOAT,):
        arr = np.array(pb.unpack_floats(f.get(4, [])), np.float32)
    elif code == pb.DOUBLE:
        vals = b"".join(bytes(pb.blob(v, "double_data")) for v in f.get(10, []))
        if len(vals) % 8:
            raise ValueError(f"ONNX tensor '{name}': double_data is not a multiple of 8 bytes")
        arr = np.frombuffer(vals, "<f8").astype(np.float64)
    elif code == pb.INT64:
        arr = np.array(pb.unpack_ints(f.get(7, [])), np.int64)
    elif code in (pb.UINT32, pb.UINT64):
        arr = np.array([v & ((1 << 64) - 1) for v in pb.unpack_ints(f.get(11, []))], np.uint64).astype(dtype)
    elif code == pb.FLOAT16:
        arr = np.array(pb.unpack_ints(f.get(5, [])), np.uint16).view(np.float16)
    else:  # int32_data carries int8/16/32, uint8/16 and bool
        arr = np.array(pb.unpack_ints(f.get(5, [])), np.int64).astype(dtype)
    if arr.size != count:
        raise ValueError(f"ONNX tensor '{name}': {arr.size} values for dims {dims}")
    return name, arr.reshape(dims)


def _attribute(data):
    """(name, value) of an AttributeProto (f 2, i 3, s 4, t 5, g 6, floats 7, ints 8, strings 9,
    type 20)."""
    f = pb.parse(data, "AttributeProto")
    name = pb.text(_one(f, 1, b""))
    kind = _int(f, 20)
    if not kind:  # files from before the type field: the one value field present says it
        kind = next((k for fk, k in ((2, pb.A_FLOAT), (3, pb.A_INT), (4, pb.A_STRING), (5, pb.A_TENSOR),
                                     (7, pb.A_FLOATS), (8, pb.A_INTS), (9, pb.A_STRINGS)) if fk in f), 0)
    if kind == pb.A_FLOAT:
        return name, pb.float32(_one(f, 2, b"\0\0\0\0"), f"ONNX attribute '{name}'")
    if kind == pb.A_INT:
        return name, pb.signed(_one(f, 3, 0))
    if kind == pb.A_STRING:
        return name, pb.text(_one(f, 4, b""))
    if kind == pb.A_TENSOR:
        return name, tensor(_one(f, 5, b""))[1]
    if kind == pb.A_FLOATS:
        return name, tuple(pb.unpack_floats(f.get(7, [])))
    if kind == pb.A_INTS:
        return name, tuple(pb.unpack_ints(f.get(8, [])))
    if kind == pb.A_STRINGS:
        return name, tuple(pb.text(s) for s in f.get(9, []))
    if kind == pb.A_GRAPH:
        return name, _GraphAttr(bytes(pb.blob(_one(f, 6, b""), f"ONNX attribute '{name}'")))
    raise ValueError(f"ONNX attribute '{name}': attribute type {kind} is not supported")


@dataclass
class _GraphAttr:
    """A subgraph attribute (If/Loop bodies), kept undecoded: the importer rejects such ops."""
    data: bytes


def _value_info(data):
    f = pb.parse(data, "ValueInfoProto")
    vi = ValueInfo(pb.text(_one(f, 1, b"")))
    t = _one(f, 2)
    if t is None:
        return vi
    tensor_type = _one(pb.parse(t, "TypeProto"), 1)
    if tensor_type is None:
        return vi
    tt = pb.parse(tensor_type, "TypeProto.Tensor")
    vi.elem_type = _int(tt, 1)
    shape = _one(tt, 2)
    if shape is not None:
        dims = []
        for d in pb.parse(shape, "TensorShapeProto").get(1, []):
            df = pb.parse(d, "Dimension")
            dims.append(pb.signed(df[1][-1]) if 1 in df else pb.text(df[2][-1]) if 2 in df else None)
        vi.shape = tuple(dims)
    return vi


def _node(data):
    f = pb.parse(data, "NodeProto")
    attrs = dict(_attribute(a) for a in f.get(5, []))
    return Node(op_type=pb.text(_one(f, 4, b"")), name=pb.text(_one(f, 3, b"")),
                inputs=[pb.text(s) for s in f.get(1, [])], outputs=[pb.text(s) for s in f.get(2, [])],
                attrs=attrs, domain=pb.text(_one(f, 7, b"")))


def graph(data):
    """GraphProto: node 1, name 2, initializer 5, input 11, output 12, value_info 13."""
    f = pb.parse(data, "GraphProto")
    inits = {}
    for t in f.get(5, []):
        name, arr = tensor(t)
        inits[name] = arr
    inputs = [vi for vi in map(_value_info, f.get(11, [])) if vi.name not in inits]
    return Graph(name=pb.text(_one(f, 2, b"")), nodes=[_node(n) for n in f.get(1, [])],
                 initializers=inits, inputs=inputs, outputs=[_value_info(o) for o in f.get(12, [])],
                 value_info={vi.name: vi for vi in map(_value_info, f.get(13, []))})


def model(data):
    """ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (domain 1, version 2)."""
    f = pb.parse(data, "ModelProto")
    if 7 not in f:
        raise ValueError("ONNX model: no graph (is this an ONNX file?)")
    opset = 0
    for o in f.get(8, []):
        of = pb.parse(o, "OperatorSetIdProto")
        if pb.text(_one(of, 1, b"")) in ("", "ai.onnx"):
            opset = pb.signed(_one(of, 2, 0))
    return Model(ir_version=_int(f, 1), opset=opset, graph=graph(_one(f, 7)),
                 producer=pb.text(_one(f, 2, b"")))


def load(path):
    with open(path, "rb") as fh:
        return model(fh.read())
