"""MindSpore's strategy checkpoint files: the protobuf file `set_auto_parallel_context(
strategy_ckpt_save_file=...)` writes when a split run is planned, which `load_distributed_checkpoint(
train_strategy_filename=...)` and `build_searched_strategy` read. The format is MindSpore's
(src/mycel/io/proto/parallel_strategy.proto), so files pass between the two frameworks; the I/O
and validation are C++ (src/mycel/io/strategy_file.cc).

Mycel's layouts are (device_matrix, tensor_map, whole shape) with tensor_map counting device axes
from the left (docs/parallel.md); MindSpore's count from the right and store the slice shape."""
import os

from mycel import _mycel


def _to_mindspore(name, layout):
    dev, tmap, shape = (list(x) for x in layout[:3])
    n = len(dev)
    ms_map = [n - 1 - m if m >= 0 else -1 for m in tmap]
    split = [s // dev[m] if m >= 0 else s for s, m in zip(shape, tmap)]
    return (name, dev, ms_map, split, 0, 0, 0)


def _from_mindspore(fn, path, row):
    name, dev, ms_map, split, field, step, size = row
    if field != 0 or step > 0 or size > 1:
        raise NotImplementedError(
            f"{fn}: '{path}': parameter '{name}' uses a field split ({field}) or optimizer sharding "
            f"(opt_weight_shard_step {step}, opt_weight_shard_size {size}), which Mycel's checkpoint "
            f"merging does not read; save the strategy without enable_parallel_optimizer")
    n = len(dev)
    tmap = [n - 1 - m if m >= 0 else -1 for m in ms_map]
    shape = [s * dev[m] if m >= 0 else s for s, m in zip(split, tmap)]
    return (tuple(dev), tuple(tmap), tuple(shape))


def _path(fn, path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{fn}: the strategy file must be a path, got {type(path).__name__}")
    return os.fspath(path)


def save_strategy_file(path, layouts, current_stage=0, op_strategies=()):
    """Writes {name: (device_matrix, tensor_map, shape)} (Mycel's layouts, e.g.
    mycel.parallel.sliced.parameter_layouts(net)) and [(op key, strategy)] (what AUTO_PARALLEL's
    search chose, mycel._mycel.autopar.searched_strategies()) as a MindSpore strategy file,
    atomically."""
    fn = "save_strategy_file"
    path = _path(fn, path)
    rows = [_to_mindspore(name, layout) for name, layout in layouts.items()]
    ops = [(name, int(current_stage), [list(d) for d in st]) for name, st in op_strategies]
    _mycel.io.save_strategy_file(path, int(current_stage), ops, rows)
    return path


def load_op_strategies(path):
    """[(op key, strategy)] of a strategy file: what strategy_ckpt_load_file makes AUTO_PARALLEL's
    search keep."""
    fn = "load_op_strategies"
    path = _path(fn, path)
    if not os.path.isfile(path):
        raise ValueError(f"{fn}: the strategy file '{path}' does not exist")
    _, ops, _ = _mycel.io.load_strategy_file(path)
    return [(name, tuple(tuple(d) for d in inputs)) for name, _, inputs in ops]


def load_strategy_file(path):
    """{name: (device_matrix, tensor_map, shape)} (Mycel's layouts) from a MindSpore strategy
    file; a corrupt file raises ValueError naming it."""
    fn = "load_strategy_file"
    path = _path(fn, path)
    if not os.path.isfile(path):
        raise ValueError(f"{fn}: the strategy file '{path}' does not exist")
    _, _, rows = _mycel.io.load_strategy_file(path)
    return {row[0]: _from_mindspore(fn, path, row) for row in rows}


def is_strategy_file(path):
    """Whether `path` holds a protobuf strategy file rather than Mycel's JSON layouts."""
    with open(path, "rb") as f:
        head = f.read(64).lstrip()
    return not head.startswith((b"{", b"["))


class _Dims:
    """One repeated-dims message (MindSpore code reads `layout.dev_matrix[0].dim`)."""

    def __init__(self, dims):
        self.dim = list(dims)

    def __repr__(self):
        return f"dim: {self.dim}"


class ParallelLayouts:
    """A parameter's layout as build_searched_strategy returns it, with the fields of MindSpore's
    ParallelLayouts message (dev_matrix[0].dim, tensor_map[0].dim counted from the right,
    param_split_shape[0].dim, field, opt_weight_shard_step, opt_weight_shard_size)."""

    def __init__(self, dev, ms_map, split, field, step, size):
        self.dev_matrix = [_Dims(dev)]
        self.tensor_map = [_Dims(ms_map)]
        self.param_split_shape = [_Dims(split)]
        self.indices_offset = [_Dims([])]
        self.field, self.opt_weight_shard_step, self.opt_weight_shard_size = field, step, size

    def to_mycel(self):
        """(device_matrix, tensor_map, shape) in Mycel's convention."""
        row = (None, self.dev_matrix[0].dim, self.tensor_map[0].dim, self.param_split_shape[0].dim,
               self.field, self.opt_weight_shard_step, self.opt_weight_shard_size)
        return _from_mindspore("ParallelLayouts", "layout", row)

    def __repr__(self):
        return (f"ParallelLayouts(dev_matrix={self.dev_matrix[0].dim}, tensor_map={self.tensor_map[0].dim}, "
                f"param_split_shape={self.param_split_shape[0].dim})")


def build_searched_strategy(strategy_filename):
    """MindSpore's build_searched_strategy: {parameter name: ParallelLayouts} of a strategy file."""
    fn = "build_searched_strategy"
    path = _path(fn, strategy_filename)
    if not os.path.isfile(path):
        raise ValueError(f"{fn}: the strategy file '{path}' does not exist")
    _, _, rows = _mycel.io.load_strategy_file(path)
    return {name: ParallelLayouts(dev, m, split, field, step, size)
            for name, dev, m, split, field, step, size in rows}
