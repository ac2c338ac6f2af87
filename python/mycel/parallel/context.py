"""The auto-parallel context: one dict of settings with MindSpore's names and defaults."""
import os


class ParallelMode:
    """Parallel modes (MindSpore's names). STAND_ALONE, DATA_PARALLEL, SEMI_AUTO_PARALLEL and
    AUTO_PARALLEL are implemented."""
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    MODE_LIST = [STAND_ALONE, DATA_PARALLEL, HYBRID_PARALLEL, SEMI_AUTO_PARALLEL, AUTO_PARALLEL]


_IMPLEMENTED = (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL, ParallelMode.SEMI_AUTO_PARALLEL,
                ParallelMode.AUTO_PARALLEL)
# How AUTO_PARALLEL picks strategies (mycel.parallel.search): exact dynamic programming, the fast
# heuristic, or propagation from the user's shard() hints.
SEARCH_MODES = ("dynamic_programming", "recursive_programming", "sharding_propagation")
# Gradient fusion: gradients are flattened into buckets of at most this many MB, one allreduce each.
_DEFAULT_BUCKET_MB = 25.0


def _defaults():
    return {"parallel_mode": ParallelMode.STAND_ALONE, "gradients_mean": False, "device_num": 1,
            "global_rank": 0, "gradient_fp32_sync": True, "parameter_broadcast": False,
            "comm_fusion": {"allreduce": {"mode": "size", "config": _DEFAULT_BUCKET_MB}},
            "search_mode": "dynamic_programming", "topology": None, "slice_parameters": True, "full_batch": True,
            "enable_parallel_optimizer": False, "pipeline_stages": 1,
            "pipeline_config": {"pipeline_interleave": False, "pipeline_scheduler": "gpipe",
                                "stage_recompute": False},
            "comm_overlap": True, "strategy_ckpt_save_file": "", "strategy_ckpt_load_file": "",
            "strategy_ckpt_config": {}}


_context = _defaults()
_explicit = set()  # settings the user gave (device_num otherwise follows the world size)


def _check_comm_fusion(value):
    if not isinstance(value, dict) or set(value) - {"allreduce"}:
        raise ValueError(f"set_auto_parallel_context: comm_fusion must be a dict like "
                         f"{{'allreduce': {{'mode': 'size', 'config': MB}}}}, got {value!r}")
    ar = value.get("allreduce", {"mode": "size", "config": _DEFAULT_BUCKET_MB})
    if ar.get("mode", "size") != "size" or not isinstance(ar.get("config"), (int, float)) or ar["config"] <= 0:
        raise ValueError(f"set_auto_parallel_context: comm_fusion['allreduce'] must have mode 'size' and a "
                         f"config (bucket size in MB) > 0, got {ar!r}")
    return {"allreduce": {"mode": "size", "config": float(ar["config"])}}


def _check_pipeline_config(value):
    from mycel.parallel.pipeline_schedule import SCHEDULERS
    known = {"pipeline_interleave", "pipeline_scheduler", "stage_recompute"}
    if not isinstance(value, dict) or set(value) - known:
        raise ValueError(f"set_auto_parallel_context: pipeline_config must be a dict with keys among "
                         f"{sorted(known)}, got {value!r}")
    out = {"pipeline_interleave": False, "pipeline_scheduler": "gpipe", "stage_recompute": False, **value}
    for key in ("pipeline_interleave", "stage_recompute"):
        if not isinstance(out[key], bool):
            raise TypeError(f"set_auto_parallel_context: pipeline_config['{key}'] must be a bool, got {out[key]!r}")
    if out["pipeline_scheduler"] not in SCHEDULERS:
        raise ValueError(f"set_auto_parallel_context: pipeline_config['pipeline_scheduler'] must be one of "
                         f"{SCHEDULERS}, got {out['pipeline_scheduler']!r}")
    return out


def _check_strategy_ckpt_config(value):
    known = {"save_file", "load_file", "only_trainable_params"}
    if not isinstance(value, dict) or set(value) - known:
        raise ValueError(f"set_auto_parallel_context: strategy_ckpt_config must be a dict with keys among "
                         f"{sorted(known)}, got {value!r}")
    for key in ("save_file", "load_file"):
        if value.get(key) is not None and not isinstance(value[key], (str, os.PathLike)):
            raise TypeError(f"set_auto_parallel_context: strategy_ckpt_config['{key}'] must be a path, "
                            f"got {value[key]!r}")
    return {k: os.fspath(v) if k.endswith("_file") and v else v for k, v in value.items()}


def strategy_save_path():
    """Where the strategy file of the planned layouts goes ('' for none): strategy_ckpt_config's
    save_file, else strategy_ckpt_save_file."""
    return _context["strategy_ckpt_config"].get("save_file") or _context["strategy_ckpt_save_file"]


def strategy_load_path():
    """The strategy file whose operator strategies AUTO_PARALLEL's search keeps ('' for none):
    strategy_ckpt_config's load_file, else strategy_ckpt_load_file."""
    return _context["strategy_ckpt_config"].get("load_file") or _context["strategy_ckpt_load_file"]


_loaded_cache = {}


def _loaded_strategies():
    """[(op key, strategy)] of the strategy file to load, read once per file version; checked
    against the mode: only AUTO_PARALLEL's searches (dynamic_programming, recursive_programming)
    take them, so a file set under another mode is an error rather than silently unused."""
    path = strategy_load_path()
    if not path:
        return []
    searching = ("dynamic_programming", "recursive_programming")
    if _context["parallel_mode"] != ParallelMode.AUTO_PARALLEL or _context["search_mode"] not in searching:
        raise ValueError(f"set_auto_parallel_context: a strategy file to load ('{path}') is used by "
                         f"parallel_mode='auto_parallel' with search_mode in {searching} (its search keeps "
                         f"the file's strategies); the mode is {_context['parallel_mode']!r} with "
                         f"search_mode {_context['search_mode']!r}")
    if not os.path.isfile(path):
        raise ValueError(f"set_auto_parallel_context: the strategy file to load '{path}' does not exist")
    from mycel import _mycel
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _loaded_cache:
        _, ops, _ = _mycel.io.load_strategy_file(path)
        _loaded_cache.clear()
        _loaded_cache[key] = [(name, [list(d) for d in inputs]) for name, _, inputs in ops]
    return _loaded_cache[key]


def set_auto_parallel_context(**kwargs):
    """Sets parallel_mode (ParallelMode.*), gradients_mean (bool), device_num (int >= 1),
    global_rank, gradient_fp32_sync, parameter_broadcast, comm_fusion ({'allreduce': {'mode':
    'size', 'config': MB}}: the gradient bucket size), search_mode (how AUTO_PARALLEL searches:
    "dynamic_programming", "recursive_programming", "sharding_propagation") and, a Mycel
    extension, topology (the cluster AUTO_PARALLEL's cost model prices: a dict or a JSON file,
    see mycel.parallel.search.load_topology; None: DEFAULT_TOPOLOGY) and slice_parameters (bool,
    default True, a Mycel extension: under SEMI_AUTO_PARALLEL / AUTO_PARALLEL in GRAPH_MODE,
    TrainOneStepCell stores each weight the pass splits as this rank's slice before its first
    compile, as MindSpore does; False keeps whole weights on every rank, see mycel.parallel.sliced),
    full_batch (SEMI_AUTO_PARALLEL / AUTO_PARALLEL: True, every rank is fed the whole global batch;
    False, each rank its block of it, and datasets shard themselves as in data parallel) and
    enable_parallel_optimizer (bool: each rank updates a 1/N block of each parameter and its
    optimizer state, mycel.parallel.optimizer_shard), pipeline_stages (int: with nn.PipelineCell,
    the number of stages; the processes divide into stages of device_num / pipeline_stages
    data-parallel ranks each), pipeline_config ({"pipeline_scheduler": "gpipe" | "1f1b", "stage_recompute": bool: under
    1f1b, a stage's backward recomputes its forward instead of keeping the residuals,
    "pipeline_interleave": bool: virtual stages, cells with a pipeline_segment, 1f1b only}) and
    comm_overlap (bool, a Mycel extension, default True: the gradient buckets' allreduces start
    while the backward still runs, see docs/parallel.md), strategy_ckpt_save_file (a path: when a
    split step is planned, the weights' layouts are written there as MindSpore's protobuf strategy
    file, mycel.parallel.strategy_file, with the searched operator strategies under
    AUTO_PARALLEL), strategy_ckpt_load_file (a path: AUTO_PARALLEL's search keeps the operator
    strategies that file holds, matched by op key, "matmul-op0", and searches the rest) and
    strategy_ckpt_config ({"save_file": path, "load_file": path, "only_trainable_params": bool})."""
    for key, value in kwargs.items():
        if key not in _context:
            raise ValueError(f"set_auto_parallel_context: unknown setting {key!r} "
                             f"(known: {', '.join(sorted(_context))})")
        if key == "parallel_mode":
            if value not in ParallelMode.MODE_LIST:
                raise ValueError(f"set_auto_parallel_context: parallel_mode must be one of "
                                 f"{ParallelMode.MODE_LIST}, got {value!r}")
            if value not in _IMPLEMENTED:
                raise NotImplementedError(f"set_auto_parallel_context: parallel_mode {value!r} is not "
                                          f"implemented yet; use one of {list(_IMPLEMENTED)}")
        elif key in ("gradients_mean", "gradient_fp32_sync", "parameter_broadcast", "slice_parameters", "full_batch",
                     "enable_parallel_optimizer", "comm_overlap"):
            if not isinstance(value, bool):
                raise TypeError(f"set_auto_parallel_context: {key} must be a bool, got {value!r}")
        elif key == "pipeline_stages":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"set_auto_parallel_context: pipeline_stages must be an int >= 1, got {value!r}")
        elif key == "pipeline_config":
            value = _check_pipeline_config(value)
        elif key in ("device_num", "global_rank"):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "device_num" else 0):
                raise ValueError(f"set_auto_parallel_context: {key} must be an int >= "
                                 f"{1 if key == 'device_num' else 0}, got {value!r}")
        elif key == "comm_fusion":
            value = _check_comm_fusion(value)
        elif key == "search_mode":
            if value not in SEARCH_MODES:
                raise ValueError(f"set_auto_parallel_context: search_mode must be one of {SEARCH_MODES}, "
                                 f"got {value!r}")
        elif key in ("strategy_ckpt_save_file", "strategy_ckpt_load_file"):
            if not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"set_auto_parallel_context: {key} must be a path, got {value!r}")
            value = os.fspath(value)
        elif key == "strategy_ckpt_config":
            value = _check_strategy_ckpt_config(value)
        elif key == "topology":
            if value is not None:
                from mycel.parallel.search import load_topology
                value = load_topology(value)  # checked (and "measure" measured) now, once
        _context[key] = value
        _explicit.add(key)
    _sync_semi_auto()


def get_auto_parallel_context(key):
    """The value of one setting."""
    if key not in _context:
        raise ValueError(f"get_auto_parallel_context: unknown setting {key!r}")
    return _context[key]


def reset_auto_parallel_context():
    """Restores every setting's default."""
    _context.clear()
    _context.update(_defaults())
    _explicit.clear()
    _sync_semi_auto()


def _is_semi_auto():
    """Whether the compiler's sharding pass runs: SEMI_AUTO_PARALLEL or AUTO_PARALLEL (the search
    and then the same pass)."""
    return _context["parallel_mode"] in (ParallelMode.SEMI_AUTO_PARALLEL, ParallelMode.AUTO_PARALLEL)


def _sync_semi_auto():
    """Tells the compiler's sharding pass the mode, the device count, this rank and, under
    AUTO_PARALLEL, the search mode and the topology."""
    import json
    from mycel import _mycel
    on = _is_semi_auto()
    n = _device_num() if on else 1
    comm = _mycel.comm
    if on and comm.initialized() and n != comm.world_size():
        raise ValueError(f"set_auto_parallel_context: {_context['parallel_mode']} needs device_num equal to the "
                         f"number of processes ({comm.world_size()}), got {n}")
    search = _context["parallel_mode"] == ParallelMode.AUTO_PARALLEL
    topo = ""
    if search:
        from mycel.parallel.search import DEFAULT_TOPOLOGY
        topo = json.dumps(_context["topology"] or DEFAULT_TOPOLOGY, sort_keys=True)
    loaded = _loaded_strategies() if on else []
    _mycel.autopar.set_semi_auto(on, n, comm.world_rank() if on and comm.initialized() else 0, search,
                                 _context["search_mode"], topo, -1.0, _context["full_batch"], 0, loaded)


def _is_data_parallel():
    return _context["parallel_mode"] in (ParallelMode.DATA_PARALLEL, ParallelMode.HYBRID_PARALLEL)


def _device_num():
    """How many processes share a data-parallel step: device_num if the user set it, else the
    world size."""
    if "device_num" in _explicit:
        return _context["device_num"]
    from mycel import _mycel
    return _mycel.comm.world_size() if _mycel.comm.initialized() else 1


def _bucket_bytes():
    return int(_context["comm_fusion"]["allreduce"]["config"] * (1 << 20))


def _shard_defaults():
    """(num_shards, shard_id) datasets take when the user gives neither: this rank's share of
    the data in data-parallel mode (and semi-auto / auto with full_batch=False) with more than one
    process, else (None, None)."""
    if not (_is_data_parallel() or (_is_semi_auto() and not _context["full_batch"])):
        return None, None
    from mycel import _mycel
    comm = _mycel.comm
    if not comm.initialized() or comm.world_size() == 1:
        return None, None
    return comm.world_size(), comm.world_rank()
