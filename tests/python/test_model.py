"""Model.train / eval / fit / predict on small synthetic datasets, checked against numpy."""
import os
import sys

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import nn, Tensor
from mycel.train import Model, Callback, LossMonitor

from train_helpers import MODES, BOTH_MODES, SGD, MomentumSGD, Linear, regression_data

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


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


class Recorder(Callback):
    """Records (hook, epoch, step) for every training hook."""

    def __init__(self):
        self.calls = []

    def _rec(self, name, run_context):
        cb = run_context.original_args()
        self.calls.append((name, cb.cur_epoch_num, cb.cur_step_num))

    def on_train_begin(self, rc): self._rec("train_begin", rc)  # noqa: E704
    def on_train_epoch_begin(self, rc): self._rec("epoch_begin", rc)  # noqa: E704
    def on_train_step_begin(self, rc): self._rec("step_begin", rc)  # noqa: E704
    def on_train_step_end(self, rc): self._rec("step_end", rc)  # noqa: E704
    def on_train_epoch_end(self, rc): self._rec("epoch_end", rc)  # noqa: E704
    def on_train_end(self, rc): self._rec("train_end", rc)  # noqa: E704


def _regression_model(lr=0.05):
    net = Linear(np.zeros((1, 3), np.float32), np.zeros((1,), np.float32))
    return net, Model(net, nn.MSELoss(), SGD(net.trainable_params(), lr), metrics={"loss"})


def _regression_dataset(n=64, batch=16):
    x, y = regression_data(n)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def test_train_decreases_loss_and_calls_back_in_order(mode):
    net, model = _regression_model()
    data = _regression_dataset()
    before = model.eval(data)["loss"]
    rec = Recorder()
    model.train(3, data, callbacks=[rec])
    after = model.eval(data)["loss"]
    assert after < 0.5 * before
    expected = [("train_begin", 0, 0)]
    step = 0
    for epoch in range(1, 4):
        expected.append(("epoch_begin", epoch, step))
        for _ in range(4):
            step += 1
            expected += [("step_begin", epoch, step), ("step_end", epoch, step)]
        expected.append(("epoch_end", epoch, step))
    expected.append(("train_end", 3, 12))
    assert rec.calls == expected


def test_initial_epoch_and_sink_size():
    _, model = _regression_model()
    rec = Recorder()
    model.train(3, _regression_dataset(), callbacks=rec, initial_epoch=1)
    epochs = [c[1] for c in rec.calls if c[0] == "epoch_end"]
    assert epochs == [2, 3] and rec.calls[-1] == ("train_end", 3, 12)
    rec = Recorder()
    model.train(2, _regression_dataset(), callbacks=rec, dataset_sink_mode=True, sink_size=3)
    assert [c[2] for c in rec.calls if c[0] == "epoch_end"] == [3, 6]


def test_loss_monitor_output(capsys):
    _, model = _regression_model()
    model.train(2, _regression_dataset(), callbacks=[LossMonitor(per_print_times=2)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(", loss is")[0] for line in lines] == [
        "epoch: 1 step: 2", "epoch: 1 step: 4", "epoch: 2 step: 2", "epoch: 2 step: 4"]
    assert all(float(line.split("loss is ")[1]) >= 0 for line in lines)


def test_eval_accuracy_matches_numpy(any_mode):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 50).astype(np.int32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    net = Linear(w, b)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics={"acc", "loss"})
    data = ds.NumpySlicesDataset({"x": x, "y": labels}, shuffle=False).batch(10)
    result = model.eval(data)
    logits = x @ w.T + b
    assert result["acc"] == pytest.approx(np.mean(logits.argmax(1) == labels))
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    batch_losses = [-logp[i:i + 10][np.arange(10), labels[i:i + 10]].mean() for i in range(0, 50, 10)]
    assert result["loss"] == pytest.approx(np.mean(batch_losses), rel=1e-5)


def test_predict_shape_and_values(any_mode):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((2, 5)).astype(np.float32)
    b = np.zeros((2,), np.float32)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    out = Model(Linear(w, b)).predict(Tensor(x))
    assert out.shape == (7, 2)
    np.testing.assert_allclose(out.asnumpy(), x @ w.T, rtol=1e-5, atol=1e-5)


def test_fit_evaluates_each_epoch():
    _, model = _regression_model()
    data = _regression_dataset()
    seen = []

    class Watch(Callback):
        def on_train_epoch_end(self, run_context):
            cb = run_context.original_args()
            seen.append((cb.cur_epoch_num, dict(cb.eval_results)))

    model.fit(3, data, valid_dataset=data, callbacks=[Watch()])
    assert [e for e, _ in seen] == [1, 2, 3]
    losses = [r["eval_loss"] for _, r in seen]
    assert losses[0] > losses[1] > losses[2] and all(r["loss"] == r["eval_loss"] for _, r in seen)


def test_model_errors():
    net, model = _regression_model()
    with pytest.raises(ValueError, match="initial_epoch"):
        model.train(1, _regression_dataset(), initial_epoch=1)
    with pytest.raises(TypeError, match="Dataset"):
        model.train(1, [1, 2, 3])
    with pytest.raises(RuntimeError, match="no optimizer"):
        Model(net, nn.MSELoss()).train(1, _regression_dataset())
    with pytest.raises(ValueError, match="unknown metric name"):
        Model(net, nn.MSELoss(), metrics={"bogus"})


def test_lenet5_example_trains_on_256_images():
    sys.path.insert(0, os.path.abspath(EXAMPLES))
    try:
        import lenet5
    finally:
        sys.path.pop(0)
    mycel.set_seed(1)
    train = lenet5.create_dataset("train", num_samples=256)
    test = lenet5.create_dataset("test", shuffle=False, num_samples=256)
    net = lenet5.LeNet5()
    model = lenet5.build_model(net, MomentumSGD(net.trainable_params(), 0.01))
    before = model.eval(test)["acc"]
    losses = []

    class Losses(Callback):
        def on_train_step_end(self, run_context):
            losses.append(float(run_context.original_args().net_outputs.asnumpy()))

    model.train(6, train, callbacks=[Losses()])
    after = model.eval(test)["acc"]
    assert len(losses) == 48
    assert np.mean(losses[-8:]) < np.mean(losses[:8])
    assert after > max(before, 0.3)  # 10 classes: chance is 0.1
