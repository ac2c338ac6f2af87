"""MindSpore's top-level names and training helpers: the mindspore.train re-exports, the
optimizer's learning_rate Parameter with LearningRateScheduler / ReduceLROnPlateau /
LambdaCallback, data_sink and DatasetHelper, check_checkpoint, load_checkpoint_async, the
generator API, from_numpy, is_tensor and lazy_inline."""
import numpy as np
import pytest

import mycel as ms
import mycel.dataset as ds
from mycel import nn, ops
from mycel.train import Model, LearningRateScheduler, ReduceLROnPlateau, LambdaCallback, RunContext
from mycel.train.callback import CallbackParams


def _data(n=64, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def test_top_level_reexports_of_mindspore_train():
    import mycel.train as train
    for name in ("LossMonitor", "TimeMonitor", "ModelCheckpoint", "CheckpointConfig", "EarlyStopping",
                 "ReduceLROnPlateau", "LambdaCallback", "Accuracy", "MAE", "FixedLossScaleManager",
                 "DynamicLossScaleManager", "data_sink", "DatasetHelper", "check_checkpoint"):
        assert getattr(ms, name) is getattr(train, name), name
    assert ms.export.__module__.startswith("mycel.lite")  # not replaced by the re-export
    assert ms.dataset.GeneratorDataset is ds.GeneratorDataset and ms.numpy.ones is not None
    with pytest.raises(AttributeError, match="did you mean 'LossMonitor'"):
        ms.LossMonitr  # noqa: B018


@pytest.mark.parametrize("make", [lambda p: nn.Momentum(p, 0.1, 0.9), lambda p: nn.SGD(p, 0.1),
                                  lambda p: nn.Adam(p, 0.1)])
def test_learning_rate_scheduler_with_the_builtin_optimizers(make):
    net = nn.Dense(3, 1)
    opt = make(net.trainable_params())
    assert isinstance(opt.learning_rate, ms.Parameter)  # MindSpore's optimizer.learning_rate
    seen = []
    watch = LambdaCallback(on_train_step_begin=lambda rc: seen.append(float(opt.learning_rate.asnumpy())))
    Model(net, nn.MSELoss(), opt).train(1, _data(), callbacks=[watch, LearningRateScheduler(lambda lr, s: lr * 0.5)])
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.025, 0.0125], rtol=1e-6)


def test_assigning_the_learning_rate_changes_the_update():
    ms.set_seed(0)
    net = nn.Dense(3, 1)
    opt = nn.SGD(net.trainable_params(), 0.1)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    x, y = ms.Tensor(np.ones((4, 3), np.float32)), ms.Tensor(np.zeros((4, 1), np.float32))
    w0 = net.weight.asnumpy().copy()
    ops.assign(opt.learning_rate, ms.Tensor(np.float32(0.0)))
    step(x, y)
    np.testing.assert_array_equal(net.weight.asnumpy(), w0)  # lr 0: nothing moves
    ops.assign(opt.learning_rate, ms.Tensor(np.float32(0.1)))
    step(x, y)
    assert not np.array_equal(net.weight.asnumpy(), w0)


def _reference_plateau(values, factor, patience, cooldown, min_lr, min_delta, lr):
    """Keras's ReduceLROnPlateau for mode 'min', written out independently."""
    best, wait, cool, out = np.inf, 0, 0, []
    for v in values:
        if cool > 0:
            cool, wait = cool - 1, 0
        if v < best - min_delta:
            best, wait = v, 0
        elif cool == 0:
            wait += 1
            if wait >= patience:
                if lr > min_lr:
                    lr = max(lr * factor, min_lr)
                cool, wait = cooldown, 0
        out.append(lr)
    return out


@pytest.mark.parametrize("patience, cooldown", [(1, 0), (2, 1), (3, 2)])
def test_reduce_lr_on_plateau_follows_the_rule(patience, cooldown):
    net = nn.Dense(3, 1)
    opt = nn.Momentum(net.trainable_params(), 1.0, 0.9)
    cb_obj = ReduceLROnPlateau(monitor="eval_loss", factor=0.5, patience=patience, cooldown=cooldown,
                               min_lr=0.05, min_delta=0.01)
    values = [1.0, 0.9, 0.895, 0.9, 0.8, 0.85, 0.86, 0.87, 0.88, 0.79, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
    cb_obj.on_train_begin(None)
    got = []
    for epoch, v in enumerate(values, start=1):
        params = CallbackParams({"optimizer": opt, "eval_results": {"eval_loss": v}, "cur_epoch_num": epoch,
                                 "net_outputs": None})
        cb_obj.on_train_epoch_end(RunContext(params))
        got.append(float(opt.learning_rate.asnumpy()))
    np.testing.assert_allclose(got, _reference_plateau(values, 0.5, patience, cooldown, 0.05, 0.01, 1.0))


def test_reduce_lr_on_plateau_in_training_and_its_errors():
    net = nn.Dense(3, 1)
    opt = nn.SGD(net.trainable_params(), 0.0)  # nothing learns: the loss never improves
    ops.assign(opt.learning_rate, ms.Tensor(np.float32(0.0)))
    plateau = ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)
    ops.assign(opt.learning_rate, ms.Tensor(np.float32(1e-30)))  # tiny, so the weights stay put
    Model(net, nn.MSELoss(), opt).train(4, _data(), callbacks=[plateau])
    assert float(opt.learning_rate.asnumpy()) == pytest.approx(1e-30 * 0.5 ** 3, rel=1e-5)
    with pytest.raises(ValueError, match="factor must be in"):
        ReduceLROnPlateau(factor=1.5)
    with pytest.raises(TypeError, match="unknown hook 'on_trian_end'"):
        LambdaCallback(on_trian_end=print)


def test_data_sink_runs_sink_size_steps_per_call_across_epochs():
    net = nn.Dense(3, 1)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    data = _data(n=48, batch=16)  # 3 batches per epoch
    batches = [tuple(b) for b in data.create_tuple_iterator(num_epochs=1)]
    calls = []

    def step(x, y):
        calls.append(float(x.asnumpy()[0, 0]))
        return loss_net(x, y)

    sink = ms.data_sink(step, data, sink_size=2)
    out1, out2 = sink(), sink()  # batches 0, 1 then 2 and (next epoch) 0
    firsts = [float(b[0].asnumpy()[0, 0]) for b in batches]
    assert calls == [firsts[0], firsts[1], firsts[2], firsts[0]]
    np.testing.assert_allclose(out2.asnumpy(), loss_net(*batches[0]).asnumpy(), rtol=1e-6)
    assert np.isclose(out1.asnumpy(), loss_net(*batches[1]).asnumpy())
    helper = ms.DatasetHelper(data, sink_size=2)
    assert len(helper) == 2 and len(list(helper)) == 2
    assert ms.connect_network_with_dataset(net, helper) is net
    with pytest.raises(ValueError, match="sink_size must be an int >= 1"):
        ms.data_sink(step, data, sink_size=0)


def test_check_checkpoint_and_async_load(tmp_path):
    net = nn.Dense(3, 2)
    path = str(tmp_path / "net.ckpt")
    ms.save_checkpoint(net, path)
    assert ms.check_checkpoint(path)
    blob = open(path, "rb").read()
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(blob[: len(blob) // 2])
    assert not ms.check_checkpoint(str(bad))
    fut = ms.load_checkpoint_async(path)
    loaded = fut.result(timeout=60)
    np.testing.assert_array_equal(loaded["weight"].asnumpy(), net.weight.asnumpy())
    with pytest.raises(ValueError):
        ms.load_checkpoint_async(str(bad)).result(timeout=60)


def test_generator_state_round_trip_repeats_draws():
    ms.manual_seed(123)
    assert ms.initial_seed() == 123 and ms.get_seed() == 123
    state = ms.get_rng_state()
    a = ops.StandardNormal()((5,)).asnumpy()
    b = ops.StandardNormal()((5,)).asnumpy()
    ms.set_rng_state(state)
    np.testing.assert_array_equal(ops.StandardNormal()((5,)).asnumpy(), a)
    np.testing.assert_array_equal(ops.StandardNormal()((5,)).asnumpy(), b)
    g = ms.Generator().manual_seed(9)
    assert g.initial_seed() == 9 and g.get_state().asnumpy().tolist() == [9, 0]
    assert ms.get_rng_state().asnumpy()[0] == 123  # another generator leaves the default alone
    s = ms.Generator().seed()
    assert 0 <= s < 2 ** 64
    with pytest.raises(ValueError, match="state must be an integer tensor of shape \\(2,\\)"):
        ms.set_rng_state(ms.Tensor(np.zeros(3, np.int64)))


def test_from_numpy_shares_memory_and_is_tensor():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ms.from_numpy(a)
    a[0, 0] = 42.0
    assert t.asnumpy()[0, 0] == 42.0 and ms.is_tensor(t) and not ms.is_tensor(a)
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(ms.from_numpy(strided).asnumpy(), strided)
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        ms.from_numpy([1, 2])


def test_lazy_inline_cell_is_unchanged_in_both_modes():
    class Block(nn.Cell):
        @ms.lazy_inline
        def __init__(self, n):
            super().__init__()
            self.dense = nn.Dense(n, n)

        def construct(self, x):
            return ops.relu(self.dense(x))

    ms.set_seed(1)
    block = Block(4)
    x = ms.Tensor(np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32))
    eager = block(x).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        graph = block(x).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    w = block.dense.weight.asnumpy()
    ref = np.maximum(x.asnumpy() @ w.T + block.dense.bias.asnumpy(), 0)
    np.testing.assert_allclose(eager, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(graph, ref, rtol=1e-5, atol=1e-6)


def test_pynative_executor_sync_is_there():
    # MindSpore's op tests call _pynative_executor.sync() after eager ops; Mycel's eager ops are
    # synchronous, so the values are already there.
    from mycel.common.api import _pynative_executor
    x = ms.Tensor(np.array([1.0, 2.0], np.float32)) * 3
    assert _pynative_executor.sync() is None
    np.testing.assert_array_equal(x.asnumpy(), [3.0, 6.0])
