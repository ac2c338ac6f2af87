"""nn.Cell bookkeeping: parameter registration and names, traversal, training flag, to_float,
containers; in both modes where the Cell runs."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 3, 3, has_bias=True)
        self.bn = nn.BatchNorm2d(3)
        self.scale = Parameter(Tensor(np.float32(2.0)))

    def construct(self, x):
        return self.bn(self.conv1(x)) * self.scale


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.backbone = Block()
        self.head = nn.SequentialCell([nn.Flatten(), nn.Dense(3 * 6 * 6, 5)])
        self.shared = self.head  # the same Cell twice: its parameters are listed once

    def construct(self, x):
        return self.head(self.backbone(x))


def test_parameter_names_follow_attribute_paths():
    net = Net()
    names = [n for n, _ in net.parameters_and_names()]
    # A Cell's own Parameters come before its children's (MindSpore's order).
    assert names == ["backbone.scale", "backbone.conv1.weight", "backbone.conv1.bias", "backbone.bn.gamma",
                     "backbone.bn.beta", "backbone.bn.moving_mean", "backbone.bn.moving_variance",
                     "head.1.weight", "head.1.bias"]
    assert [p.name for p in net.get_parameters()] == names  # Parameter.name is updated too
    assert [p.name for p in net.trainable_params()] == [n for n in names if "moving" not in n]
    assert len(net.untrainable_params()) == 2
    assert list(net.parameters_dict()) == names


def test_explicit_names_kept_at_top_level_and_unnamed_take_attribute():
    cell = nn.Cell()
    cell.w = Parameter(Tensor(np.zeros(2, np.float32)), name="my_w")
    cell.v = Parameter(Tensor(np.zeros(2, np.float32)))
    assert (cell.w.name, cell.v.name) == ("my_w", "v")
    cell.insert_param_to_cell("u", Parameter(Tensor(np.zeros(1, np.float32)), requires_grad=False))
    assert [n for n, _ in cell.parameters_and_names()] == ["w", "v", "u"]
    assert cell.trainable_params() == [cell.w, cell.v]


def test_cells_and_names_and_name_cells():
    net = Net()
    names = [n for n, _ in net.cells_and_names()]
    assert names == ["", "backbone", "backbone.conv1", "backbone.bn", "head", "head.0", "head.1"]
    assert list(net.name_cells()) == ["backbone", "head", "shared"]


def test_set_train_propagates():
    net = Net()
    assert not any(c.training for _, c in net.cells_and_names())
    net.set_train()
    assert all(c.training for _, c in net.cells_and_names())
    net.set_train(False)
    assert not net.backbone.bn.training


def test_insert_errors():
    cell = nn.Cell()
    with pytest.raises(KeyError, match="must not contain"):
        cell.insert_param_to_cell("a.b", Parameter(Tensor(np.zeros(1, np.float32))))
    with pytest.raises(TypeError, match="must be a Parameter"):
        cell.insert_param_to_cell("p", Tensor(np.zeros(1, np.float32)))
    with pytest.raises(TypeError, match="must be a Cell"):
        cell.insert_child_to_cell("c", 3)
    cell.w = Parameter(Tensor(np.zeros(1, np.float32)))
    with pytest.raises(TypeError, match="cannot assign"):
        cell.w = 3


def test_training_flag_changes_graph_mode_output():
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((4, 2, 6, 6)).astype(np.float32))
    net = Net()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net.set_train(False)
    eval_out = net(x).asnumpy()
    net.set_train(True)
    train_out = net(x).asnumpy()  # batch statistics now: a recompiled graph, different values
    assert not np.allclose(eval_out, train_out)
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    net.set_train(False)
    np.testing.assert_allclose(net(x).asnumpy(), net(x).asnumpy())


def test_to_float_casts_inputs():
    class Echo(nn.Cell):
        def construct(self, x):
            return x * 1.0
    x = Tensor(np.arange(4, dtype=np.float32))
    cell = Echo().to_float(mycel.float16)
    out = cell(x)
    assert out.dtype == mycel.float16
    np.testing.assert_array_equal(out.asnumpy(), np.arange(4))
    assert cell(Tensor(np.arange(3, dtype=np.int32))).dtype == mycel.float32  # ints untouched
    with pytest.raises(ValueError, match="float dtype"):
        Echo().to_float(mycel.int32)


def test_cell_list_and_sequential_cell_editing():
    layers = nn.CellList([nn.ReLU(), nn.Dense(2, 2)])
    layers.append(nn.Dense(2, 3))
    layers.insert(0, nn.Tanh())
    assert len(layers) == 4 and isinstance(layers[0], nn.Tanh) and isinstance(layers[-1], nn.Dense)
    assert [n for n, _ in layers.parameters_and_names()] == ["2.weight", "2.bias", "3.weight", "3.bias"]
    del layers[0]
    assert [type(c).__name__ for c in layers] == ["ReLU", "Dense", "Dense"]
    seq = nn.SequentialCell(nn.Dense(3, 4), nn.ReLU())
    seq.append(nn.Dense(4, 2))
    seq[1] = nn.Tanh()
    assert len(seq) == 3 and isinstance(seq[1], nn.Tanh)
    assert [type(c).__name__ for c in seq] == ["Dense", "Tanh", "Dense"]
    x = Tensor(np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32))
    w0, b0 = seq[0].weight.asnumpy(), seq[0].bias.asnumpy()
    w2, b2 = seq[2].weight.asnumpy(), seq[2].bias.asnumpy()
    ref = np.tanh(x.asnumpy() @ w0.T + b0) @ w2.T + b2
    np.testing.assert_allclose(seq(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(seq(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="must be Cells"):
        seq.append(3)
