"""Event files (src/mycel/insight): what our C++ writer puts in a file, TensorBoard's reader
(tensorboard.backend.event_processing) reads back with the same values."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from mycel import Tensor, _mycel
from insight_helpers import (accumulator, only_event_file, parsed_events, raw_events, record_spans)

PIL = pytest.importorskip("PIL.Image")
tb_crc = pytest.importorskip("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
tensor_util = pytest.importorskip("tensorboard.util.tensor_util")


def _write(path, events):
    w = _mycel.insight.EventWriter(str(path))
    for step, values in events:
        w.write(step, 1000.0 + step, values)
    w.close()
    return str(path)


def test_framing_and_crc_match_tensorboards(tmp_path):
    events = [(s, [("scalar", "loss", Tensor(np.float32(s)))]) for s in range(3)]
    path = _write(tmp_path / "x.tfevents", events)
    data = open(path, "rb").read()
    spans = record_spans(data)
    assert spans[-1][1] == len(data) and len(spans) == 4  # version record + 3 steps
    for start, end in spans:
        header = data[start:start + 8]
        (n,) = struct.unpack("<Q", header)
        payload = data[start + 12:start + 12 + n]
        assert struct.unpack("<I", data[start + 8:start + 12])[0] == tb_crc.masked_crc32c(header)
        assert struct.unpack("<I", data[end - 4:end])[0] == tb_crc.masked_crc32c(payload)
    first = parsed_events(path)[0]
    assert first.file_version == "brain.Event:2"


def test_scalars_read_back(tmp_path):
    losses = np.float32([2.5, 1.25, 0.75, 0.3, -1e-8])
    events = [(10 * i, [("scalar", "loss", Tensor(v)),
                        ("scalar", "lr", Tensor(np.float64(0.1 / (i + 1))))])
              for i, v in enumerate(losses)]
    path = _write(tmp_path / "s.tfevents", events)
    acc = accumulator(path)
    got = acc.Scalars("loss")
    assert [e.step for e in got] == [0, 10, 20, 30, 40]
    np.testing.assert_array_equal(np.float32([e.value for e in got]), losses)
    lrs = [e.value for e in acc.Scalars("lr")]
    np.testing.assert_allclose(lrs, np.float32(0.1 / np.arange(1, 6)))
    assert [e.wall_time for e in got] == [1000.0 + 10 * i for i in range(5)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_histograms_read_back(tmp_path, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((40, 25)) * 3).astype(dtype)
    path = _write(tmp_path / "h.tfevents", [(7, [("histogram", "w", Tensor(x))])])
    (h,) = accumulator(path).Histograms("w")
    hv = h.histogram_value
    xd = x.astype(np.float64)
    assert h.step == 7
    assert (hv.min, hv.max, hv.num) == (xd.min(), xd.max(), xd.size)
    np.testing.assert_allclose(hv.sum, xd.sum(), rtol=1e-12)
    np.testing.assert_allclose(hv.sum_squares, (xd * xd).sum(), rtol=1e-12)
    edges = np.concatenate([[hv.min], hv.bucket_limit])
    assert len(hv.bucket) == 30
    np.testing.assert_allclose(edges, np.linspace(xd.min(), xd.max(), 31), rtol=0, atol=1e-12)
    counts, _ = np.histogram(xd, bins=edges)
    np.testing.assert_array_equal(hv.bucket, counts)


def test_histogram_of_constant_and_nonfinite_values(tmp_path):
    x = np.float32([2.0, 2.0, np.nan, np.inf, 2.0])
    path = _write(tmp_path / "h.tfevents", [(0, [("histogram", "c", Tensor(x))])])
    hv = accumulator(path).Histograms("c")[0].histogram_value
    assert (hv.min, hv.max, hv.num, hv.sum) == (2.0, 2.0, 3.0, 6.0)  # NaN/inf are not drawn
    assert list(hv.bucket) == [3.0] and list(hv.bucket_limit) == [2.0]


def _canvas(x):
    """Reference grid: ceil(sqrt(N)) columns, HWC, as the writer documents it."""
    n, c, h, w = x.shape
    cols = int(np.ceil(np.sqrt(n)))
    rows = -(-n // cols)
    out = np.zeros((rows * h, cols * w, c), np.uint8)
    for i in range(n):
        r, k = divmod(i, cols)
        out[r * h:(r + 1) * h, k * w:(k + 1) * w] = x[i].transpose(1, 2, 0)
    return out


def _decode(image_event):
    import io
    return np.asarray(PIL.open(io.BytesIO(image_event.encoded_image_string)))


def test_images_read_back(tmp_path):
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, (5, 3, 6, 7)).astype(np.uint8)    # uint8: kept as is
    unit = rng.random((2, 1, 4, 3)).astype(np.float32)           # [0, 1]: times 255
    wide = (rng.standard_normal((1, 4, 3, 2)) * 10).astype(np.float64)  # [min, max] -> [0, 255]
    values = [("image", "rgb", Tensor(rgb)), ("image", "unit", Tensor(unit)),
              ("image", "wide", Tensor(wide))]
    path = _write(tmp_path / "i.tfevents", [(3, values)])
    acc = accumulator(path)
    (ev,) = acc.Images("rgb")
    want = _canvas(rgb)
    assert (ev.height, ev.width, ev.step) == (want.shape[0], want.shape[1], 3)
    np.testing.assert_array_equal(_decode(ev), want)
    got = _decode(acc.Images("unit")[0])
    want = _canvas(np.round(unit.astype(np.float64) * 255).astype(np.uint8))[..., 0]
    np.testing.assert_array_equal(got, want)
    lo, hi = wide.min(), wide.max()
    want = _canvas(np.round((wide - lo) * (255 / (hi - lo))).astype(np.uint8))
    np.testing.assert_array_equal(_decode(acc.Images("wide")[0]), want)


@pytest.mark.parametrize("dtype",
                         ["float32", "float64", "int32", "int64", "uint8", "float16", "bool"])
def test_tensors_read_back(tmp_path, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2, 3, 4)) * 5).astype(dtype)
    values = [("tensor", "t", Tensor(x)), ("tensor", "s", Tensor(x[0, 0, 0]))]
    path = _write(tmp_path / "t.tfevents", [(1, values)])
    acc = accumulator(path)
    got = tensor_util.make_ndarray(acc.Tensors("t")[0].tensor_proto)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, x)
    got = tensor_util.make_ndarray(acc.Tensors("s")[0].tensor_proto)
    np.testing.assert_array_equal(got, x[0, 0, 0])


def test_truncated_file_keeps_complete_records(tmp_path):
    events = [(s, [("scalar", "loss", Tensor(np.float32(s))),
                   ("histogram", "w", Tensor(np.arange(s + 3.0)))]) for s in range(12)]
    path = _write(tmp_path / "t.tfevents", events)
    data = open(path, "rb").read()
    spans = record_spans(data)
    cuts = sorted({len(data) - 1, spans[5][1], spans[5][1] + 3, spans[5][1] + 11, spans[5][1] + 15,
                   (spans[8][0] + spans[8][1]) // 2, spans[1][0] + 2})
    for cut in cuts:
        torn = tmp_path / f"torn_{cut}.tfevents"
        torn.write_bytes(data[:cut])
        complete = sum(1 for _, end in spans if end <= cut)
        events = parsed_events(str(torn))
        assert len(events) == complete, f"cut at {cut}"
        assert [e.step for e in events[1:]] == list(range(complete - 1))
        assert [e.summary.value[0].simple_value for e in events[1:]] == list(range(complete - 1))


def test_crash_mid_stream_leaves_readable_file(tmp_path):
    """A process killed while writing: every record flushed before is read back."""
    script = f"""
import os, numpy as np
from mycel import Tensor, _mycel
w = _mycel.insight.EventWriter({str(tmp_path / 'c.tfevents')!r})
for s in range(50):
    w.write(s, 0.0, [("scalar", "loss", Tensor(np.float32(s)))])
w.flush()
for s in range(50, 5000):
    w.write(s, 0.0, [("histogram", "w", Tensor(np.arange(200.0)))])
os.kill(os.getpid(), 9)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == -9, r.stderr
    events = raw_events(str(tmp_path / "c.tfevents"))
    assert len(events) >= 51  # the version record and the 50 flushed steps, at least


def test_writer_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="cannot open event file '.*no_such_dir/x'"):
        _mycel.insight.EventWriter(str(tmp_path / "no_such_dir" / "x"))
    w = _mycel.insight.EventWriter(str(tmp_path / "e.tfevents"))
    want = r"\[SummaryRecord\] 'loss' must be a scalar \(one element\), got shape \(2,\)"
    with pytest.raises(ValueError, match=want):
        w.write(0, 0.0, [("scalar", "loss", Tensor(np.zeros(2, np.float32)))])
    with pytest.raises(ValueError, match="plugin must be one of .* got 'audio'"):
        w.write(0, 0.0, [("audio", "a", Tensor(np.zeros(2, np.float32)))])
    with pytest.raises(ValueError, match="must be a 4-D NCHW image batch, got shape \\(3, 4\\)"):
        w.write(0, 0.0, [("image", "im", Tensor(np.zeros((3, 4), np.float32)))])
    w.close()
    with pytest.raises(ValueError, match="is closed"):
        w.write(1, 0.0, [])
    assert os.path.getsize(str(tmp_path / "e.tfevents")) > 0


def test_write_copies_the_value(tmp_path):
    """A weight updated in place after write() is recorded with its value at write() time."""
    x = Tensor(np.ones(4, np.float32))
    w = _mycel.insight.EventWriter(str(tmp_path / "w.tfevents"))
    w.write(0, 0.0, [("tensor", "x", x)])
    x[:] = 5.0
    w.close()
    proto = accumulator(str(tmp_path / "w.tfevents")).Tensors("x")[0].tensor_proto
    got = tensor_util.make_ndarray(proto)
    np.testing.assert_array_equal(got, np.ones(4, np.float32))


def test_bounded_queue_waits_and_loses_nothing(tmp_path):
    """With room for one pending event the writer falls behind, write() waits for it (bounded
    memory), and every event still reaches the file in order."""
    w = _mycel.insight.EventWriter(str(tmp_path / "q.tfevents"), max_pending=1)
    big = Tensor(np.arange(200_000, dtype=np.float32))
    for s in range(30):
        w.write(s, 0.0, [("histogram", "w", big), ("scalar", "s", Tensor(np.float32(s)))])
    w.flush()
    assert w.num_written == 30
    waits = w.num_waits
    w.close()
    events = parsed_events(str(tmp_path / "q.tfevents"))
    assert [e.step for e in events[1:]] == list(range(30))
    assert waits > 0


def test_tensorboard_finds_our_file_in_a_log_directory(tmp_path):
    """TensorBoard's multiplexer scans a directory for '*tfevents*' files: SummaryRecord's name."""
    from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
    from mycel.train.summary import SummaryRecord
    with SummaryRecord(str(tmp_path / "run1")) as rec:
        rec.add_value("scalar", "loss", Tensor(np.float32(0.5)))
        rec.record(3)
    mux = pem.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    assert list(mux.Runs()) == ["run1"]
    (ev,) = mux.Tensors("run1", "loss")  # the scalars plugin's migrated form
    assert ev.step == 3 and tensor_util.make_ndarray(ev.tensor_proto) == np.float32(0.5)
