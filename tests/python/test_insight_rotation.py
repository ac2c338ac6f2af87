"""SummaryRecord(max_file_size=...): the writer rotates to a new event file before a record would
take the current one past the limit (MindSpore's semantics); TensorBoard's reader reads every
step back across the files, in order. MindSpore's tag suffixes ("loss[:Scalar]") are accepted."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.train.summary import SummaryRecord
from insight_helpers import event_files, parsed_events


def _steps(path):
    return [(e.step, [(v.tag, v.simple_value) for v in e.summary.value])
            for e in parsed_events(path) if e.HasField("summary")]


def test_rotation_keeps_every_file_under_the_limit(tmp_path):
    limit = 400
    with SummaryRecord(str(tmp_path), max_file_size=limit) as rec:
        for step in range(40):
            rec.add_value("scalar", "loss", float(step) / 2)
            rec.add_value("tensor", "w", np.arange(4, dtype=np.float32) + step)
            rec.record(step)
        rec.flush()
        names = rec.event_file_names
    files = event_files(str(tmp_path))
    assert sorted(names) == files and len(files) > 3
    assert names == sorted(names)  # name order is writing order, as TensorBoard reads them
    steps = []
    for f in names:
        assert os.path.getsize(f) <= limit
        first = parsed_events(f)[0]
        assert first.file_version == "brain.Event:2"  # each file starts as a valid event file
        got = _steps(f)
        assert got, f  # no file holds only the version record
        steps += got
    assert [s for s, _ in steps] == list(range(40))
    assert [v for _, vals in steps for t, v in vals if t == "loss"] == [s / 2 for s in range(40)]


def test_a_record_larger_than_the_limit_gets_a_file_of_its_own(tmp_path):
    with SummaryRecord(str(tmp_path), max_file_size=200) as rec:
        rec.add_value("scalar", "a", 1.0)
        rec.record(0)
        rec.add_value("tensor", "big", np.zeros(100, np.float32))  # 400+ bytes
        rec.record(1)
        rec.add_value("scalar", "a", 2.0)
        rec.record(2)
        rec.flush()
        names = rec.event_file_names
    assert [[s for s, _ in _steps(f)] for f in names] == [[0], [1], [2]]


def test_no_limit_one_file_and_bad_limits(tmp_path):
    with SummaryRecord(str(tmp_path)) as rec:
        for step in range(5):
            rec.add_value("scalar", "x", 1.0)
            rec.record(step)
    assert len(event_files(str(tmp_path))) == 1
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(ValueError, match="max_file_size must be None or an int >= 1"):
            SummaryRecord(str(tmp_path), max_file_size=bad)


class _TaggedNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scalar = ops.ScalarSummary()

    def construct(self, x):
        self.scalar("total[:Scalar]", x.sum())
        return x * 2.0


@pytest.mark.parametrize("graph", [False, True])
def test_mindspore_tag_suffixes(tmp_path, graph):
    mycel.set_context(mode=mycel.GRAPH_MODE if graph else mycel.PYNATIVE_MODE)
    try:
        net = _TaggedNet()
        with SummaryRecord(str(tmp_path)) as rec:
            net(Tensor(np.float32([1.0, 2.0])))
            rec.add_value("scalar", "loss[:Scalar]", 0.5)
            rec.record(3)
            rec.flush()
            with pytest.raises(ValueError, match=r"says \[:Image\] but the value is recorded as "
                                                 r"scalar"):
                rec.add_value("scalar", "loss[:Image]", 0.5)
            rec.add_value("scalar", "odd[name]", 1.0)  # brackets of the user's own are kept
            rec.record(4)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    (path,) = event_files(str(tmp_path))
    steps = dict(_steps(path))
    assert sorted(steps[3]) == [("loss", 0.5), ("total", 3.0)]
    assert steps[4] == [("odd[name]", 1.0)]
