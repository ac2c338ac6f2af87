"""MINDIR files and the lite runtime: export -> load -> run equals graph mode for the zoo models,
the inference optimizations (batch_norm folding, relu fusion) happen, the file is 64-byte
aligned and checksummed, and damaged or hostile files are rejected with a ValueError (fuzz: no
crash, no hang)."""
import os
import struct
import subprocess

import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, nn, ops
from edge_helpers import MODELS, graph_outputs, randomize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = struct.Struct("<8sIIQQQQII8x")  # magic, version, header size, graph off/size, data off/size, CRCs


def _export(name, tmp_path, seed=0):
    make, shape = MODELS[name]
    net = randomize(make(), seed=seed)
    x = np.random.default_rng(seed).standard_normal((2,) + shape[1:]).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / name), file_format="MINDIR")
    return net, shape, path


@pytest.mark.parametrize("name", list(MODELS))
def test_lite_runs_zoo_models_like_graph_mode(name, tmp_path):
    net, shape, path = _export(name, tmp_path)
    assert path.endswith(".mindir")
    s = _mycel.lite.Session.from_file(path)
    st = s.stats()
    if name != "lenet5":  # every BatchNorm follows a conv: all folded
        assert st["batch_norms_folded"] > 0 and "batch_norm" not in s.node_ops
    assert st["activations_fused"] > 0 and any("+relu" in op for op in s.node_ops)
    assert s.input_shapes[0][0] == -1  # dynamic batch
    for batch in (1, 3, 1):  # re-planned per input shape
        x = np.random.default_rng(batch).standard_normal((batch,) + shape[1:]).astype(np.float32)
        got = s.run([Tensor(x)])[0].asnumpy()
        want = graph_outputs(net, x)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))
    if name != "lenet5":  # conv -> conv chains keep oneDNN's blocked layout between them
        assert s.stats()["num_blocked"] > 0
    unopt = _mycel.lite.Session.from_file(path, optimize=False)
    np.testing.assert_allclose(unopt.run([Tensor(x)])[0].asnumpy(), want, rtol=1e-4,
                               atol=1e-4 * max(1.0, np.abs(want).max()))


class _Consts(nn.Cell):
    """Two outputs, a concat and a constant subexpression the lite optimizer folds."""

    def __init__(self):
        super().__init__()
        self.w = mycel.Parameter(Tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10), name="w")

    def construct(self, x):
        scale = ops.exp(self.w) * 2.0  # weights only: folded at load
        h = ops.matmul(x, scale, transpose_b=True)
        return ops.relu(ops.concat((h, -h), axis=1)), ops.sum(h, axis=(1,))


def test_two_outputs_and_constant_folding(tmp_path):
    net = _Consts()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "c"), file_format="MINDIR")
    s = _mycel.lite.Session.from_file(path)
    got = [t.asnumpy() for t in s.run([Tensor(x)])]
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    h = x @ (np.exp(w) * 2).T
    np.testing.assert_allclose(got[0], np.maximum(np.concatenate([h, -h], 1), 0), rtol=1e-5)
    np.testing.assert_allclose(got[1], h.sum(1), rtol=1e-5)
    assert s.stats()["constants_folded"] >= 2


def test_file_layout_is_aligned_and_checksummed(tmp_path):
    _, _, path = _export("lenet5", tmp_path)
    data = open(path, "rb").read()
    magic, version, hsize, goff, gsize, doff, dsize, gcrc, dcrc = HEADER.unpack_from(data)
    assert magic == b"MYCELMIR" and version == 2 and hsize == 64 and goff == 64
    assert doff % 64 == 0 and doff + dsize == len(data) and goff + gsize <= doff
    assert data[goff + 4:goff + 8] == b"MYLT"  # the FlatBuffers file identifier


def test_input_checks(tmp_path):
    _, shape, path = _export("lenet5", tmp_path)
    s = _mycel.lite.Session.from_file(path)
    with pytest.raises(ValueError, match="takes 1 inputs, got 2"):
        s.run([Tensor(np.zeros(shape, np.float32))] * 2)
    with pytest.raises(ValueError, match=r"input 0 .* must be float32\(-1, 1, 32, 32\)"):
        s.run([Tensor(np.zeros((1, 1, 28, 28), np.float32))])
    with pytest.raises(ValueError, match="must be float32"):
        s.run([Tensor(np.zeros(shape, np.float64))])


def _with_header(data, **fields):
    names = ["magic", "version", "hsize", "goff", "gsize", "doff", "dsize", "gcrc", "dcrc"]
    vals = dict(zip(names, HEADER.unpack_from(data)))
    vals.update(fields)
    return HEADER.pack(*[vals[n] for n in names]) + data[64:]


def test_hostile_headers_are_rejected(tmp_path):
    _, _, path = _export("lenet5", tmp_path)
    data = open(path, "rb").read()
    cases = {
        "bad magic": (b"NOTAMODL" + data[8:], "bad magic"),
        "version": (_with_header(data, version=99), "format version 99"),
        "huge graph": (_with_header(data, gsize=1 << 62), "runs past the end"),
        "wrapping graph": (_with_header(data, gsize=(1 << 64) - 32), "runs past the end"),
        "data offset": (_with_header(data, doff=(1 << 63)), "weight section"),
        "truncated": (data[:-64], "weight section"),
        "graph crc": (data[:200] + bytes([data[200] ^ 1]) + data[201:], "checksum"),
        "data crc": (data[:-5] + bytes([data[-5] ^ 1]) + data[-4:], "checksum"),
        "empty": (b"", "fewer than"),
    }
    for what, (bad, msg) in cases.items():
        with pytest.raises(ValueError, match=msg):
            _mycel.lite.verify(bad)


def _serialize(values, weights, nodes, inputs, outputs):
    return _mycel.lite.serialize(values, weights, nodes, inputs, outputs)


def test_graph_level_attacks_are_rejected():
    v = lambda n: (n, "float32", [2], -1)  # noqa: E731
    w = Tensor(np.ones(2, np.float32))
    ok = _serialize([v("x"), ("w", "float32", [2], 0), v("y")], [w],
                    [("add", "", [0, 1], [2], {})], [0], [2])
    _mycel.lite.verify(ok)
    s = _mycel.lite.Session.from_bytes(ok)
    np.testing.assert_array_equal(s.run([Tensor(np.arange(2, dtype=np.float32))])[0].asnumpy(), [1, 2])
    # the writer refuses the same mistakes the reader does
    with pytest.raises(ValueError, match="before it is defined"):  # a cycle: y = add(x, z), z = add(y, x)
        _serialize([v("x"), v("y"), v("z")], [], [("add", "", [0, 2], [1], {}), ("add", "", [1, 0], [2], {})],
                   [0], [2])
    with pytest.raises(ValueError, match="refers to value 7"):
        _serialize([v("x"), v("y")], [], [("add", "", [0, 7], [1], {})], [0], [1])
    with pytest.raises(ValueError, match="redefines"):
        _serialize([v("x"), v("y")], [], [("relu", "", [0], [1], {}), ("relu", "", [0], [1], {})], [0], [1])
    with pytest.raises(ValueError, match="lacks its required input"):
        _serialize([v("x"), v("y")], [], [("add", "", [0], [1], {})], [0], [1])
    with pytest.raises(ValueError, match="never computed"):
        _serialize([v("x"), v("y")], [], [], [0], [1])
    with pytest.raises(ValueError, match="weight of value"):
        _serialize([("w", "float32", [3], 0)], [w], [], [], [0])


def test_fuzz_no_crash(tmp_path):
    """Random byte flips, truncations and splices of a valid file, each checked in a child process
    so that a crash would be counted (not kill the test run)."""
    _, _, path = _export("lenet5", tmp_path)
    script = os.path.join(ROOT, "tests", "python", "lite_fuzz_worker.py")
    out = subprocess.run([os.sys.executable, script, path, "250", "0"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "crashes 0" in out.stdout, out.stdout
