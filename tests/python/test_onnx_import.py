"""mycel.onnx.load_model: ONNX models become graph-mode Cells. Checked against ONNX's own backend
node tests (a fast subset per claimed op type; bench/onnx_node_tests.py runs them all), round
trips of exported zoo models, and clear errors for unsupported ops and damaged files."""
import numpy as np
import pytest

import mycel
import mycel.onnx
from mycel import Tensor
from edge_helpers import MODELS, graph_outputs, randomize

onnx = pytest.importorskip("onnx")
import onnx_conformance  # noqa: E402

CASES_PER_OP = 4  # the fast subset: the first cases of each claimed op type


@pytest.fixture(scope="module")
def node_cases():
    return onnx_conformance.collect(set(mycel.onnx.CLAIMED_OPS))


def test_claimed_op_types_pass_backend_node_tests(node_cases):
    rows = onnx_conformance.table(node_cases, limit=CASES_PER_OP)
    assert set(rows) == set(mycel.onnx.CLAIMED_OPS), set(mycel.onnx.CLAIMED_OPS) ^ set(rows)
    bad = {}
    for op, (counts, details) in rows.items():
        total = sum(counts.values()) - counts["no dtype"]
        if total and counts["pass"] < 0.9 * total:
            bad[op] = details
    assert not bad, bad


@pytest.mark.parametrize("name", list(MODELS))
def test_export_import_round_trip(name, tmp_path):
    make, shape = MODELS[name]
    net = randomize(make(), seed=3)
    x = np.random.default_rng(4).standard_normal((2,) + shape[1:]).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / name), file_format="ONNX")
    imported = mycel.onnx.load_model(path)
    want = graph_outputs(net, x)
    for batch in (2, 3):  # the exported batch dim is dynamic; each batch size compiles once
        xb = x if batch == 2 else np.random.default_rng(5).standard_normal((3,) + shape[1:]).astype(np.float32)
        want = graph_outputs(net, xb)
        got = imported(xb).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(want).max()))
    # the imported weights are Parameters under the ONNX initializer names
    names = {p.name for p in imported.get_parameters()}
    assert {p.name for p in net.trainable_params()} <= names


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    from onnx import helper
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def test_unsupported_op_names_op_and_node():
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    data = _model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                   helper.make_node("Hardmax", ["r"], ["y"], name="my_hardmax")], [x], [y])
    with pytest.raises(mycel.onnx.Unsupported, match=r"'Hardmax'.*'my_hardmax'"):
        mycel.onnx.load_model_from_bytes(data)
    with pytest.raises(NotImplementedError):  # Unsupported is a NotImplementedError
        mycel.onnx.load_model_from_bytes(data)


def test_shape_input_from_the_graph_is_specialized_by_value():
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    net = mycel.onnx.load_model_from_bytes(_model([helper.make_node("Reshape", ["x", "s"], ["y"])], [x, s], [y]))
    a = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(net(a, np.array([3, 4])).asnumpy(), a.reshape(3, 4))
    np.testing.assert_array_equal(net(a, np.array([4, -1])).asnumpy(), a.reshape(4, 3))
    np.testing.assert_array_equal(net(a, np.array([0, 3, 2])).asnumpy(), a.reshape(2, 3, 2))


def test_damaged_files_raise_value_error(tmp_path):
    net = randomize(MODELS["lenet5"][0]())
    path = mycel.export(net, Tensor(np.zeros((1, 1, 32, 32), np.float32)), file_name=str(tmp_path / "l"),
                        file_format="ONNX")
    data = open(path, "rb").read()
    rng = np.random.default_rng(0)
    for cut in list(rng.integers(1, len(data) - 1, 40)) + [1, 7, len(data) - 1]:
        with pytest.raises((ValueError, mycel.onnx.Unsupported)):
            mycel.onnx.load_model_from_bytes(data[:cut])
    crashes = 0
    for _ in range(60):  # flipped bytes: any outcome but a crash or a hang is fine
        b = bytearray(data)
        for i in rng.integers(0, len(b), 4):
            b[i] = int(rng.integers(0, 256))
        try:
            m = mycel.onnx.load_model_from_bytes(bytes(b))
            m(np.zeros((1, 1, 32, 32), np.float32))
        except (ValueError, TypeError, NotImplementedError):  # as tests/fuzz/targets.py allows
            pass
        except Exception:  # noqa: BLE001
            crashes += 1
    assert crashes == 0
    with pytest.raises(ValueError, match="claims"):  # a length prefix past the end of the file
        mycel.onnx.load_model_from_bytes(b"\x3a\xff\xff\xff\x0f")


def test_wire_type_mismatches_and_missing_outputs_raise_value_error():
    from onnx import TensorProto, helper
    # ModelProto.graph (field 7) sent as a varint of 2**40: the schema wants a message
    with pytest.raises(ValueError, match="length-delimited"):
        mycel.onnx.load_model_from_bytes(b"\x38" + bytes([0x80] * 5) + b"\x20")
    # ModelProto.ir_version (field 1) sent as a 2-byte message: the schema wants a varint
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    good = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [x])
    with pytest.raises(ValueError, match="varint"):
        mycel.onnx.load_model_from_bytes(good + b"\x0a\x02ab")  # the last value of a field wins
    with pytest.raises(ValueError, match="no outputs"):
        mycel.onnx.load_model_from_bytes(_model([helper.make_node("Relu", ["x"], [])], [x], [x]))
    with pytest.raises(ValueError, match="declares no outputs"):
        mycel.onnx.load_model_from_bytes(_model([helper.make_node("Relu", ["x"], ["y"])], [x], []))
