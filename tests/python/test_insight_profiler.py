"""Profiler: per-op times and bytes of compiled steps and eager ops with their Cell scopes, the
step trace (steps, data waits, phases), the data pipeline's counters, and a timeline that is
valid Chrome-trace JSON whose op times add up to the measured steps."""
import csv
import json
import os
import statistics
import time

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import Tensor, nn, ops


class _MLP(nn.Cell):
    """Big enough matmuls that kernels, not dispatch, fill the step."""

    def __init__(self, width=768):
        super().__init__()
        self.fc1 = nn.Dense(width, width)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(width, width)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class _Small(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.fc2 = nn.Dense(16, 4)

    def construct(self, x):
        return self.fc2(ops.tanh(self.fc1(x)))


def _read(out_dir, name):
    with open(os.path.join(out_dir, name)) as f:
        return list(csv.DictReader(f)) if name.endswith(".csv") else json.load(f)


def check_chrome_trace(trace):
    """The rules of the Chrome trace event format (JSON object form) the timeline must follow:
    required keys per phase, timestamps in order, and complete events ("X") of one track that
    either nest or do not overlap. Returns the events by phase."""
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    assert trace.get("displayTimeUnit") in ("ms", "ns")
    by_ph = {}
    last_ts = -1.0
    for e in trace["traceEvents"]:
        assert {"name", "ph", "pid"} <= e.keys(), e
        assert isinstance(e["name"], str) and isinstance(e["pid"], int)
        by_ph.setdefault(e["ph"], []).append(e)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and "name" in e["args"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert e["ts"] >= last_ts, "events not in time order"
        last_ts = e["ts"]
        if e["ph"] == "X":
            assert isinstance(e["tid"], int) and isinstance(e["dur"], (int, float))
            assert e["dur"] >= 0
        elif e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
        else:
            raise AssertionError(f"unexpected phase {e['ph']}")
    tracks = {}
    for e in by_ph.get("X", []):
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    eps = 1e-3  # us: rounding of ns to float us
    for spans in tracks.values():
        stack = []
        for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + eps:
                stack.pop()
            assert not stack or end <= stack[-1] + eps, "spans of one track overlap"
            stack.append(end)
    return by_ph


def test_graph_mode_op_times_sum_to_the_step(tmp_path):
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = _MLP()
        x = Tensor(np.random.default_rng(0).standard_normal((512, 768)).astype(np.float32))
        net(x)  # compile outside the profile
        prof = mycel.Profiler(output_path=str(tmp_path))
        measured = []
        for _ in range(7):
            t0 = time.perf_counter_ns()
            net(x)
            measured.append(time.perf_counter_ns() - t0)
        out_dir = prof.analyse()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert out_dir == os.path.join(str(tmp_path), "profiler")
    by_ph = check_chrome_trace(_read(out_dir, "timeline.json"))
    ops_ = [e for e in by_ph["X"] if e["cat"] == "op"]
    steps = [e for e in by_ph["X"] if e["cat"] == "step"]
    assert len(steps) == 7 and len(ops_) % 7 == 0  # the same instructions every step
    # Per step: the ops' time against the step the executor measured (the step span) and the
    # step Python measured around the call; medians over the steps (a loaded machine moves some).
    ratio_span, ratio_call = [], []
    for s, call_ns in zip(sorted(steps, key=lambda e: e["ts"]), measured):
        inside = [e for e in ops_ if s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3]
        op_us = sum(e["dur"] for e in inside)
        assert op_us <= s["dur"] + 1e-3 and s["dur"] <= call_ns / 1e3
        ratio_span.append(op_us / s["dur"])
        ratio_call.append(op_us / (call_ns / 1e3))
    assert statistics.median(ratio_span) >= 0.9, ratio_span
    assert statistics.median(ratio_call) >= 0.9, ratio_call
    rows = _read(out_dir, "op_table.csv")
    assert sum(int(r["count"]) for r in rows) == len(ops_)
    np.testing.assert_allclose(sum(float(r["total_us"]) for r in rows),
                               sum(e["dur"] for e in ops_), rtol=1e-3)
    assert abs(sum(float(r["percent"]) for r in rows) - 100.0) < 0.1
    totals = [float(r["total_us"]) for r in rows]
    assert totals == sorted(totals, reverse=True)
    # Memory: each launch's output bytes are its outputs' sizes; the arena is the plan's.
    for e in ops_:
        assert e["args"]["bytes"] > 0 and e["args"]["bytes"] % 4 == 0
    trace_rows = _read(out_dir, "step_trace.csv")
    assert len(trace_rows) == 7
    assert all(int(r["arena_bytes"]) >= 512 * 768 * 4 for r in trace_rows)
    assert {int(r["ops"]) for r in trace_rows} == {len(ops_) // 7}


def test_graph_mode_scopes_from_weights_and_lines(tmp_path):
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = _Small()
        x = Tensor(np.ones((4, 8), np.float32))
        prof = mycel.Profiler(output_path=str(tmp_path))
        net(x)
        events = prof.events()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    scopes = {(op, scope) for op, _, _, _, _, scope, _ in events}
    dense = {s for op, s in scopes if "dense" in op}
    assert dense == {"Default/fc1-Dense", "Default/fc2-Dense"}, scopes
    tanh = [(s, w) for op, _, _, _, _, s, w in events if op == "tanh"]
    assert tanh and tanh[0][0] == "Default" and "test_insight_profiler.py" in tanh[0][1]
    # The output bytes are the outputs' sizes: (4, 16) and (4, 4) float32 denses.
    assert sorted(b for op, _, _, b, *_ in events if "dense" in op) == [4 * 4 * 4, 4 * 16 * 4]


class _Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 8)
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.fc(x) * 2.0)


class _TwoBlocks(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([_Block(), _Block()])

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_graph_mode_scopes_are_exact_for_two_instances_of_one_class(tmp_path):
    # The ReLUs read no weight and share their source lines: only the IR's inlined-at chain
    # tells layers[0].act from layers[1].act.
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = _TwoBlocks()
        x = Tensor(np.ones((4, 8), np.float32))
        net(x)  # compiled before profiling
        prof = mycel.Profiler(output_path=str(tmp_path))
        net(x)
        events = prof.events()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    # The scale and ReLU may run fused (one instruction named for its ops): a fused instruction
    # takes the scope of the op it ends in.
    relu = [scope for op, _, _, _, _, scope, _ in events if "relu" in op]
    assert relu == ["Default/layers-CellList/0-_Block/act-ReLU",
                    "Default/layers-CellList/1-_Block/act-ReLU"], events
    dense = [scope for op, _, _, _, _, scope, _ in events if op == "dense"]
    assert dense == ["Default/layers-CellList/0-_Block/fc-Dense",
                     "Default/layers-CellList/1-_Block/fc-Dense"], events


def test_eager_ops_are_profiled_with_their_names_bytes_and_scopes(tmp_path):
    a = Tensor(np.ones((64, 32), np.float32))
    net, x = _Small(), Tensor(np.ones((2, 8), np.float32))  # its weights' init ops run here
    prof = mycel.Profiler(output_path=str(tmp_path))
    ops.add(a, a)
    ops.matmul(a, a, transpose_b=True)
    net(x)
    prof.stop()
    ops.sub(a, a)  # after stop: not recorded
    events = prof.events()
    names = [e[0] for e in events]
    assert names[:2] == ["add", "matmul"], names
    assert [e[3] for e in events[:2]] == [64 * 32 * 4, 64 * 64 * 4]
    assert all(e[2] >= e[1] for e in events)
    assert [e[5] for e in events[:2]] == ["", ""]  # outside every Cell
    cell_scopes = [e[5] for e in events[2:]]
    assert cell_scopes[0] == "Default/fc1-Dense" and cell_scopes[-1] == "Default/fc2-Dense"
    assert "Default" in cell_scopes  # the tanh between them, in the outer Cell
    rows = {r["op"]: r for r in prof.op_table()}
    assert rows["add"]["count"] == 1 and rows["matmul"]["count"] == 1
    assert rows["matmul"]["bytes"] == rows["matmul"]["avg_bytes"] == 64 * 64 * 4


def test_profiler_off_records_nothing(tmp_path):
    prof = mycel.Profiler(output_path=str(tmp_path), start_profile=False)
    ops.add(Tensor(np.ones(3, np.float32)), 1.0)
    assert prof.events() == []
    prof.start()
    ops.add(Tensor(np.ones(3, np.float32)), 1.0)
    prof.stop()
    assert [e[0] for e in prof.events()] == ["add"]


def _train_data(n=96, batch=16):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = rng.standard_normal((n, 4)).astype(np.float32)

    def slow_scale(v):  # a map stage with real work per row, so its counters move
        return (v * 2.0).astype(np.float32)

    data = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False)
    return data.map(slow_scale, input_columns=["x"]).batch(batch)


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_step_trace_and_pipeline_of_model_train(tmp_path, mode):
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    try:
        net = _Small()
        model = mycel.Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.01, 0.9))
        model.train(1, _train_data())  # compile outside the profile
        prof = mycel.Profiler(output_path=str(tmp_path))
        model.train(1, _train_data())
        out_dir = prof.analyse()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    steps = _read(out_dir, "step_trace.csv")
    assert len(steps) == 96 // 16
    for r in steps:
        dur = float(r["duration_us"])
        parts = [float(r[k]) for k in ("fp_bp_us", "optimizer_us", "communication_us")]
        assert parts[0] > 0 and parts[1] > 0 and parts[2] == 0  # one process: no collectives
        assert abs(sum(parts) + float(r["other_us"]) - dur) < 1e-2 * dur
        assert float(r["data_wait_us"]) > 0
    starts = [float(r["start_us"]) for r in steps]
    assert starts == sorted(starts)
    detail = _read(out_dir, "op_detail.csv")
    scopes = {r["scope"] for r in detail}
    assert "Default/optimizer-Momentum" in scopes, scopes
    assert any(s.endswith("_backbone-_Small/fc1-Dense") for s in scopes), scopes
    by_ph = check_chrome_trace(_read(out_dir, "timeline.json"))
    phases = {e["name"] for e in by_ph["X"] if e["cat"] == "phase"}
    assert {"forward_backward", "optimizer"} <= phases
    assert len([e for e in by_ph["X"] if e["cat"] == "data"]) >= len(steps)
    # The pipeline: each stage's rows against the dataset's sizes, and its queue counters.
    stages = {r["stage"]: r for r in _read(out_dir, "minddata_pipeline.csv")}
    assert int(stages["batch"]["rows"]) == 6 and int(stages["map"]["rows"]) == 96
    assert int(stages["prefetch"]["rows"]) == 6
    for r in stages.values():
        assert float(r["rows_per_s"]) > 0 and int(r["queue_max"]) <= int(r["queue_capacity"])
    counters = {e["name"].split(" ")[0] for e in by_ph["C"]}
    assert {"queue", "rows/s"} <= counters
    doc = _read(out_dir, "minddata_pipeline.json")
    assert doc["stages"] and doc["samples"]


class _Reduced(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 8)
        self.all_reduce = ops.AllReduce()

    def construct(self, x):
        return self.all_reduce(self.fc(x))


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_collectives_are_the_communication_phase(tmp_path, mode):
    from mycel import communication as comm
    comm.init()  # a world of one: the collective runs (and returns its input)
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    try:
        net = _Reduced()
        x = Tensor(np.ones((4, 8), np.float32))
        net(x)
        prof = mycel.Profiler(output_path=str(tmp_path))
        for _ in range(3):
            net(x)
        out_dir = prof.analyse()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    by_ph = check_chrome_trace(_read(out_dir, "timeline.json"))
    phase_of = {e["name"]: e["args"]["phase"] for e in by_ph["X"] if e["cat"] == "op"}
    assert phase_of["all_reduce"] == "communication"
    assert {p for n, p in phase_of.items() if n != "all_reduce"} == {"forward_backward"}
    if mode == "graph":  # each compiled run is a step; the collective's time is its own column
        steps = _read(out_dir, "step_trace.csv")
        assert len(steps) == 3 and all(float(r["communication_us"]) > 0 for r in steps)
        assert "communication" in {e["name"] for e in by_ph["X"] if e["cat"] == "phase"}
