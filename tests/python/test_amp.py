"""mycel.amp: O0/O2/O3 casts, outputs in float32, build_train_network with loss scaling."""
import numpy as np
import pytest

import mycel
from mycel import amp, nn, ops, Tensor

from train_helpers import SGD, Linear, np_mse_and_grads, regression_data


class ConvBNNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="valid")
        self.bn = nn.BatchNorm2d(4)
        self.flatten = nn.Flatten()
        self.norm = nn.LayerNorm((64,))
        self.fc = nn.Dense(64, 3)

    def construct(self, x):
        return self.fc(self.norm(self.flatten(ops.relu(self.bn(self.conv(x))))))


def _dtypes(net):
    return {name: str(p.dtype) for name, p in net.parameters_and_names()}


def test_o0_changes_nothing():
    net = ConvBNNet()
    assert amp.auto_mixed_precision(net, "O0") is net
    assert set(_dtypes(net).values()) == {"float32"}


def test_o2_casts_all_but_norms_and_outputs_float32():
    net = ConvBNNet()
    x = np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)
    ref = net(Tensor(x)).asnumpy()
    wrapped = amp.auto_mixed_precision(net, "O2")
    dtypes = _dtypes(net)
    for name, dtype in dtypes.items():
        expected = "float32" if name.startswith(("bn.", "norm.")) else "bfloat16"
        assert dtype == expected, name
    out = wrapped(Tensor(x))
    assert out.dtype == mycel.float32
    # bfloat16 keeps ~3 significant digits: the result stays close to the float32 one.
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=0.05, atol=0.05)


def test_o3_casts_everything():
    net = ConvBNNet()
    wrapped = amp.auto_mixed_precision(net, "O3")
    assert set(_dtypes(net).values()) == {"bfloat16"}
    assert wrapped(Tensor(np.ones((2, 1, 6, 6), np.float32))).dtype == mycel.float32


def test_same_parameter_objects_after_cast():
    net = ConvBNNet()
    before = [id(p) for p in net.get_parameters()]
    amp.auto_mixed_precision(net, "O2")
    assert [id(p) for p in net.get_parameters()] == before


def test_bad_levels():
    with pytest.raises(ValueError, match="amp_level must be one of"):
        amp.auto_mixed_precision(ConvBNNet(), "O5")
    with pytest.raises(TypeError, match="'network' must be a Cell"):
        amp.auto_mixed_precision(3, "O2")
    with pytest.raises(ValueError, match="scale_factor must be a number > 1"):
        amp.DynamicLossScaleManager(scale_factor=1)


def test_o2_training_step_runs():
    net = ConvBNNet()
    step = amp.build_train_network(net, SGD(net.trainable_params(), 0.01),
                                   nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), level="O2")
    loss = step(Tensor(np.ones((2, 1, 6, 6), np.float32)), Tensor(np.array([0, 1], np.int32)))
    assert loss.dtype == mycel.float32 and np.isfinite(loss.asnumpy())


def test_build_train_network_with_managers():
    w = np.array([[0.5, -0.3, 0.2]], np.float32)
    b = np.array([0.1], np.float32)
    x, y = regression_data()
    _, gw, _ = np_mse_and_grads(w, b, x, y)
    for manager, cls in [(amp.FixedLossScaleManager(64.0), nn.TrainOneStepWithLossScaleCell),
                         (amp.DynamicLossScaleManager(2 ** 10, 2, 5), nn.TrainOneStepWithLossScaleCell),
                         (None, nn.TrainOneStepCell)]:
        net = Linear(w, b)
        step = amp.build_train_network(net, SGD(net.trainable_params(), 0.1), nn.MSELoss(),
                                       loss_scale_manager=manager)
        assert type(step) is cls
        step(Tensor(x), Tensor(y))
        np.testing.assert_allclose(net.w.asnumpy(), w - 0.1 * gw, rtol=1e-5, atol=1e-6)
    # drop_overflow_update=False: a plain step with sens = scale (the optimizer divides by it).
    net = Linear(w, b)
    step = amp.build_train_network(net, SGD(net.trainable_params(), 0.1), nn.MSELoss(),
                                   loss_scale_manager=amp.FixedLossScaleManager(4.0, drop_overflow_update=False))
    assert type(step) is nn.TrainOneStepCell and step.sens == 4.0
    step(Tensor(x), Tensor(y))
    np.testing.assert_allclose(net.w.asnumpy(), w - 0.4 * gw, rtol=1e-5, atol=1e-6)


def test_dynamic_manager_host_rule_matches_update_cell():
    manager = amp.DynamicLossScaleManager(2 ** 4, 2, 2)
    cell = manager.get_update_cell()
    scale = mycel.Parameter(Tensor(np.array(2.0 ** 4, np.float32)), name="s")
    for overflow in [False, False, True, False, False, False, True, True, False]:
        manager.update_loss_scale(overflow)
        cell(scale, Tensor(np.array(overflow)))
        assert manager.get_loss_scale() == float(scale.asnumpy())
