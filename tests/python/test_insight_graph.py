"""What SummaryCollector writes for the dashboard's graph, dataset and lineage pages: the compiled
train step's graph as a GraphDef that TensorBoard's own reader parses (names scoped by Cell, shapes
checked against the layers' arithmetic, source lines against the files), the dataset pipeline and
the run's lineage (metrics equal Model.eval's, the checkpoint is ModelCheckpoint's file)."""
import glob
import json
import linecache
import os

import numpy as np
import pytest

import mycel
from mycel import _mycel
from mycel.insight.graph_summary import graph_nodes
from mycel.train.summary import SummaryRecord

from insight_demo_logdir import SmallNet, make_demo_logdir
from insight_helpers import accumulator

tb_graph = pytest.importorskip("tensorboard.compat.proto.graph_pb2")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return make_demo_logdir(str(tmp_path_factory.mktemp("demo")))


def _our_graph(run_dir):
    for f in sorted(glob.glob(os.path.join(run_dir, "*tfevents*"))):
        for _, _, values in _mycel.insight.read_event_file(f)[0]:
            for v in values:
                if v["plugin"] == "graph":
                    return f, _mycel.insight.decode_graph_def(v["graph_def"])
    raise AssertionError(f"no graph event in {run_dir}")


def test_tensorboard_reads_the_same_graph(demo):
    path, ours = _our_graph(os.path.join(demo, "lr_0.05"))
    g = accumulator(path).Graph()  # TensorBoard's reader: a GraphDef parsed by real protobuf
    assert [(n.name, n.op, list(n.input)) for n in g.node] == [(n, op, ins) for n, op, ins, _ in ours]
    names = {n.name for n in g.node}
    for n in g.node:  # every input names a node of the graph
        assert set(n.input) <= names, n.name
    conv = next(n for n in g.node if n.op == "conv2d" and "/conv1/" in n.name)
    shapes = [[d.size for d in s.dim] for s in conv.attr["_output_shapes"].list.shape]
    assert shapes == [[8, 4, 12, 12]]  # 3x3 conv, padding 'same': 1x12x12 -> 4x12x12, batch 8
    assert conv.attr["T"].type == 1  # DT_FLOAT


def test_nodes_are_scoped_by_cell_with_shapes_and_source(demo):
    _, nodes = _our_graph(os.path.join(demo, "lr_0.2"))
    by_op = {}
    for name, op, ins, attrs in nodes:
        by_op.setdefault(op, []).append((name, ins, attrs))
    scopes = sorted(name.rsplit("/", 1)[0] for name, _, _ in by_op["conv2d"])
    assert scopes == ["Default/network/_backbone/conv1", "Default/network/_backbone/conv2"]
    (name, ins, attrs), = [x for x in by_op["conv2d"] if "/conv2/" in x[0]]
    assert "Default/network/_backbone/conv2/weight" in ins
    # conv2 reads the pooled map: 4 x 6 x 6 (12 / 2), and keeps the size (padding 'same')
    pool = next(a for n, _, a in by_op["max_pool2d"] if n.startswith("Default/network/_backbone/pool/"))
    assert pool["_output_shapes"] == [[8, 4, 6, 6]] and attrs["_output_shapes"] == [[8, 8, 6, 6]]
    (dense_name, _, dense), = by_op["dense"]
    assert dense_name.startswith("Default/network/_backbone/fc/") and dense["_output_shapes"] == [[8, 3]]
    file, line, _ = dense["_source"].rsplit(":", 2)
    assert dense["_source_text"] == linecache.getline(file, int(line)).strip()
    assert "ops.dense(" in dense["_source_text"]
    weights = {n: a for n, op, _, a in nodes if op == "Parameter"}
    assert weights["Default/network/_backbone/fc/weight"]["_output_shapes"] == [[3, 8 * 6 * 6]]
    assert any(n.startswith("Default/optimizer/") for n in weights)  # momentum slots


def test_graph_value_round_trips_every_attribute_kind(tmp_path):
    nodes = [("Default/x", "Input", [], {"_output_shapes": [[2, None]], "T": mycel.float32}),
             ("Default/s/op-1", "op", ["Default/x"],
              {"s": "text", "i": -3, "f": 0.5, "b": True, "ints": [1, 2], "floats": [0.25, 1],
               "strs": ["a", "b"], "types": [mycel.int32, mycel.bfloat16], "empty": [],
               "_output_shapes": [[], [3]]})]
    with SummaryRecord(str(tmp_path)) as rec:
        rec.add_value("graph", "g", nodes)
        rec.record(5)
    _, got = _our_graph(str(tmp_path))
    assert [(n, op, ins) for n, op, ins, _ in got] == [(n, op, ins) for n, op, ins, _ in nodes]
    attrs = got[1][3]
    assert attrs["s"] == "text" and attrs["i"] == -3 and attrs["f"] == 0.5 and attrs["b"] is True
    assert attrs["ints"] == [1, 2] and attrs["floats"] == [0.25, 1.0] and attrs["strs"] == ["a", "b"]
    assert attrs["types"] == [mycel.int32, mycel.bfloat16] and attrs["empty"] == []
    assert attrs["_output_shapes"] == [[], [3]] and got[0][3]["_output_shapes"] == [[2, None]]
    g = accumulator(glob.glob(str(tmp_path / "*tfevents*"))[0]).Graph()
    assert g.node[1].attr["types"].list.type == [3, 14]  # DT_INT32, DT_BFLOAT16
    assert [d.size for d in g.node[0].attr["_output_shapes"].list.shape[0].dim] == [2, -1]


def test_graph_value_errors_name_the_node_and_attribute(tmp_path):
    with SummaryRecord(str(tmp_path)) as rec:
        rec.add_value("graph", "g", [("n1", "op", [], {"bad": {"a": 1}})])
        with pytest.raises(TypeError, match="node 'n1' attribute 'bad'"):
            rec.record(0)
        with pytest.raises(TypeError, match="graph 'g' must be a list"):
            rec.add_value("graph", "g", "not nodes")


def test_scopes_of_a_plain_cell(tmp_path):
    net = SmallNet()
    compiled = _mycel.graph.compile(net)
    data = compiled.graph_data(mycel.Tensor(np.zeros((2, 1, 12, 12), np.float32)))
    nodes = graph_nodes(data, net)
    ops = {name.rsplit("/", 1)[0]: op for name, op, _, _ in nodes if op not in ("Parameter", "Const")}
    assert ops["Default/conv1"] == "conv2d" and ops["Default/fc"] == "dense"
    assert ops["Default/pool"] == "max_pool2d" and ops["Default/flatten"] in ("flatten", "reshape")


class _Block(mycel.nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = mycel.nn.Dense(8, 8)
        self.act = mycel.nn.ReLU()

    def construct(self, x):
        return self.act(self.fc(x))


class _Stack(mycel.nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = mycel.nn.CellList([_Block(), _Block()])
        self.out = mycel.nn.Dense(8, 2)

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


def test_scopes_are_exact_for_instances_of_one_class_and_their_gradients():
    # Two instances of one Block: source lines cannot tell them apart, nor can weights for the
    # ReLU's gradient ops (greater/cast/mul read no weight); the inlined-at chain can.
    net = _Stack()
    loss = mycel.nn.WithLossCell(net, mycel.nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                           reduction="mean"))
    step = mycel.nn.TrainOneStepCell(loss, mycel.nn.SGD(net.trainable_params(), 0.1))
    x = mycel.Tensor(np.ones((4, 8), np.float32))
    y = mycel.Tensor(np.array([0, 1, 0, 1], np.int32))
    data = _mycel.graph.compile(step).graph_data(x, y)
    nodes = [(name.rsplit("/", 1)[0], op) for name, op, _, _ in graph_nodes(data, step)
             if op not in ("Parameter", "Input", "Const")]
    base = "Default/network/_backbone"
    for k in (0, 1):
        ops = sorted(op for scope, op in nodes if scope == f"{base}/layers/{k}/act")
        assert ops == ["cast", "greater", "mul", "relu"], (k, ops)  # forward and its gradient
        ops = sorted(op for scope, op in nodes if scope == f"{base}/layers/{k}/fc")
        assert ops.count("dense") == 1 and ops.count("matmul") >= 1, (k, ops)
    assert {op for scope, op in nodes if scope == "Default/optimizer"} >= {"assign", "sub", "mul"}
    loss_ops = {op for scope, op in nodes if scope == "Default/network/_loss_fn"}
    assert "sparse_softmax_cross_entropy_with_logits" in loss_ops


def test_dataset_graph_and_lineage(demo):
    run = os.path.join(demo, "lr_0.2")
    g = json.load(open(os.path.join(run, "dataset_graph.json")))
    assert [n["op"] for n in g["nodes"]] == ["BatchDataset", "MapDataset", "NumpySlicesDataset"]
    assert g["nodes"][0]["children"] == [1] and g["nodes"][0]["params"]["batch_size"] == 8
    assert g["nodes"][1]["params"]["operations"] == [{"class": "Rescale", "rescale": 1.0,
                                                      "shift": 0.0}]
    assert g["nodes"][1]["params"]["input_columns"] == ["image"]
    assert g["nodes"][2]["columns"] == ["image", "label"]
    lin = json.load(open(os.path.join(run, "lineage.json")))
    assert lin["network"] == "SmallNet" and lin["optimizer"] == "Momentum"
    assert lin["loss_function"] == "SoftmaxCrossEntropyWithLogits"
    assert lin["learning_rate"] == pytest.approx(0.2) and lin["batch_size"] == 8 and lin["epoch"] == 2
    assert lin["dataset_pipeline"] == ["NumpySlicesDataset", "MapDataset", "BatchDataset"]
    assert lin["custom"] == {"seed": 1, "note": "demo lr_0.2"}
    assert lin["checkpoint"] == os.path.join(run, "ckpt", "small-2_4.ckpt")
    assert os.path.isfile(lin["checkpoint"])
    assert 0 <= lin["metrics"]["acc"] <= 1 and np.isfinite(lin["train_loss"])
    # the same accuracy as the eval scalar the collector recorded
    acc = [v["value"] for f in sorted(glob.glob(os.path.join(run, "*tfevents*")))
           for _, _, vals in _mycel.insight.read_event_file(f)[0] for v in vals
           if v["tag"] == "eval/acc/auto"]
    assert acc == [pytest.approx(lin["metrics"]["acc"])]
    assert not [f for f in os.listdir(run) if ".tmp-" in f]  # written whole, renamed


@pytest.mark.parametrize("mode,sink,asked", [(mycel.GRAPH_MODE, True, False),
                                             (mycel.PYNATIVE_MODE, False, True),
                                             (mycel.PYNATIVE_MODE, False, False)])
def test_graph_in_sink_mode_and_pynative(tmp_path, mode, sink, asked):
    """Sink mode has no step inputs in Python: the graph is compiled for the dataset's first row.
    PyNative mode compiles the step for the graph only when collect_graph is asked for."""
    from mycel import nn
    from mycel.train import Model
    from mycel.train.callback import SummaryCollector
    import mycel.dataset as ds
    old = mycel.get_context("mode")
    mycel.set_context(mode=mode)
    try:
        rng = np.random.default_rng(0)
        data = ds.NumpySlicesDataset((rng.normal(size=(8, 4)).astype(np.float32),
                                      rng.normal(size=(8, 2)).astype(np.float32)),
                                     column_names=["x", "y"], shuffle=False).batch(4)
        net = nn.Dense(4, 2)
        model = Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.1, 0.9))
        spec = {"collect_graph": True} if asked else None
        model.train(1, data, callbacks=[SummaryCollector(str(tmp_path), collect_freq=1,
                                                         collect_specified_data=spec)],
                    dataset_sink_mode=sink)
    finally:
        mycel.set_context(mode=old)
    if mode == mycel.PYNATIVE_MODE and not asked:
        with pytest.raises(AssertionError, match="no graph event"):
            _our_graph(str(tmp_path))
        return
    _, nodes = _our_graph(str(tmp_path))
    dense = [a for n, op, _, a in nodes if op == "dense" and n.startswith("Default/network/_backbone/")]
    assert [a["_output_shapes"] for a in dense] == [[[4, 2]]]
