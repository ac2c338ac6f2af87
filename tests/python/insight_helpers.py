"""Reading our event files back with TensorBoard's own reader (the independent reference)."""
import glob
import os
import struct

import pytest

tb_loader = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader")
tb_acc = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def event_files(log_dir):
    return sorted(glob.glob(os.path.join(log_dir, "*tfevents*")))


def only_event_file(log_dir):
    files = event_files(log_dir)
    assert len(files) == 1, files
    return files[0]


def raw_events(path):
    """Every Event TensorBoard's loader reads from `path` (stops at a torn last record)."""
    return list(tb_loader.RawEventFileLoader(path).Load())


def parsed_events(path):
    """The Events as written (EventFileLoader would migrate simple_value to a tensor)."""
    from tensorboard.compat.proto import event_pb2
    return [event_pb2.Event.FromString(r) for r in raw_events(path)]


def accumulator(path):
    acc = tb_acc.EventAccumulator(path, size_guidance={"scalars": 0, "images": 0, "histograms": 0,
                                                       "tensors": 0, "compressedHistograms": 0})
    acc.Reload()
    return acc


def record_spans(data):
    """(start, end) byte offsets of each TFRecord: 8-byte length, 4-byte CRC, data, 4-byte CRC."""
    spans, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[pos:pos + 8])
        end = pos + 12 + n + 4
        if end > len(data):
            break
        spans.append((pos, end))
        pos = end
    return spans
