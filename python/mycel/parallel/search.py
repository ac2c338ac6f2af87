"""The auto-parallel strategy search and its simulation without ranks: `simulate(model,
device_num, topology)` picks a strategy per op for a cluster that need not exist here and
predicts the step time, the communication volume and the memory per device (docs/parallel.md,
"Cost model and strategy search")."""
import json
import os

from mycel import _mycel
from mycel.parallel.description import ModelDescription

__all__ = ["simulate", "search_cell", "last_search", "SimulationReport", "load_topology", "measure_flops", "DEFAULT_TOPOLOGY",
           "SEARCH_MODES"]

SEARCH_MODES = ("dynamic_programming", "recursive_programming")
# Used when no topology is given: an 8-device node of 100 TFLOP/s, 32 GiB accelerators.
DEFAULT_TOPOLOGY = {"devices_per_node": 8, "flops_per_second": 1.0e14, "memory_per_device_gib": 32,
                    "intra_node": {"latency_us": 5, "bandwidth_gbps": 100},
                    "inter_node": {"latency_us": 20, "bandwidth_gbps": 12.5}}
_MAX_TOPOLOGY_BYTES = 1 << 20


def measure_flops(n=512, repeat=5):
    """This machine's float32 matmul throughput in FLOP/s (the best of `repeat` n x n matmuls)."""
    import time
    import numpy as np
    from mycel import Tensor, ops
    a = Tensor(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32))
    ops.matmul(a, a).asnumpy()  # warm up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        ops.matmul(a, a).asnumpy()
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best


def load_topology(topology=None):
    """A topology as a dict: None (DEFAULT_TOPOLOGY), a dict, or the path of a JSON file.
    "flops_per_second": "measure" takes this machine's measured matmul throughput."""
    if topology is None:
        topo = dict(DEFAULT_TOPOLOGY)
    elif isinstance(topology, dict):
        topo = dict(topology)
    elif isinstance(topology, (str, os.PathLike)):
        size = os.path.getsize(topology)
        if size > _MAX_TOPOLOGY_BYTES:
            raise ValueError(f"load_topology: {topology} is {size} bytes; a topology file is at most "
                             f"{_MAX_TOPOLOGY_BYTES}")
        with open(topology, encoding="utf-8") as f:
            try:
                topo = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"load_topology: {topology} is not valid JSON: {e}") from None
        if not isinstance(topo, dict):
            raise ValueError(f"load_topology: {topology} must hold a JSON object")
    else:
        raise TypeError(f"load_topology: expected None, a dict or a path, got {type(topology).__name__}")
    if topo.get("flops_per_second") == "measure":
        topo["flops_per_second"] = measure_flops()
    _mycel.search.check_topology(json.dumps(topo))
    return topo


class SimulationReport:
    """What a simulation predicts. Attributes: mode, device_num, step_time (s), comm_bytes (per
    device per step), memory (bytes per device), memory_limit, fits, search_seconds, exact,
    eliminations (count per kind) and ops: one dict per op with name, kind, strategy (the split
    of each input's dims, MindSpore's in_strategy), compute_s, comm_s, redistribution_s,
    comm_bytes, memory_bytes."""

    def __init__(self, data):
        self._data = data
        self.mode, self.device_num, self.ops = data["mode"], data["device_num"], data["ops"]
        self.step_time, self.comm_bytes = data["step_time_s"], data["comm_bytes"]
        self.memory, self.memory_limit, self.fits = data["memory_bytes"], data["memory_limit_bytes"], data["fits"]
        self.search_seconds, self.exact = data["search_seconds"], data["exact"]
        self.eliminations = data["eliminations"]

    def strategies(self):
        """{op name: strategy text}."""
        return {o["name"]: o["strategy"] for o in self.ops}

    def table(self, limit=None):
        """The per-op table as text (the first `limit` ops when given), then the totals."""
        head = f"{'op':<28} {'kind':<22} {'strategy':<36} {'compute ms':>10} {'comm ms':>9} " \
               f"{'redist ms':>9} {'comm MB':>9} {'mem MB':>9}"
        lines = [head, "-" * len(head)]
        for o in self.ops[:limit]:
            lines.append(f"{o['name'][:28]:<28} {o['kind'][:22]:<22} {o['strategy'][:36]:<36} "
                         f"{o['compute_s'] * 1e3:>10.3f} {o['comm_s'] * 1e3:>9.3f} "
                         f"{o['redistribution_s'] * 1e3:>9.3f} {o['comm_bytes'] / 2**20:>9.2f} "
                         f"{o['memory_bytes'] / 2**20:>9.2f}")
        if limit is not None and limit < len(self.ops):
            lines.append(f"... {len(self.ops) - limit} more ops")
        lines.append(str(self))
        return "\n".join(lines)

    def __str__(self):
        limit = f"{self.memory_limit / 2**30:.1f} GiB" if self.memory_limit > 0 else "none"
        return (f"{self.mode} on {self.device_num} devices: step {self.step_time * 1e3:.3f} ms, "
                f"comm {self.comm_bytes / 2**20:.1f} MB/device, memory {self.memory / 2**30:.3f} GiB/device "
                f"(limit {limit}{'' if self.fits else ', DOES NOT FIT'}), search {self.search_seconds * 1e3:.1f} ms")

    def __repr__(self):
        return f"<SimulationReport {self}>"


def simulate(model, device_num, topology=None, search_mode="dynamic_programming", memory_limit=None):
    """Searches a strategy per op for `device_num` simulated devices and predicts the step.

    model: a ModelDescription, its JSON text, or a dict of that form. topology: see
    load_topology. search_mode: "dynamic_programming" (exact), "recursive_programming" (fast
    heuristic) or "data_parallel" (no search: every op splits its batch dim, for comparison).
    memory_limit: bytes per device (default: the topology's memory_per_device_gib; 0 = none).
    A search never returns a strategy over the limit; if none fits it raises ValueError naming
    the op and the memory it needs. data_parallel reports fits=False instead."""
    if isinstance(model, ModelDescription):
        text = model.to_json()
    elif isinstance(model, dict):
        text = json.dumps(model)
    elif isinstance(model, str):
        text = model
    else:
        raise TypeError(f"simulate: model must be a ModelDescription, dict or JSON text, got "
                        f"{type(model).__name__}")
    if isinstance(device_num, bool) or not isinstance(device_num, int) or not 1 <= device_num <= 1 << 20:
        raise ValueError(f"simulate: device_num must be an int in [1, {1 << 20}], got {device_num!r}")
    if search_mode not in SEARCH_MODES + ("data_parallel",):
        raise ValueError(f"simulate: search_mode must be one of {SEARCH_MODES + ('data_parallel',)}, "
                         f"got {search_mode!r}")
    if memory_limit is not None and (not isinstance(memory_limit, (int, float)) or memory_limit < 0):
        raise ValueError(f"simulate: memory_limit must be bytes >= 0, got {memory_limit!r}")
    topo = load_topology(topology)
    limit = -1.0 if memory_limit is None else float(memory_limit)
    out = _mycel.search.simulate(text, json.dumps(topo), device_num, search_mode, limit)
    return SimulationReport(json.loads(out))


def search_cell(net, *inputs, device_num=None, topology=None, search_mode=None, memory_limit=None,
                training=True, optimizer_slots=1):
    """Searches a strategy for every op of a Cell's (or function's) compiled graph for these
    inputs, with the registry's sharding rules and costs, on `device_num` simulated devices
    (default: the auto-parallel context's device_num). search_mode defaults to the context's
    ("dynamic_programming" or "recursive_programming"; "data_parallel" prices plain data
    parallelism). training=True prices the backward pass and optimizer state too. Returns a
    SimulationReport whose ops are the graph's op applications in order."""
    from mycel.parallel.context import _device_num, get_auto_parallel_context
    mode = search_mode or get_auto_parallel_context("search_mode")
    if mode not in SEARCH_MODES + ("data_parallel",):
        raise ValueError(f"search_cell: search_mode must be one of {SEARCH_MODES + ('data_parallel',)}, "
                         f"got {mode!r}")
    n = _device_num() if device_num is None else device_num
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1 << 20:
        raise ValueError(f"search_cell: device_num must be an int in [1, {1 << 20}], got {n!r}")
    if memory_limit is not None and (not isinstance(memory_limit, (int, float)) or memory_limit < 0):
        raise ValueError(f"search_cell: memory_limit must be bytes >= 0, got {memory_limit!r}")
    topo = load_topology(topology)
    compiled = _mycel.graph.compile(net)
    out = compiled.search_strategy(json.dumps(topo), n, mode, -1.0 if memory_limit is None else float(memory_limit),
                                   bool(training), float(optimizer_slots), *inputs)
    return SimulationReport(json.loads(out))


def last_search():
    """The SimulationReport of the last strategy search AUTO_PARALLEL ran while compiling (the
    strategy it chose per op of the differentiated forward, and the predictions), or None."""
    text = _mycel.autopar.last_search()
    return SimulationReport(json.loads(text)) if text else None


def main(argv=None):
    """Command line: python -m mycel.parallel.search --model resnet50 --device_num 64 [--topology
    FILE] [--search_mode ...] [--classes N] [--layers N] [--limit N]: prints the per-op table and
    the totals. --model is resnet50, transformer or a model description JSON file."""
    import argparse
    from mycel.parallel import zoo
    ap = argparse.ArgumentParser(prog="python -m mycel.parallel.search", description=main.__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--device_num", type=int, default=8)
    ap.add_argument("--topology", default=None, help="a topology JSON file (docs/parallel.md)")
    ap.add_argument("--search_mode", default="dynamic_programming", choices=SEARCH_MODES + ("data_parallel",))
    ap.add_argument("--batch", type=int, default=None, help="global batch")
    ap.add_argument("--classes", type=int, default=1000, help="resnet50's classifier width")
    ap.add_argument("--layers", type=int, default=24, help="transformer layers")
    ap.add_argument("--limit", type=int, default=None, help="print at most this many ops")
    args = ap.parse_args(argv)
    if args.model == "resnet50":
        model = zoo.resnet50(batch=args.batch or 256, num_classes=args.classes)
    elif args.model == "transformer":
        model = zoo.transformer(layers=args.layers, batch=args.batch or 128)
    else:
        size = os.path.getsize(args.model)
        if size > 64 << 20:
            raise ValueError(f"{args.model}: {size} bytes is more than a model description may hold (64 MiB)")
        with open(args.model, encoding="utf-8") as f:
            model = f.read()
    report = simulate(model, args.device_num, args.topology, search_mode=args.search_mode)
    print(report.table(args.limit))
    return report


if __name__ == "__main__":
    main()
