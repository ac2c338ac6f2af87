"""The auto-parallel cost model and strategy search without ranks: the searches against an
independent brute force (itertools over every combination), predictions against closed forms,
the memory limit, topology files, the Fig. 12 behaviour, and the search on a compiled Cell."""
import itertools
import json
import math
import random

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel import _mycel
from mycel.parallel.description import ModelDescription
from mycel.parallel.search import load_topology, search_cell, simulate
from mycel.parallel.zoo import resnet50, transformer

TOPO = {"devices_per_node": 4, "flops_per_second": 1e12, "memory_per_device_gib": 0,
        "intra_node": {"latency_us": 2, "bandwidth_gbps": 10},
        "inter_node": {"latency_us": 10, "bandwidth_gbps": 1}}


@pytest.fixture(autouse=True)
def clean_context():
    yield
    mycel.reset_auto_parallel_context()


def random_graph(rng, n):
    costs = [[(rng.random(), float(rng.randrange(100))) for _ in range(rng.randint(1, 3))] for _ in range(n)]
    edges = []
    for v in range(1, n):
        for _ in range(rng.randint(0, 3)):
            u = rng.randrange(v)
            edges.append(((u, v), [rng.random() for _ in range(len(costs[u]) * len(costs[v]))]))
    return costs, edges


def brute(costs, edges, limit=0.0):
    best = (math.inf, None)
    for choice in itertools.product(*[range(len(c)) for c in costs]):
        t = sum(costs[v][s][0] for v, s in enumerate(choice))
        mem = sum(costs[v][s][1] for v, s in enumerate(choice))
        t += sum(m[choice[u] * len(costs[v]) + choice[v]] for (u, v), m in edges)
        if (limit <= 0 or mem <= limit) and t < best[0]:
            best = (t, choice)
    return best


def test_dynamic_programming_matches_brute_force_and_heuristic_is_never_better():
    rng = random.Random(5)
    gaps = []
    for n in range(1, 9):
        for _ in range(12):
            costs, edges = random_graph(rng, n)
            want, _ = brute(costs, edges)
            choice, (t, _) = _mycel.search.solve_cost_graph(costs, edges, "dynamic_programming")
            assert t == pytest.approx(want, rel=1e-9, abs=1e-12)
            _, (th, _) = _mycel.search.solve_cost_graph(costs, edges, "recursive_programming")
            assert th >= want - 1e-9
            gaps.append(th / want - 1 if want > 0 else 0)
    assert np.mean(gaps) < 0.05


def test_memory_limit_is_respected_and_reported():
    rng = random.Random(9)
    for _ in range(40):
        costs, edges = random_graph(rng, rng.randint(2, 6))
        lo = sum(min(m for _, m in c) for c in costs)
        hi = sum(max(m for _, m in c) for c in costs)
        limit = lo + rng.random() * (hi - lo) + 0.5
        want, _ = brute(costs, edges, limit)
        for mode in ("dynamic_programming", "recursive_programming"):
            choice, (t, mem) = _mycel.search.solve_cost_graph(costs, edges, mode, limit)
            assert mem <= limit and t >= want - 1e-9
    with pytest.raises(ValueError, match=r"op 'op1' needs at least .* MiB"):
        _mycel.search.solve_cost_graph([[(1, 0)], [(1, 5 << 20), (2, 4 << 20)]], [], "dynamic_programming", 1 << 20)


def mlp(batch=64, d_in=256, d_out=512):
    m = ModelDescription("mlp")
    x = m.input((batch, d_in))
    m.dense("fc", x, d_out, bias=False)
    return m


def test_data_parallel_prediction_matches_closed_form():
    r = simulate(mlp(), 4, TOPO, search_mode="data_parallel")
    (op,) = r.ops
    assert op["strategy"] == "((4, 1), (1, 1))"
    flops = 2 * 64 * 256 * 512
    assert op["compute_s"] == pytest.approx(3 * flops / 4 / 1e12)
    w = 256 * 512 * 4  # the weight gradient's ring AllReduce over 4 devices, in a fusion bucket
    assert op["comm_s"] == pytest.approx(2 * 3 / 4 * w / 10e9)
    assert op["comm_bytes"] == pytest.approx(2 * 3 / 4 * w)
    assert op["memory_bytes"] == pytest.approx(3 * w + 16 * 512 * 4 + 16 * 256 * 4)
    assert r.step_time == pytest.approx(op["compute_s"] + op["comm_s"])


def test_search_beats_data_parallel_on_a_wide_classifier_and_respects_memory():
    m = mlp(batch=32, d_in=1024, d_out=65536)
    dp = simulate(m, 8, TOPO, search_mode="data_parallel")
    auto = simulate(m, 8, TOPO)
    assert auto.step_time < dp.step_time
    assert auto.ops[0]["strategy"] != dp.ops[0]["strategy"]
    limit = (auto.memory + dp.memory) / 2  # data parallelism's copy of the weight does not fit
    assert not simulate(m, 8, TOPO, search_mode="data_parallel", memory_limit=limit).fits
    tight = simulate(m, 8, TOPO, memory_limit=limit)
    assert tight.memory <= limit and tight.fits and tight.step_time == pytest.approx(auto.step_time)
    with pytest.raises(ValueError, match=r"'fc' needs at least"):
        simulate(m, 8, TOPO, memory_limit=1 << 20)


def test_fig12_data_parallel_runs_out_of_memory_and_auto_does_not():
    topo = dict(TOPO, devices_per_node=8, memory_per_device_gib=16)
    model = resnet50(batch=256, num_classes=1024 * 1024)
    assert len(model) == 175
    dp = simulate(model, 8, topo, search_mode="data_parallel")
    auto = simulate(model, 8, topo)
    assert not dp.fits and auto.fits and auto.memory <= 16 * 2**30
    assert auto.step_time < dp.step_time / 2
    assert auto.exact and auto.eliminations["op"] + auto.eliminations["triangle"] > 0
    assert "DOES NOT FIT" in str(dp) and "fc" in auto.table()


def test_transformer_search_on_many_devices():
    model = transformer(layers=2, batch=16, seq=128, hidden=256, heads=4, vocab=1000)
    for n in (8, 64, 1024):
        dp = simulate(model, n, TOPO, search_mode="dynamic_programming")
        rp = simulate(model, n, TOPO, search_mode="recursive_programming")
        assert dp.exact and rp.step_time >= dp.step_time * (1 - 1e-9)
        assert len(dp.ops) == len(model)


def test_model_and_topology_errors(tmp_path):
    m = ModelDescription()
    x = m.input((8, 4))
    with pytest.raises(ValueError, match="expects shape"):
        m.op("bad", "matmul", [("n", 8, True, True), ("k", 5, True, False)], [(x, ["n", "k"])], ["n"], 1)
    with pytest.raises(ValueError, match="names axis 'q'"):
        m.op("bad", "relu", [("n", 8, True, True)], [(x, ["n", "q"])], ["n"], 1)
    with pytest.raises(ValueError, match="unknown key 'devices_per_nod'"):
        load_topology({"devices_per_nod": 8})
    with pytest.raises(ValueError, match="bandwidth_gbps"):
        load_topology({"intra_node": {"latency_us": 1, "bandwidth_gbps": 0}})
    p = tmp_path / "t.json"
    p.write_text(json.dumps(TOPO))
    assert load_topology(str(p))["devices_per_node"] == 4
    p.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_topology(str(p))
    with pytest.raises(ValueError, match="search_mode"):
        simulate(mlp(), 4, TOPO, search_mode="fastest")
    with pytest.raises(ValueError, match="device_num"):
        simulate(mlp(), 0, TOPO)
    with pytest.raises(ValueError, match="dim of op 'fc'"):
        simulate({"ops": [{"name": "fc", "dims": [{"name": "n", "size": 4}], "output": ["m"]}]}, 2, TOPO)
    assert load_topology({"flops_per_second": "measure"})["flops_per_second"] > 1e6


def test_search_mode_in_context():
    mycel.set_auto_parallel_context(search_mode="recursive_programming")
    assert mycel.get_auto_parallel_context("search_mode") == "recursive_programming"
    with pytest.raises(ValueError, match="search_mode"):
        mycel.set_auto_parallel_context(search_mode="exhaustive")


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 64)
        self.fc2 = nn.Dense(64, 4096)

    def construct(self, x):
        return self.fc2(ops.relu(self.fc1(x)))


def test_search_on_a_compiled_cell_uses_the_registry_rules():
    net = Mlp()
    x = Tensor(np.ones((16, 32), np.float32))
    dp = search_cell(net, x, device_num=4, topology=TOPO, search_mode="data_parallel")
    auto = search_cell(net, x, device_num=4, topology=TOPO)
    kinds = [o["kind"] for o in auto.ops]
    assert len(kinds) >= 3 and auto.exact
    assert all(o["strategy"].startswith("((4,") for o in dp.ops)
    assert auto.step_time <= dp.step_time * (1 + 1e-9)
    mycel.set_auto_parallel_context(device_num=8, search_mode="recursive_programming")
    r = search_cell(net, x, topology=TOPO)
    assert r.device_num == 8 and r.mode == "recursive_programming"


def test_command_line_prints_the_table(capsys, tmp_path):
    from mycel.parallel.search import main
    topo = tmp_path / "topo.json"
    topo.write_text(json.dumps(TOPO))
    r = main(["--model", "resnet50", "--device_num", "16", "--topology", str(topo), "--classes", "4096",
              "--limit", "3"])
    out = capsys.readouterr().out
    assert "conv1" in out and "more ops" in out and "on 16 devices" in out
    assert r.device_num == 16 and len(r.ops) == 175
    desc = tmp_path / "mlp.json"
    desc.write_text(mlp().to_json())
    assert main(["--model", str(desc), "--device_num", "2", "--topology", str(topo)]).ops[0]["name"] == "fc"


def test_search_cell_prices_a_dense_layer_by_closed_form():
    net = nn.Dense(32, 64)
    x = Tensor(np.ones((16, 32), np.float32))
    (op,) = search_cell(net, x, device_num=4, topology=TOPO, search_mode="data_parallel").ops
    assert op["strategy"] == "((4, 1), (1, 1), (1,))"
    assert op["compute_s"] == pytest.approx(3 * 2 * 4 * 32 * 64 / 1e12)  # batch slice of 4 rows
    grads = (64 * 32 + 64) * 4  # weight and bias gradients, ring AllReduce over 4 devices (fused)
    assert op["comm_s"] == pytest.approx(2 * 3 / 4 * grads / 10e9)
    assert op["memory_bytes"] == 3 * grads + 4 * 64 * 4 + 4 * 32 * 4  # + output and input slices
    with pytest.raises(ValueError, match=r"op 'dense#0' needs at least [0-9.]+ KiB .* limit is 1.0 KiB"):
        search_cell(net, x, device_num=4, topology=TOPO, memory_limit=1000)
