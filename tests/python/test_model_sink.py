"""Model.train's step loops (issue 19 item 2): dataset_sink_mode with sink_size runs its steps in
one C++ loop over the dataset pipeline (graph mode), and an epoch without step callbacks does
too; both must train exactly as the per-step Python loop does and as numpy's SGD does."""
import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import nn
from mycel.train import Model, Callback

from train_helpers import MODES, SGD, Linear, np_mse_and_grads, regression_data

W0, B0 = np.array([[0.5, -0.3, 0.2]], np.float32), np.array([0.1], np.float32)
LR = 0.05


@pytest.fixture(params=MODES)
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


class StepCounter(Callback):
    """Implements step_end (the legacy name), which forces the per-step Python loop."""

    def __init__(self):
        self.steps = []

    def step_end(self, run_context):
        self.steps.append(run_context.original_args().cur_step_num)


def _dataset(n=64, batch=24, shuffle=False):
    x, y = regression_data(n)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=shuffle).batch(batch)  # 24, 24, 16


def _train(epochs, data=None, **kw):
    net = Linear(W0, B0)
    model = Model(net, nn.MSELoss(), SGD(net.trainable_params(), LR))
    model.train(epochs, data if data is not None else _dataset(), **kw)
    return net.w.asnumpy(), net.b.asnumpy()


def _numpy_sgd(steps, n=64, batch=24):
    """Plain SGD over the batches in order, repeated: the reference."""
    x, y = regression_data(n)
    w, b = W0.copy(), B0.copy()
    starts = list(range(0, n, batch))
    for i in range(steps):
        s = starts[i % len(starts)]
        _, gw, gb = np_mse_and_grads(w, b, x[s:s + batch], y[s:s + batch])
        w, b = w - LR * gw, b - LR * gb
    return w, b


def test_all_loops_train_like_numpy_sgd(mode):
    want_w, want_b = _numpy_sgd(12)
    runs = {
        "epoch loop": _train(4),
        "per-step loop": _train(4, callbacks=[StepCounter()]),
        "sink, dataset size": _train(4, dataset_sink_mode=True),
        "sink_size=2": _train(6, dataset_sink_mode=True, sink_size=2),  # crosses epoch ends
    }
    for name, (w, b) in runs.items():
        np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(b, want_b, rtol=1e-5, atol=1e-6, err_msg=name)


def test_sink_matches_per_step_loop_with_shuffling():
    # Shuffled each epoch: the sink's endless pipeline sees the same epochs in the same order.
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        mycel.set_seed(11)
        per_step = _train(3, _dataset(shuffle=True), callbacks=[StepCounter()])
        mycel.set_seed(11)
        sunk = _train(3, _dataset(shuffle=True), dataset_sink_mode=True)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    for a, b in zip(per_step, sunk):
        np.testing.assert_array_equal(a, b)


def test_sink_calls_step_hooks_once_per_sink(mode):
    counter = StepCounter()
    _train(3, dataset_sink_mode=True, sink_size=5, callbacks=[counter])
    assert counter.steps == [5, 10, 15]  # MindSpore: one step_end per sink, steps advanced by sink_size
    counter = StepCounter()
    _train(2, callbacks=[counter])
    assert counter.steps == [1, 2, 3, 4, 5, 6]


def test_do_nothing_callbacks_are_skipped():
    from mycel.train.callback._callback import CallbackList, implements

    class Nothing(Callback):
        pass

    class Legacy(Callback):
        def step_begin(self, run_context):
            pass

    assert not implements(Nothing(), "on_train_step_end")
    assert implements(Legacy(), "on_train_step_begin") and not implements(Legacy(), "on_train_step_end")
    assert len(CallbackList([Nothing(), Legacy()]).implementing("on_train_step_begin")) == 1


def test_sink_of_an_empty_dataset_is_an_error():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        empty = _dataset().take(0)
        with pytest.raises(ValueError, match="dataset is empty"):
            _train(1, empty, dataset_sink_mode=True, sink_size=2)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_run_sink_checks_its_arguments():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = Linear(W0, B0)
        model = Model(net, nn.MSELoss(), SGD(net.trainable_params(), LR))
        loop = Model._step_loop(model.train_network)
        it = _dataset().create_tuple_iterator(num_epochs=-1)
        with pytest.raises(ValueError, match="steps must be >= 1"):
            loop.run_sink(it._pipe, 0)
        with pytest.raises(TypeError, match="expected a dataset Pipeline"):
            loop.run_sink(object(), 1)
        out, done = loop.run_sink(it._pipe, 5)
        assert done == 5 and out.shape == ()
        it.stop()
        with pytest.raises(TypeError, match="expected a dataset Pipeline"):
            loop.run_sink(it._pipe, 1)  # stopped: the iterator dropped its pipeline (None)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
