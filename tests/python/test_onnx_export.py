"""mycel.export(..., file_format="ONNX"): checker-clean opset-17 files whose outputs in ONNX
Runtime (an independent runtime) equal Mycel's, with the batch dimension left dynamic."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from edge_helpers import MODELS, graph_outputs, randomize

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", list(MODELS))
def test_zoo_model_runs_in_onnxruntime(name, tmp_path):
    make, shape = MODELS[name]
    net = randomize(make())
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / name), file_format="ONNX")
    assert path.endswith(".onnx")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version >= 17
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param and not dims[0].HasField("dim_value")  # dynamic batch
    assert [d.dim_value for d in dims[1:]] == list(shape[1:])
    sess = _session(path)
    for batch in (1, 3):  # a batch size other than the example's
        xb = np.random.default_rng(batch).standard_normal((batch,) + shape[1:]).astype(np.float32)
        got = sess.run(None, {sess.get_inputs()[0].name: xb})[0]
        want = graph_outputs(net, xb)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


class _Mixed(nn.Cell):
    """Ops beyond the zoo's: matmul with transposes, softmax, reshape, concat, reductions."""

    def __init__(self):
        super().__init__()
        self.w = mycel.Parameter(Tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)), name="w")

    def construct(self, x):
        h = ops.matmul(x, self.w, transpose_b=True)            # (N, 6)
        h = ops.concat((ops.sigmoid(h), ops.tanh(h)), axis=1)    # (N, 12)
        h = ops.softmax(h * 2.0 - 1.0, axis=-1)
        s = ops.sum(ops.exp(h), axis=(1,), keep_dims=True)
        return ops.reshape(h / s, (-1, 3, 4)), ops.mean(h, axis=(1,))


def test_mixed_ops_and_two_outputs(tmp_path):
    net = _Mixed()
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "mixed.onnx"), file_format="ONNX")
    onnx.checker.check_model(onnx.load(path), full_check=True)
    got = _session(path).run(None, {"x": x})
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        want = [t.asnumpy() for t in net(Tensor(x))]
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_bad_format_and_unsupported_op(tmp_path):
    net = randomize(MODELS["lenet5"][0]())
    x = Tensor(np.zeros((1, 1, 32, 32), np.float32))
    with pytest.raises(ValueError, match="file_format"):
        mycel.export(net, x, file_name=str(tmp_path / "a"), file_format="TFLITE")

    class Sorts(nn.Cell):
        def construct(self, x):
            return ops.cumsum(x, 0)

    with pytest.raises(NotImplementedError, match="cumsum"):
        mycel.export(Sorts(), Tensor(np.zeros((3,), np.float32)), file_name=str(tmp_path / "b"),
                     file_format="ONNX")
    assert not (tmp_path / "b.onnx").exists()


def test_training_flag_is_restored(tmp_path):
    net = randomize(MODELS["resnet18"][0]())
    net.set_train(True)
    mycel.export(net, Tensor(np.zeros((1, 3, 32, 32), np.float32)), file_name=str(tmp_path / "r"),
                 file_format="ONNX")
    assert net.training
