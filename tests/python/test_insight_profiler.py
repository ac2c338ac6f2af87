"""Profiler: per-op times of compiled steps and eager ops, a Chrome-trace timeline that parses as
JSON and whose op times add up to the measured steps, and the op table."""
import csv
import json
import os
import time

import numpy as np

import mycel
from mycel import Tensor, nn, ops


class _MLP(nn.Cell):
    """Big enough matmuls that kernels, not dispatch, fill the step."""

    def __init__(self, width=768):
        super().__init__()
        self.layers = nn.SequentialCell([nn.Dense(width, width), nn.ReLU(), nn.Dense(width, width),
                                         nn.ReLU(), nn.Dense(width, width)])

    def construct(self, x):
        return self.layers(x)


def test_graph_mode_op_times_sum_to_the_step(tmp_path):
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = _MLP()
        x = Tensor(np.random.default_rng(0).standard_normal((512, 768)).astype(np.float32))
        net(x)  # compile outside the profile
        prof = mycel.Profiler(output_path=str(tmp_path))
        steps = []
        for _ in range(5):
            t0 = time.perf_counter_ns()
            net(x).asnumpy()
            steps.append(time.perf_counter_ns() - t0)
        out_dir = prof.analyse()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert out_dir == os.path.join(str(tmp_path), "profiler")
    with open(os.path.join(out_dir, "timeline.json")) as f:
        trace = json.load(f)
    ops_ = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert ops_ and all(e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["name"], str) for e in ops_)
    assert len(ops_) % 5 == 0  # the same instructions every step
    names = {e["name"] for e in ops_}
    assert any("matmul" in n or "dense" in n for n in names), names
    op_us = sum(e["dur"] for e in ops_)
    step_us = sum(steps) / 1e3
    assert 0.9 * step_us <= op_us <= step_us, (op_us, step_us)
    with open(os.path.join(out_dir, "op_table.csv")) as f:
        rows = list(csv.DictReader(f))
    assert sum(int(r["count"]) for r in rows) == len(ops_)
    np.testing.assert_allclose(sum(float(r["total_us"]) for r in rows), op_us, rtol=1e-3)
    assert abs(sum(float(r["percent"]) for r in rows) - 100.0) < 0.1
    totals = [float(r["total_us"]) for r in rows]
    assert totals == sorted(totals, reverse=True)


def test_eager_ops_are_profiled_with_their_names_and_bytes(tmp_path):
    a = Tensor(np.ones((64, 32), np.float32))
    prof = mycel.Profiler(output_path=str(tmp_path))
    ops.add(a, a)
    ops.matmul(a, a, transpose_b=True)
    prof.stop()
    ops.sub(a, a)  # after stop: not recorded
    events = prof.events()
    names = [e[0] for e in events]
    assert names == ["add", "matmul"], names
    assert [e[3] for e in events] == [64 * 32 * 4, 64 * 64 * 4]
    assert all(e[2] >= e[1] for e in events)
    rows = {r["op"]: r for r in prof.op_table()}
    assert rows["add"]["count"] == 1 and rows["matmul"]["count"] == 1


def test_profiler_off_records_nothing(tmp_path):
    prof = mycel.Profiler(output_path=str(tmp_path), start_profile=False)
    ops.add(Tensor(np.ones(3, np.float32)), 1.0)
    assert prof.events() == []
    prof.start()
    ops.add(Tensor(np.ones(3, np.float32)), 1.0)
    prof.stop()
    assert [e[0] for e in prof.events()] == ["add"]
