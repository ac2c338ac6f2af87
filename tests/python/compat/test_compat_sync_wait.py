"""Dataset.sync_wait / sync_update as MindSpore's tests use them (imports renamed): the pipeline
blocks at the sync point until the training loop releases it, so a map above the point sees
the state the loop set for each batch."""
import threading
import time

import numpy as np
import pytest

import mycel.dataset as ds


def _policy_pipeline(num_batch, batch_size, seen):
    state = {"k": 0}
    d = ds.NumpySlicesDataset({"x": np.arange(12)}, shuffle=False)
    d = d.sync_wait("policy", num_batch=num_batch, callback=seen.append)
    d = d.map(lambda x: x * 10 + state["k"], input_columns=["x"]).batch(batch_size)
    return d, state


def test_each_batch_sees_the_update_before_it():
    seen = []
    d, state = _policy_pipeline(1, 3, seen)
    out = []
    for i, (b,) in enumerate(d.create_tuple_iterator(num_epochs=1, output_numpy=True)):
        out.append(b.tolist())
        state["k"] += 1
        d.sync_update("policy", data={"step": i})
    assert out == [[10 * x + i for x in range(3 * i, 3 * i + 3)] for i in range(4)]
    assert seen == [{"step": i} for i in range(4)]


def test_num_batch_releases_several_batches():
    seen = []
    d, state = _policy_pipeline(2, 2, seen)
    out = []
    for i, (b,) in enumerate(d.create_tuple_iterator(num_epochs=1, output_numpy=True)):
        out.append(b.tolist())
        if i % 2 == 1:  # after every second batch
            state["k"] += 1
            d.sync_update("policy", num_batch=2)
    assert out == [[10 * x + (i // 2) for x in range(2 * i, 2 * i + 2)] for i in range(6)]
    assert seen == [None, None, None]


def test_blocks_without_update_and_stops_cleanly():
    d = ds.NumpySlicesDataset({"x": np.arange(10)}, shuffle=False).sync_wait("c")
    it = d.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert int(next(it)[0]) == 0
    got = []
    t = threading.Thread(target=lambda: got.append(int(next(it)[0])), daemon=True)
    t.start()
    time.sleep(0.3)
    assert got == []  # blocked at the sync point
    d.sync_update("c")
    t.join(5)
    assert got == [1]
    start = time.time()
    it.stop()  # while the source blocks again: still stops
    assert time.time() - start < 5
    with pytest.raises(ValueError, match="no sync_wait named 'other'"):
        d.sync_update("other")
    with pytest.raises(ValueError, match="num_batch must be an int >= 1"):
        d.sync_wait("x", num_batch=0)
