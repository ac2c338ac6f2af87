"""mycel.amp: O0/O2/O3 compute dtypes (Parameters stay float32), outputs in float32,
build_train_network with loss scaling."""
import os
import warnings

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
    return {name: p.dtype.name for name, p in net.parameters_and_names()}


def test_o0_changes_nothing():
    net = ConvBNNet()
    assert amp.auto_mixed_precision(net, "O0") is net
    assert set(_dtypes(net).values()) == {"float32"}


def _compute_dtypes(net):
    """Each Cell's compute dtype; "input" for one that runs on its input's dtype (no cast)."""
    return {name: getattr(cell._float_dtype, "name", "input") for name, cell in net.cells_and_names()
            if name}


def test_o2_casts_all_but_norms_and_outputs_float32():
    net = ConvBNNet()
    x = np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)
    ref = net(Tensor(x)).asnumpy()
    wrapped = amp.auto_mixed_precision(net, "O2")
    assert set(_dtypes(net).values()) == {"float32"}  # float32 master weights
    for name, dtype in _compute_dtypes(net).items():
        # BatchNorm and LayerNorm read bf16 activations with float32 statistics (no cast).
        expected = "input" if name in ("bn", "norm") else "bfloat16"
        assert dtype == expected, name
    out = wrapped(Tensor(x))
    assert out.dtype == mycel.float32
    # bfloat16 keeps ~3 significant digits: the result stays close to the float32 one.
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=0.05, atol=0.05)


def test_o3_casts_everything():
    net = ConvBNNet()
    wrapped = amp.auto_mixed_precision(net, "O3")
    assert set(_dtypes(net).values()) == {"float32"}
    assert set(_compute_dtypes(net).values()) == {"bfloat16"}
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


def _amp_losses(level, mode, steps=3):
    """Losses of `steps` O2/O3 training steps of a fixed-seed ConvBNNet in `mode`, and its weights."""
    mycel.set_context(mode=mode)
    try:
        mycel.set_seed(7)
        net = ConvBNNet()
        step = amp.build_train_network(net, SGD(net.trainable_params(), 0.05),
                                       nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), level=level)
        x = np.random.default_rng(1).standard_normal((4, 1, 6, 6)).astype(np.float32)
        y = np.array([0, 1, 2, 1], np.int32)
        losses = []
        for _ in range(steps):
            loss = step(Tensor(x), Tensor(y))
            assert loss.dtype == mycel.float32
            losses.append(float(loss.asnumpy()))
        return losses, {n: p.asnumpy().astype(np.float32) for n, p in net.parameters_and_names()}
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("level", ["O2", "O3"])
def test_amp_training_step_graph_mode_matches_pynative(level):
    # Graph mode must apply to_float's input casts (the frontend inserts them) exactly as the eager
    # Cell.__call__ does: the same bfloat16 computation, so the same losses and updated weights.
    eager, w_eager = _amp_losses(level, mycel.PYNATIVE_MODE)
    graph, w_graph = _amp_losses(level, mycel.GRAPH_MODE)
    assert all(np.isfinite(eager)) and eager[-1] < eager[0]  # it trains
    np.testing.assert_allclose(graph, eager, rtol=2e-2, atol=1e-3)
    for name in w_eager:
        np.testing.assert_allclose(w_graph[name], w_eager[name], rtol=2e-2, atol=2e-2, err_msg=name)


def test_to_float_casts_sub_cell_inputs_in_graph_mode():
    # A float32 input reaching a bfloat16 sub-Cell: without the cast, conv2d rejects mixed dtypes.
    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner = nn.Dense(3, 2)
            amp._set_cell_dtype(self.inner, mycel.bfloat16)  # what O2 does per Cell

        def construct(self, x, n):
            return self.inner(x), n  # n: an int32 tensor, left alone by the cast

    net = Outer()
    x = np.array([[1.0, 2.0, -1.0]], np.float32)
    n = np.array([3], np.int32)
    eager_out, eager_n = net(Tensor(x), Tensor(n))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        out, n_out = net(Tensor(x), Tensor(n))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert out.dtype == mycel.bfloat16 and n_out.dtype == mycel.int32
    w = net.inner.weight.asnumpy().astype(np.float32)
    b = net.inner.bias.asnumpy().astype(np.float32)
    np.testing.assert_allclose(out.asnumpy().astype(np.float32), x @ w.T + b, rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(out.asnumpy(), eager_out.asnumpy())


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


def _cpuinfo_has_bf16_units():
    """The independent reference: the kernel's CPU flags (no ISA cap set in the environment)."""
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    return "avx512_bf16" in flags or "amx_bf16" in flags


@pytest.mark.skipif(any(os.environ.get(v) for v in ("MYCEL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA")),
                    reason="an ISA cap changes what the process may use, not what /proc/cpuinfo lists")
def test_bf16_level_warns_once_without_bf16_units(monkeypatch):
    """Without AVX512-BF16 or AMX bfloat16 is emulated and slower than float32: a bfloat16 level
    says so once per process (AmpPerformanceWarning); O0 and float16 never do; with the units,
    nothing is said."""
    from mycel import _mycel
    has = _cpuinfo_has_bf16_units()
    assert _mycel.cpu_has_bf16_units() == has
    monkeypatch.setattr(amp, "_warned_no_bf16_units", False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        amp.auto_mixed_precision(ConvBNNet(), "O0")
        amp.auto_mixed_precision(ConvBNNet(), "O2", dtype=mycel.float16)
        assert not [w for w in got if issubclass(w.category, amp.AmpPerformanceWarning)]
        amp.auto_mixed_precision(ConvBNNet(), "O2")
        amp.build_train_network(ConvBNNet(), nn.Momentum(ConvBNNet().trainable_params(), 0.1, 0.9),
                                nn.MSELoss(), level="O3")
    mine = [w for w in got if issubclass(w.category, amp.AmpPerformanceWarning)]
    if has:
        assert not mine
    else:
        assert len(mine) == 1 and "no bfloat16 units" in str(mine[0].message)
        assert mine[0].filename == __file__  # points at the caller's line
