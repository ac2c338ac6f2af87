"""Callbacks: ModelCheckpoint, EarlyStopping, LearningRateScheduler, History, TimeMonitor and the
ProgressBar, each checked through Model.train on a small synthetic dataset."""
import io
import os

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import nn
from mycel.train import (Model, Callback, ModelCheckpoint, CheckpointConfig, EarlyStopping,
                         LearningRateScheduler, History, ProgressBar, TimeMonitor, RunContext)

from train_helpers import SGD, Linear, regression_data


def _model(lr=0.05):
    net = Linear(np.zeros((1, 3), np.float32), np.zeros((1,), np.float32))
    opt = SGD(net.trainable_params(), lr)
    return net, opt, Model(net, nn.MSELoss(), opt, metrics={"loss"})


def _data(n=64, batch=16):
    x, y = regression_data(n)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def test_model_checkpoint_keeps_max_files(tmp_path):
    net, _, model = _model()
    ckpt = ModelCheckpoint("lin", str(tmp_path), CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=3))
    model.train(2, _data(), callbacks=[ckpt])  # steps 2, 4, 6, 8 are saved
    files = sorted(os.listdir(tmp_path))
    assert files == ["lin-1_4.ckpt", "lin-2_2.ckpt", "lin-2_4.ckpt"]
    loaded = mycel.load_checkpoint(str(tmp_path / "lin-2_4.ckpt"))
    np.testing.assert_array_equal(loaded["w"].asnumpy(), net.w.asnumpy())
    assert "learning_rate" in loaded  # the optimizer's state is saved too


def test_model_checkpoint_per_epoch_and_final(tmp_path):
    _, _, model = _model()
    ckpt = ModelCheckpoint("e", str(tmp_path), CheckpointConfig(save_checkpoint_epochs=2, keep_checkpoint_max=0))
    model.train(3, _data(), callbacks=[ckpt])
    assert sorted(os.listdir(tmp_path)) == ["e-2_4.ckpt", "e-3_4.ckpt"]  # epoch 2, then the last step


def test_early_stopping_stops_when_loss_stalls():
    _, _, model = _model(lr=0.0)  # nothing learns: the loss never improves after epoch 1
    stop = EarlyStopping(monitor="loss", patience=2)
    history = History()
    model.train(10, _data(), callbacks=[stop, history])
    assert history.epoch == [1, 2, 3] and stop.stopped_epoch == 3


def test_early_stopping_on_eval_accuracy_mode_max():
    stop = EarlyStopping(monitor="acc", patience=1)
    assert stop.mode == "max"
    stop.on_train_begin(None)
    stops = []
    for epoch, acc in enumerate([0.5, 0.6, 0.6, 0.7], start=1):
        cb = {"eval_results": {"acc": acc}, "cur_epoch_num": epoch, "net_outputs": None}
        from mycel.train.callback import CallbackParams
        rc = RunContext(CallbackParams(cb))
        stop.on_train_epoch_end(rc)
        stops.append(rc.get_stop_requested())
    assert stops == [False, False, True, False]


def test_learning_rate_scheduler_sets_lr():
    _, opt, model = _model(lr=0.1)
    seen = []

    class Watch(Callback):
        def on_train_step_begin(self, run_context):
            seen.append(float(opt.learning_rate.asnumpy()))

    model.train(1, _data(), callbacks=[Watch(), LearningRateScheduler(lambda lr, step: lr * 0.5)])
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.025, 0.0125])
    assert float(opt.learning_rate.asnumpy()) == pytest.approx(0.00625)


def test_history_records_losses_and_eval():
    _, _, model = _model()
    history = History()
    model.fit(2, _data(), valid_dataset=_data(), callbacks=[history])
    assert history.epoch == [1, 2]
    assert len(history.history["net_output"]) == 2 and len(history.history["loss"]) == 2
    assert history.history["loss"][1] < history.history["loss"][0]


def test_time_monitor_prints_per_epoch(capsys):
    _, _, model = _model()
    model.train(2, _data(), callbacks=[TimeMonitor()])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("epoch time: ") and "per step time" in line for line in lines)


def test_progress_bar_quiet_without_tty(capsys):
    _, _, model = _model()
    model.train(1, _data())  # capsys' stdout is not a terminal: no default bar
    assert capsys.readouterr().out == ""
    bar = ProgressBar()
    model.train(1, _data(), callbacks=[bar])
    assert capsys.readouterr().out == "" and bar.lines_drawn == 0


def test_progress_bar_draws_when_forced():
    _, _, model = _model()
    out = io.StringIO()
    model.train(2, _data(), callbacks=[ProgressBar(file=out, force=True, min_interval=0.0)])
    text = out.getvalue()
    assert text.count("\n") == 2  # one finished line per epoch
    assert "epoch 1/2 [" in text and "4/4" in text and "loss " in text and "img/s" in text and "ETA" in text
    assert "\r" in text


def test_callback_list_rejects_non_callbacks():
    _, _, model = _model()
    with pytest.raises(TypeError, match="must be a Callback"):
        model.train(1, _data(), callbacks=[print])
    with pytest.raises(ValueError, match="keep_checkpoint_max"):
        CheckpointConfig(keep_checkpoint_max=-1)
