"""The pipeline on its consumer's thread (issue 19 item 2, "one pool"): for a compiled training
loop, a tree of C++ sources, fused image chains, batch and inline ops builds each batch on the
loop's thread and the OpenMP pool instead of on threads of its own. The batches, their order,
the epoch ends and the errors must be those of the threaded pipeline, and training must reach
the same losses."""
import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import nn
from mycel.dataset import vision
from mycel.train import Callback, Model

N, H, W = 70, 12, 10


def _images(n=N, shape=(H, W, 1), seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n,) + shape).astype(np.uint8), rng.integers(0, 10, n).astype(np.int32)


def _chain():
    return [vision.Resize((8, 8)), vision.Rescale(1.0 / 255.0, 0.0),
            vision.Rescale(1 / 0.3530, -0.2860 / 0.3530), vision.HWC2CHW()]


def _dataset(batch=16, drop=False, shuffle=True, images=None, ops=None):
    x, y = images if images is not None else _images()
    data = ds.NumpySlicesDataset({"image": x, "label": y}, shuffle=shuffle)
    data = data.map(ops if ops is not None else _chain(), input_columns="image")
    return data.batch(batch, drop_remainder=drop)


def _epochs(it, epochs):
    """Each epoch's batches as numpy arrays, until the iterator's end."""
    out = []
    for _ in range(epochs):
        out.append([[np.array(t.asnumpy()) for t in row] for row in it])
    assert list(it) == []  # the data ended with the last epoch
    return out


def _same(a, b):
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert len(ea) == len(eb)
        for ra, rb in zip(ea, eb):
            assert len(ra) == len(rb)
            for ta, tb in zip(ra, rb):
                assert ta.dtype == tb.dtype and ta.shape == tb.shape
                np.testing.assert_array_equal(ta, tb)


@pytest.mark.parametrize("make", [
    lambda: _dataset(),
    lambda: _dataset(batch=16, drop=True),
    lambda: _dataset(batch=64, shuffle=False),
    lambda: _dataset(batch=7).take(4),
    lambda: _dataset(batch=9).skip(2).project(["label", "image"]),
    lambda: _dataset(batch=5).repeat(2),
    lambda: ds.NumpySlicesDataset({"x": np.arange(30, dtype=np.int64)}, shuffle=True).batch(4),
    # 40 x 48x48x3 outputs per batch: past the size from which the images split over the pool
    lambda: _dataset(batch=40, images=_images(90, (60, 50, 3)),
                     ops=[vision.Resize((48, 48)), vision.Rescale(1 / 255, 0), vision.HWC2CHW()]),
], ids=["shuffled", "drop", "one_batch_per_epoch", "take", "skip_project", "repeat", "no_map",
        "split_over_the_pool"])
def test_same_batches_as_the_threaded_pipeline(make):
    threaded = make().create_tuple_iterator(num_epochs=3)
    direct = make()._create_sink_iterator(num_epochs=3)
    assert direct._pipe.on_consumer and not threaded._pipe.on_consumer
    _same(_epochs(direct, 3), _epochs(threaded, 3))


def test_batches_match_numpy():
    """Independent of both pipelines: unshuffled batches against the transforms in numpy (the
    resize is an identity here: 8x8 in, 8x8 out)."""
    x, y = _images(20, (8, 8, 1))
    it = _dataset(batch=8, shuffle=False, images=(x, y))._create_sink_iterator(num_epochs=1)
    assert it._pipe.on_consumer
    rows = list(it)
    want = ((x.astype(np.float32) * np.float32(1 / 255)) * np.float32(1 / 0.3530)
            + np.float32(-0.2860 / 0.3530)).transpose(0, 3, 1, 2)
    got = np.concatenate([r[0].asnumpy() for r in rows])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.concatenate([r[1].asnumpy() for r in rows]), y)
    assert [r[0].shape[0] for r in rows] == [8, 8, 4]


def test_python_map_keeps_its_threads():
    make = lambda: _dataset(ops=[lambda a: a[::2]])  # noqa: E731
    direct = make()._create_sink_iterator(num_epochs=2)
    assert not direct._pipe.on_consumer
    _same(_epochs(direct, 2), _epochs(make().create_tuple_iterator(num_epochs=2), 2))


def test_env_switch_keeps_the_threads(monkeypatch):
    monkeypatch.setenv("MYCEL_DATA_ON_CONSUMER", "0")
    assert not _dataset()._create_sink_iterator(num_epochs=1)._pipe.on_consumer


def _mixed(sink):
    """21 images of shape (12, 10, 1), then 19 of shape (12, 10): HWC2CHW fails on row 21."""
    rng = np.random.default_rng(0)
    a = ds.NumpySlicesDataset({"image": rng.integers(0, 256, (21, H, W, 1)).astype(np.uint8),
                               "label": np.arange(21, dtype=np.int32)}, shuffle=False)
    b = ds.NumpySlicesDataset({"image": rng.integers(0, 256, (19, H, W)).astype(np.uint8),
                               "label": np.arange(21, 40, dtype=np.int32)}, shuffle=False)
    data = (a + b).map([vision.Resize((8, 8)), vision.Rescale(1 / 255, 0), vision.HWC2CHW()],
                       input_columns="image").batch(8)
    return data._create_sink_iterator(num_epochs=1) if sink else data.create_tuple_iterator(num_epochs=1)


def test_errors_arrive_in_place():
    """The batches before the failing row arrive, the one it belongs to is dropped, then the
    same error as with threads."""
    seen = []
    for sink in (True, False):
        it, labels = _mixed(sink), []
        assert it._pipe.on_consumer == sink
        with pytest.raises(ValueError, match=r"HWC2CHW.*expected an image of shape <H, W, C>") as e:
            for row in it:
                labels.append(row[1].asnumpy().tolist())
        seen.append((labels, str(e.value)))
    assert seen[0] == seen[1]
    assert seen[0][0] == [list(range(8)), list(range(8, 16))]


class Losses(Callback):
    def __init__(self):
        self.losses = []

    def on_train_epoch_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))


class Small(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(64, 10)

    def construct(self, x):
        return self.fc(self.flatten(x))


@pytest.mark.parametrize("sink", [True, False])
def test_training_reaches_the_same_losses(monkeypatch, sink):
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        runs = {}
        for flag in ("1", "0"):
            monkeypatch.setenv("MYCEL_DATA_ON_CONSUMER", flag)
            mycel.set_seed(3)
            net = Small()
            model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                          nn.Momentum(net.trainable_params(), 0.05, 0.9))
            cb = Losses()
            seen = []
            orig = ds.Dataset._create_sink_iterator

            def spy(self, num_epochs=-1):
                it = orig(self, num_epochs)
                seen.append(it._pipe.on_consumer)
                return it
            monkeypatch.setattr(ds.Dataset, "_create_sink_iterator", spy)
            model.train(6, _dataset(batch=10), callbacks=[cb], dataset_sink_mode=sink, sink_size=3)
            monkeypatch.setattr(ds.Dataset, "_create_sink_iterator", orig)
            assert seen == [flag == "1"]
            runs[flag] = (cb.losses, [p.asnumpy() for p in net.trainable_params()])
        assert len(runs["1"][0]) == 6
        np.testing.assert_array_equal(runs["1"][0], runs["0"][0])
        for a, b in zip(runs["1"][1], runs["0"][1]):
            np.testing.assert_array_equal(a, b)
        assert runs["1"][0][-1] < runs["1"][0][0]  # it trains
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
