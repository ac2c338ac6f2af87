"""MindSpore's strategy checkpoint files (protobuf): Mycel's layouts written and read back, files
built by Google's protobuf runtime (from our .proto, whose field numbers are checked against
MindSpore's node_strategy.proto) read by Mycel and Mycel's files read by it, MindSpore's
right-counted tensor maps and slice shapes, build_searched_strategy, and corrupt files rejected.
The end-to-end use (a split run writing the file, load_distributed_checkpoint reading it) is in
test_parallel_sliced.py."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import mycel
from mycel.parallel import strategy_file

PROTO = os.path.join(os.path.dirname(__file__), "..", "..", "src", "mycel", "io", "proto",
                     "parallel_strategy.proto")

# MindSpore's node_strategy.proto: message -> {field: (number, type)} (what must match on the wire).
MINDSPORE_FIELDS = {
    "ParameterLayout": {"dev_matrix": 1, "tensor_map": 2, "param_split_shape": 3, "indices_offset": 4,
                        "field": 5, "opt_weight_shard_step": 6, "opt_weight_shard_size": 7},
    "ParameterLayoutItem": {"param_name": 1, "layout": 2},  # MindSpore: parallel_layouts
    "StrategyMap": {"current_stage": 1, "op_strategy_item": 2,  # parallel_strategy_item
                    "parameter_layout_item": 3},  # parallel_layout_item
    "OpStrategy": {"stage": 1, "input": 2},  # parallel_strategy
    "OpStrategyItem": {"node_name": 1, "strategy": 2},  # parallel_strategys
}


@pytest.fixture(scope="module")
def pb():
    """Message classes built by the protobuf runtime from our .proto (protoc's descriptor set)."""
    if shutil.which("protoc") is None:
        pytest.skip("protoc is not installed")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        root = os.path.dirname(os.path.abspath(PROTO))
        subprocess.run(["protoc", f"-I{root}", f"--descriptor_set_out={out}", os.path.basename(PROTO)],
                       check=True)
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"mycel.strategy.{name}"))
            for name in ("StrategyMap", "ParameterLayout")}


def test_field_numbers_match_mindspore(pb):
    msgs = {"StrategyMap": pb["StrategyMap"].DESCRIPTOR}
    d = msgs["StrategyMap"]
    msgs["ParameterLayoutItem"] = d.fields_by_name["parameter_layout_item"].message_type
    msgs["ParameterLayout"] = msgs["ParameterLayoutItem"].fields_by_name["layout"].message_type
    msgs["OpStrategyItem"] = d.fields_by_name["op_strategy_item"].message_type
    msgs["OpStrategy"] = msgs["OpStrategyItem"].fields_by_name["strategy"].message_type
    for msg, fields in MINDSPORE_FIELDS.items():
        got = {f.name: f.number for f in msgs[msg].fields}
        assert got == fields, msg


def test_mycel_layouts_round_trip_and_read_by_protobuf(tmp_path, pb):
    # Mycel's convention: (device_matrix, tensor_map counted from the left, whole shape).
    layouts = {"fc1.weight": ((2, 4), (1, 0), (16, 6)),   # dim 0 over 4 devices, dim 1 over 2
               "fc1.bias": ((2, 4), (-1,), (16,)),
               "fc2.weight": ((8,), (-1, 0), (10, 16))}
    path = strategy_file.save_strategy_file(str(tmp_path / "s.ckpt"), layouts)
    assert strategy_file.load_strategy_file(path) == {k: tuple(tuple(x) for x in v) for k, v in layouts.items()}
    m = pb["StrategyMap"].FromString(open(path, "rb").read())
    items = {i.param_name: i.layout for i in m.parameter_layout_item}
    w1 = items["fc1.weight"]
    assert list(w1.dev_matrix[0].dim) == [2, 4]
    assert list(w1.tensor_map[0].dim) == [0, 1]          # MindSpore counts from the right
    assert list(w1.param_split_shape[0].dim) == [4, 3]   # the slice: 16 / 4, 6 / 2
    assert list(items["fc2.weight"].tensor_map[0].dim) == [-1, 0]
    assert list(items["fc2.weight"].param_split_shape[0].dim) == [10, 2]


def test_a_file_written_as_mindspore_writes_it(tmp_path, pb):
    m = pb["StrategyMap"]()
    m.current_stage = 0
    op = m.op_strategy_item.add()
    op.node_name = "Default/MatMul-op0"
    op.strategy.stage = 0
    op.strategy.input.add().dim.extend([2, 1])
    op.strategy.input.add().dim.extend([1, 4])
    item = m.parameter_layout_item.add()
    item.param_name = "w"
    lay = item.layout
    lay.dev_matrix.add().dim.extend([2, 4])
    lay.tensor_map.add().dim.extend([-1, 0])  # dim 1 split over the last axis (4 devices)
    lay.param_split_shape.add().dim.extend([32, 16])
    lay.indices_offset.add()
    lay.field, lay.opt_weight_shard_step, lay.opt_weight_shard_size = 0, 0, 0
    path = str(tmp_path / "ms.ckpt")
    open(path, "wb").write(m.SerializeToString())
    assert strategy_file.load_strategy_file(path) == {"w": ((2, 4), (-1, 1), (32, 64))}
    found = mycel.build_searched_strategy(path)
    assert list(found["w"].dev_matrix[0].dim) == [2, 4]
    assert list(found["w"].tensor_map[0].dim) == [-1, 0]
    assert list(found["w"].param_split_shape[0].dim) == [32, 16]
    assert found["w"].to_mycel() == ((2, 4), (-1, 1), (32, 64))
    stage, ops, _ = mycel._mycel.io.load_strategy_file(path)
    assert stage == 0 and ops == [("Default/MatMul-op0", 0, [[2, 1], [1, 4]])]
    # Optimizer sharding is not read by Mycel's merge: a clear error, not wrong weights.
    lay.opt_weight_shard_step, lay.opt_weight_shard_size = 2, 4
    open(path, "wb").write(m.SerializeToString())
    with pytest.raises(NotImplementedError, match="optimizer sharding"):
        strategy_file.load_strategy_file(path)


def test_merging_slices_with_a_strategy_file(tmp_path):
    # Two ranks held the column halves of w (dev (2,), map (-1, 0)): merged back whole.
    w = np.arange(24, dtype=np.float32).reshape(4, 6)
    layouts = {"w": ((2,), (-1, 0), (4, 6))}
    spath = strategy_file.save_strategy_file(str(tmp_path / "s.ckpt"), layouts)
    files = []
    for r in range(2):
        f = str(tmp_path / f"r{r}.ckpt")
        mycel.save_checkpoint({"w": mycel.Tensor(w[:, 3 * r:3 * r + 3])}, f)
        files.append(f)

    class Net(mycel.nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = mycel.Parameter(mycel.Tensor(np.zeros((4, 6), np.float32)), name="w")

        def construct(self, x):
            return x

    net = Net()
    mycel.load_distributed_checkpoint(net, files, train_strategy_filename=spath)
    np.testing.assert_array_equal(net.w.asnumpy(), w)


def test_corrupt_and_inconsistent_files_are_clean_errors(tmp_path, pb):
    path = str(tmp_path / "bad.ckpt")
    for blob in (b"", b"\x08", b"\xff" * 40, os.urandom(200)):
        open(path, "wb").write(blob)
        with pytest.raises((ValueError, NotImplementedError)):
            strategy_file.load_strategy_file(path)

    def layout_file(dev, tmap, split):
        m = pb["StrategyMap"]()
        m.current_stage = 0
        item = m.parameter_layout_item.add()
        item.param_name = "w"
        item.layout.dev_matrix.add().dim.extend(dev)
        item.layout.tensor_map.add().dim.extend(tmap)
        item.layout.param_split_shape.add().dim.extend(split)
        item.layout.field = item.layout.opt_weight_shard_step = item.layout.opt_weight_shard_size = 0
        open(path, "wb").write(m.SerializeToString())

    layout_file([2, 2], [2, -1], [4, 4])
    with pytest.raises(ValueError, match="outside the device matrix"):
        strategy_file.load_strategy_file(path)
    layout_file([2, 2], [0, 0], [4, 4])
    with pytest.raises(ValueError, match="uses an axis twice"):
        strategy_file.load_strategy_file(path)
    layout_file([2, 0], [0, -1], [4, 4])
    with pytest.raises(ValueError, match="below 1"):
        strategy_file.load_strategy_file(path)
    layout_file([2], [0], [4, 4])
    with pytest.raises(ValueError, match="tensor map of 1 dims for a slice shape of 2"):
        strategy_file.load_strategy_file(path)
    with pytest.raises(ValueError, match="does not exist"):
        strategy_file.load_strategy_file(str(tmp_path / "missing.ckpt"))
