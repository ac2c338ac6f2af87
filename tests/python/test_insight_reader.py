"""The event-file reader (the dashboard's source): it reads back files that TensorBoard's own
writer produced (the independent reference) and ours, and stops cleanly at a torn tail."""
import numpy as np
import pytest

from mycel import Tensor, _mycel
from mycel.train.summary import SummaryRecord
from insight_helpers import only_event_file, record_spans

event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
tb_writer = pytest.importorskip("tensorboard.summary.writer.event_file_writer")
tensor_util = pytest.importorskip("tensorboard.util.tensor_util")


def test_reads_files_written_by_tensorboard(tmp_path):
    w = tb_writer.EventFileWriter(str(tmp_path))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for step in range(3):
        s = summary_pb2.Summary()
        s.value.add(tag="loss", simple_value=1.5 / (step + 1))
        s.value.add(tag="t", tensor=tensor_util.make_tensor_proto(x + step))
        h = s.value.add(tag="h").histo
        h.min, h.max, h.num, h.sum = -1.0, 2.0, 3.0, 1.0
        h.bucket_limit.extend([0.0, 2.0])
        h.bucket.extend([1.0, 2.0])
        acc_tensor = tensor_util.make_tensor_proto(np.float32(0.25 * step))
        scalar_v2 = s.value.add(tag="acc", tensor=acc_tensor)
        scalar_v2.metadata.plugin_data.plugin_name = "scalars"
        w.add_event(event_pb2.Event(step=step, wall_time=100.0 + step, summary=s))
    w.close()
    events, complete = _mycel.insight.read_event_file(only_event_file(str(tmp_path)))
    assert complete and len(events) == 4  # file_version first
    for step, (st, wall, values) in enumerate(events[1:]):
        assert (st, wall) == (step, 100.0 + step)
        by_tag = {v["tag"]: v for v in values}
        assert by_tag["loss"]["plugin"] == "scalar"
        assert by_tag["loss"]["value"] == np.float32(1.5 / (step + 1))
        np.testing.assert_array_equal(by_tag["t"]["value"].asnumpy(), x + step)
        assert by_tag["h"]["bucket"] == [1.0, 2.0] and by_tag["h"]["bucket_limit"] == [0.0, 2.0]
        assert by_tag["acc"]["plugin"] == "scalar" and by_tag["acc"]["value"] == 0.25 * step


def test_reads_ours_and_stops_at_a_torn_tail(tmp_path):
    with SummaryRecord(str(tmp_path)) as rec:
        for step in range(5):
            rec.add_value("scalar", "loss", Tensor(np.float32(step)))
            rec.add_value("image", "im", Tensor(np.zeros((1, 3, 2, 2), np.uint8)))
            rec.record(step)
    path = only_event_file(str(tmp_path))
    events, complete = _mycel.insight.read_event_file(path)
    assert complete and [e[0] for e in events[1:]] == list(range(5))
    im = [v for v in events[1][2] if v["tag"] == "im"][0]
    assert (im["height"], im["width"], im["channels"]) == (2, 2, 3) and im["png"][:4] == b"\x89PNG"
    data = open(path, "rb").read()
    end3 = record_spans(data)[3][1]
    torn = tmp_path / "torn"
    torn.write_bytes(data[:end3 + 7])
    events, complete = _mycel.insight.read_event_file(str(torn))
    assert not complete and [e[0] for e in events[1:]] == [0, 1, 2]
    corrupt = bytearray(data)
    corrupt[end3 + 20] ^= 0xFF  # a flipped byte inside record 4's data: its CRC fails
    torn.write_bytes(bytes(corrupt))
    events, complete = _mycel.insight.read_event_file(str(torn))
    assert not complete and [e[0] for e in events[1:]] == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot open event file '.*nope'"):
        _mycel.insight.read_event_file(str(tmp_path / "nope"))


def test_hostile_tensors_and_short_tails_are_skipped_not_trusted(tmp_path):
    """Found by the events fuzz target: a 12-15 byte tail once passed the length check through an
    unsigned underflow (a read past the end), a declared shape was allocated before the content
    was checked, and a NaN or huge value list filled an integer tensor through an undefined cast."""
    w = tb_writer.EventFileWriter(str(tmp_path))
    s = summary_pb2.Summary()
    huge = s.value.add(tag="huge").tensor  # 2**40 float32 elements declared, one value given
    huge.dtype = 1
    huge.tensor_shape.dim.add(size=1 << 20)
    huge.tensor_shape.dim.add(size=1 << 20)
    huge.float_val.append(1.0)
    neg = s.value.add(tag="negative").tensor
    neg.dtype = 1
    neg.tensor_shape.dim.add(size=-3)
    neg.float_val.append(1.0)
    ints = s.value.add(tag="ints").tensor  # DT_INT32 filled from float values
    ints.dtype = 3
    ints.tensor_shape.dim.add(size=4)
    ints.float_val.extend([float("nan"), 1e30, -1e30, 7.9])
    s.value.add(tag="ok", simple_value=2.5)
    w.add_event(event_pb2.Event(step=1, summary=s))
    w.close()
    path = only_event_file(str(tmp_path))
    events, complete = _mycel.insight.read_event_file(path)
    by_tag = {v["tag"]: v for v in events[1][2]}
    assert complete and sorted(by_tag) == ["ints", "ok"]  # the two hostile shapes are skipped
    info = np.iinfo(np.int32)
    np.testing.assert_array_equal(by_tag["ints"]["value"].asnumpy(), [0, info.max, info.min, 7])
    data = open(path, "rb").read()
    for tail in range(1, 16):  # a torn record shorter than its 16 framing bytes
        short = tmp_path / f"short{tail}"
        short.write_bytes(data + data[:tail])
        events, complete = _mycel.insight.read_event_file(str(short))
        assert not complete and len(events) == 2
