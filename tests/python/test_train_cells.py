"""WithLossCell, WithEvalCell, TrainOneStepCell and loss scaling against numpy references."""
import numpy as np
import pytest

import mycel
from mycel import nn, Tensor

from train_helpers import MODES, BOTH_MODES, SGD, MomentumSGD, Linear, np_mse_and_grads, regression_data


@pytest.fixture(params=MODES)
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.fixture(params=BOTH_MODES)
def any_mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _setup(seed=1):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((1, 3)).astype(np.float32)
    b = rng.standard_normal((1,)).astype(np.float32)
    return w, b


def test_with_loss_cell_matches_numpy(any_mode):
    w, b = _setup()
    x, y = regression_data()
    cell = nn.WithLossCell(Linear(w, b), nn.MSELoss())
    loss, _, _ = np_mse_and_grads(w, b, x, y)
    np.testing.assert_allclose(cell(Tensor(x), Tensor(y)).asnumpy(), loss, rtol=1e-5)
    assert [p.name for p in cell.trainable_params()] == ["w", "b"]  # names not prefixed


def test_with_eval_cell_returns_loss_outputs_label(any_mode):
    w, b = _setup()
    x, y = regression_data()
    loss, out, label = nn.WithEvalCell(Linear(w, b), nn.MSELoss())(Tensor(x), Tensor(y))
    np.testing.assert_allclose(out.asnumpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(label.asnumpy(), y)
    np.testing.assert_allclose(loss.asnumpy(), np.mean((x @ w.T + b - y) ** 2), rtol=1e-5)


def test_with_eval_cell_add_cast_fp32():
    w, b = _setup()
    x, _ = regression_data()
    labels = Tensor((np.arange(64, dtype=np.int32) % 2).reshape(64, 1))
    cell = nn.WithEvalCell(Linear(w, b), nn.L1Loss(), add_cast_fp32=True)
    loss, out, label = cell(Tensor(x), labels)
    assert label.dtype == mycel.float32 and out.dtype == mycel.float32
    np.testing.assert_allclose(loss.asnumpy(), np.mean(np.abs(x @ w.T + b - (np.arange(64) % 2)[:, None])),
                               rtol=1e-5)


@pytest.mark.parametrize("sens", [1.0, 0.5])
def test_train_one_step_matches_manual_update(mode, sens):
    w, b = _setup()
    x, y = regression_data()
    net = Linear(w, b)
    lr = 0.1
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), SGD(net.trainable_params(), lr), sens=sens)
    loss = step(Tensor(x), Tensor(y))
    ref_loss, gw, gb = np_mse_and_grads(w, b, x, y)
    np.testing.assert_allclose(loss.asnumpy(), ref_loss, rtol=1e-5)  # the loss before the update
    np.testing.assert_allclose(net.w.asnumpy(), w - lr * sens * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.b.asnumpy(), b - lr * sens * gb, rtol=1e-5, atol=1e-6)


def test_train_one_step_gradient_matches_finite_differences():
    w, b = _setup()
    x, y = regression_data(16)
    net = Linear(w, b)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), SGD(net.trainable_params(), 1.0))
    step(Tensor(x), Tensor(y))
    grad_w = w - net.w.asnumpy()  # lr 1: the update is the gradient
    x64, y64, eps = x.astype(np.float64), y.astype(np.float64), 1e-6
    for j in range(3):
        dw = np.zeros_like(w, dtype=np.float64)
        dw[0, j] = eps
        f = lambda ww: np.mean((x64 @ ww.T + b - y64) ** 2)  # noqa: E731
        fd = (f(w + dw) - f(w - dw)) / (2 * eps)
        np.testing.assert_allclose(grad_w[0, j], fd, rtol=1e-4, atol=1e-5)


def test_train_one_step_rejects_bad_arguments():
    net = Linear(*_setup())
    with pytest.raises(TypeError, match="TrainOneStepCell: 'network' must be a Cell"):
        nn.TrainOneStepCell(lambda x: x, SGD(net.trainable_params(), 0.1))
    with pytest.raises(TypeError, match="'parameters' attribute"):
        nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), object())
    with pytest.raises(TypeError, match="'sens' must be a float"):
        nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), SGD(net.trainable_params(), 0.1), sens="1")


def test_fixed_loss_scale_step_equals_unscaled_step(mode):
    w, b = _setup()
    x, y = regression_data()
    net = Linear(w, b)
    cell = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()),
                                            SGD(net.trainable_params(), 0.1),
                                            nn.FixedLossScaleUpdateCell(1024.0))
    loss, overflow, scale = cell(Tensor(x), Tensor(y))
    _, gw, gb = np_mse_and_grads(w, b, x, y)
    assert not bool(overflow.asnumpy()) and float(scale.asnumpy()) == 1024.0
    np.testing.assert_allclose(net.w.asnumpy(), w - 0.1 * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.b.asnumpy(), b - 0.1 * gb, rtol=1e-5, atol=1e-6)


def test_dynamic_loss_scale_grows_after_window_and_shrinks_on_overflow(mode):
    w, b = _setup()
    x, y = regression_data()
    net = Linear(w, b)
    opt = MomentumSGD(net.trainable_params(), 0.01)
    update = nn.DynamicLossScaleUpdateCell(loss_scale_value=2.0 ** 8, scale_factor=2.0, scale_window=3)
    cell = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), opt, update)
    scales = []
    for _ in range(7):
        _, overflow, scale = cell(Tensor(x), Tensor(y))
        assert not bool(overflow.asnumpy())
        scales.append(float(scale.asnumpy()))
    # Reference: the scale doubles after every scale_window good steps.
    assert scales == [256.0, 256.0, 256.0, 512.0, 512.0, 512.0, 1024.0]

    # An inf input makes every gradient inf: the step is skipped (weights and optimizer state
    # unchanged) and the scale halves.
    before = [p.asnumpy().copy() for p in (net.w, net.b, *opt.moments)]
    bad = x.copy()
    bad[0, 0] = np.inf
    _, overflow, scale = cell(Tensor(bad), Tensor(y))
    assert bool(overflow.asnumpy()) and float(scale.asnumpy()) == 1024.0
    for p, old in zip((net.w, net.b, *opt.moments), before):
        np.testing.assert_array_equal(p.asnumpy(), old)
    assert float(cell.scale_sense.asnumpy()) == 512.0
    _, overflow, scale = cell(Tensor(x), Tensor(y))
    assert not bool(overflow.asnumpy()) and float(scale.asnumpy()) == 512.0
    assert not np.array_equal(net.w.asnumpy(), before[0])  # a good step updates again


def test_dynamic_scale_never_below_one():
    update = nn.DynamicLossScaleUpdateCell(2.0, 4.0, 100)
    scale = mycel.Parameter(Tensor(np.array(2.0, np.float32)), name="s")
    for _ in range(3):
        update(scale, Tensor(np.array(True)))
    assert float(scale.asnumpy()) == 1.0


def test_loss_scale_tensor_and_errors():
    net = Linear(*_setup())
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    cell = nn.TrainOneStepWithLossScaleCell(loss_net, SGD(net.trainable_params(), 0.1),
                                            Tensor(np.array([8.0], np.float32)))
    x, y = regression_data()
    _, _, scale = cell(Tensor(x), Tensor(y))
    assert float(scale.asnumpy()) == 8.0
    cell.set_sense_scale(16.0)
    assert float(cell.scale_sense.asnumpy()) == 16.0
    with pytest.raises(TypeError, match="'scale_sense' must be a Cell or a Tensor"):
        nn.TrainOneStepWithLossScaleCell(loss_net, SGD(net.trainable_params(), 0.1), 8.0)
    with pytest.raises(ValueError, match="scale_window"):
        nn.DynamicLossScaleUpdateCell(8.0, 2.0, 0)
