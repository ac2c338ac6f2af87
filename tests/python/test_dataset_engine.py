"""Dataset engine: every operator, sampler and iterator against numpy / itertools references."""
import itertools
import os
import threading
import time

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel.dataset.engine import get_row_seed


def rows(d, **kw):
    return [[np.asarray(c) for c in r] for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True, **kw)]


def col(d, i=0):
    return [int(r[i]) for r in rows(d)]


def seq(n, **kw):
    return ds.NumpySlicesDataset({"x": np.arange(n)}, shuffle=False, **kw)


def n_threads():
    return len(os.listdir("/proc/self/task"))


# -- sources ---------------------------------------------------------------------------------

def test_numpy_slices_columns_and_dtypes():
    a = np.arange(12, dtype=np.float32).reshape(6, 2)
    b = np.arange(6, dtype=np.int32)
    d = ds.NumpySlicesDataset((a, b), column_names=["a", "b"], shuffle=False)
    assert d.get_col_names() == ["a", "b"]
    assert d.get_dataset_size() == 6
    assert d.output_shapes() == [[2], []]
    assert d.output_types() == [mycel.float32, mycel.int32]
    got = rows(d)
    np.testing.assert_array_equal(np.stack([r[0] for r in got]), a)
    np.testing.assert_array_equal(np.array([r[1] for r in got]), b)
    default = ds.NumpySlicesDataset([1, 2, 3], shuffle=False)
    assert default.get_col_names() == ["column_0"] and col(default) == [1, 2, 3]


def test_numpy_slices_errors():
    with pytest.raises(ValueError, match="rows"):
        ds.NumpySlicesDataset({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ValueError, match="column_names"):
        ds.NumpySlicesDataset((np.zeros(3), np.zeros(3)), column_names=["a"])
    with pytest.raises(ValueError, match="conflicting"):
        ds.NumpySlicesDataset(np.zeros(3), sampler=ds.SequentialSampler(), shuffle=True)
    with pytest.raises(ValueError, match="together"):
        ds.NumpySlicesDataset(np.zeros(3), num_shards=2)


def test_iteration_yields_tensors():
    d = seq(3)
    out = list(d)
    assert len(out) == 3 and isinstance(out[0][0], mycel.Tensor)
    assert [int(r[0].asnumpy()) for r in out] == [0, 1, 2]
    dicts = list(d.create_dict_iterator(num_epochs=1))
    assert list(dicts[0]) == ["x"] and isinstance(dicts[0]["x"], mycel.Tensor)


def test_generator_random_access_and_iterable():
    class Src:
        def __getitem__(self, i):
            return np.array([i, i * i]), np.array(i % 3)

        def __len__(self):
            return 7

    d = ds.GeneratorDataset(Src(), ["a", "b"], shuffle=False, num_parallel_workers=3)
    got = rows(d)
    assert [r[0].tolist() for r in got] == [[i, i * i] for i in range(7)]
    assert [int(r[1]) for r in got] == [i % 3 for i in range(7)]

    def gen():
        for i in range(5):
            yield (np.full((2,), i, np.float32),)

    g = ds.GeneratorDataset(gen, column_names="x")
    assert [r[0].tolist() for r in rows(g)] == [[i, i] for i in range(5)]
    assert g.get_dataset_size() == 5
    # Two epochs call the generator function twice.
    it = g.create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert [len(list(it)) for _ in range(2)] == [5, 5]
    assert len(rows(ds.GeneratorDataset(gen, ["x"], num_samples=3))) == 3
    with pytest.raises(ValueError, match="random-accessible"):
        ds.GeneratorDataset(gen, ["x"], shuffle=True)
    with pytest.raises(ValueError, match="column_names"):
        ds.GeneratorDataset(gen)


def test_generator_shuffle_covers_all():
    d = ds.GeneratorDataset(list(range(20)), ["x"], shuffle=True)
    got = col(d)
    assert sorted(got) == list(range(20)) and got != list(range(20))


# -- samplers --------------------------------------------------------------------------------

def test_sequential_and_random_sampler():
    d = ds.NumpySlicesDataset(np.arange(10), sampler=ds.SequentialSampler(start_index=3, num_samples=4))
    assert col(d) == [3, 4, 5, 6]
    r = col(ds.NumpySlicesDataset(np.arange(50), sampler=ds.RandomSampler()))
    assert sorted(r) == list(range(50)) and r != list(range(50))
    r = col(ds.NumpySlicesDataset(np.arange(50), sampler=ds.RandomSampler(num_samples=10)))
    assert len(r) == 10 and len(set(r)) == 10
    r = col(ds.NumpySlicesDataset(np.arange(5), sampler=ds.RandomSampler(replacement=True, num_samples=40)))
    assert len(r) == 40 and set(r) <= set(range(5)) and len(set(r)) < 40


@pytest.mark.parametrize("n,shards", [(12, 3), (10, 4), (7, 7)])
def test_distributed_sampler_partitions(n, shards):
    parts = [col(ds.NumpySlicesDataset(np.arange(n), num_shards=shards, shard_id=k)) for k in range(shards)]
    per = -(-n // shards)
    assert all(len(p) == per for p in parts)  # padded to equal size
    union = list(itertools.chain(*parts))
    assert set(union) == set(range(n))
    if n % shards == 0:  # then every row is in exactly one shard
        assert sorted(union) == list(range(n))
    # Unshuffled: shard k takes positions k, k + shards, ... (wrapping).
    ordered = col(ds.NumpySlicesDataset(np.arange(n), sampler=ds.DistributedSampler(shards, 1, shuffle=False)))
    assert ordered == [(1 + i * shards) % n for i in range(per)]


def test_subset_samplers():
    idx = [7, 2, 9, 4]
    assert col(ds.NumpySlicesDataset(np.arange(10), sampler=ds.SubsetSampler(idx))) == idx
    it = ds.NumpySlicesDataset(np.arange(10), sampler=ds.SubsetRandomSampler(idx)).repeat(3)
    got = col(it)
    for e in range(3):
        assert sorted(got[4 * e:4 * e + 4]) == sorted(idx)
    with pytest.raises(IndexError, match="out of range"):
        ds.NumpySlicesDataset(np.arange(3), sampler=ds.SubsetSampler([5]))


def test_weighted_sampler_chi_square():
    w = np.array([1.0, 2.0, 3.0, 4.0, 0.0])
    n = 4000
    d = ds.NumpySlicesDataset(np.arange(5), sampler=ds.WeightedRandomSampler(w, num_samples=n))
    counts = np.bincount(col(d), minlength=5)
    assert counts[4] == 0
    expected = n * w[:4] / w.sum()
    chi2 = (((counts[:4] - expected) ** 2) / expected).sum()
    assert chi2 < 16.27  # chi-square, 3 degrees of freedom, p = 0.001
    no_rep = col(ds.NumpySlicesDataset(np.arange(5), sampler=ds.WeightedRandomSampler(
        w, num_samples=4, replacement=False)))
    assert sorted(no_rep) == [0, 1, 2, 3]


# -- determinism -----------------------------------------------------------------------------

def test_shuffle_repeat_each_epoch_is_a_permutation():
    mycel.set_seed(3)
    d = seq(30).shuffle(8).repeat(3)
    got = col(d)
    assert len(got) == 90
    epochs = [got[i * 30:(i + 1) * 30] for i in range(3)]
    for e in epochs:
        assert sorted(e) == list(range(30))
    assert epochs[0] != epochs[1] != epochs[2]
    assert col(d) == got  # same seed, same order
    mycel.set_seed(4)
    assert col(d) != got


def test_seed_fixes_order_for_any_worker_count():
    def pipeline(workers):
        def noisy(x):  # a random Python transform seeded by its row
            rng = np.random.default_rng(get_row_seed())
            return (x * 1000 + rng.integers(0, 1000)).astype(np.int64)
        src = ds.NumpySlicesDataset(np.arange(64), shuffle=True, num_parallel_workers=workers)
        d = src.map(noisy, num_parallel_workers=workers).shuffle(10).batch(2, num_parallel_workers=workers)
        return [int(v) for r in rows(d.repeat(2)) for v in r[0]]

    mycel.set_seed(11)
    one = pipeline(1)
    four = pipeline(4)
    assert one == four
    assert sorted(v // 1000 for v in one[:64]) == list(range(64))
    mycel.set_seed(12)
    assert pipeline(4) != one


def test_map_keeps_order_with_many_workers():
    def slow(x):
        time.sleep(0.002 * float((x * 7) % 3))
        return x * 2
    got = col(seq(40).map(slow, num_parallel_workers=4))
    assert got == [2 * i for i in range(40)]


# -- operators -------------------------------------------------------------------------------

def test_map_columns():
    d = ds.NumpySlicesDataset({"a": np.arange(4), "b": np.arange(4) * 10, "c": np.arange(4) * 100},
                              shuffle=False)
    m = d.map(lambda a, b: (a + b, a - b, a * b), input_columns=["a", "b"], output_columns=["s", "d", "p"])
    assert m.get_col_names() == ["s", "d", "p", "c"]
    got = rows(m)
    assert [r[0].item() for r in got] == [11 * i for i in range(4)]
    assert [r[2].item() for r in got] == [10 * i * i for i in range(4)]
    assert [r[3].item() for r in got] == [100 * i for i in range(4)]
    chained = d.map([lambda x: x + 1, lambda x: x * 3], input_columns="b")
    assert col(chained, 1) == [(10 * i + 1) * 3 for i in range(4)]
    with pytest.raises(ValueError, match="not among"):
        d.map(lambda x: x, input_columns="zz")
    with pytest.raises(ValueError, match="clashes"):
        d.map(lambda x: x, input_columns="a", output_columns="b")
    bad = d.map(lambda a: (a, a), input_columns="a")
    with pytest.raises(ValueError, match="returned 2 columns"):
        rows(bad)


def test_map_cpp_transform_if_registered():
    names = mycel._mycel.data.transform_names()
    if "TypeCast" not in names:
        pytest.skip("no TypeCast transform in this build")
    t = mycel._mycel.data.make_transform("TypeCast", data_type=mycel.float32)
    got = rows(seq(3).map(t))
    assert got[0][0].dtype == np.float32


def test_batch_drop_remainder_and_shapes():
    x = np.arange(20).reshape(10, 2)
    d = ds.NumpySlicesDataset({"x": x}, shuffle=False)
    b = d.batch(4)
    got = rows(b)
    assert [r[0].shape for r in got] == [(4, 2), (4, 2), (2, 2)]
    np.testing.assert_array_equal(np.concatenate([r[0] for r in got]), x)
    assert b.get_dataset_size() == 3 and b.get_batch_size() == 4
    bd = d.batch(4, drop_remainder=True, num_parallel_workers=2)
    assert bd.get_dataset_size() == 2 and len(rows(bd)) == 2
    assert bd.output_shapes() == [[4, 2]]


def ragged():
    def gen():
        for n in [1, 3, 2, 4]:
            yield (np.arange(n, dtype=np.int32), np.array(n))
    return ds.GeneratorDataset(gen, ["seq", "n"])


def test_batch_ragged_error_names_column():
    with pytest.raises(ValueError, match=r"column 'seq' has shape \(1,\).*\(3,\)"):
        rows(ragged().batch(2))


def test_batch_pad_info():
    got = rows(ragged().batch(2, pad_info={"seq": (None, -1)}))
    np.testing.assert_array_equal(got[0][0], [[0, -1, -1], [0, 1, 2]])
    np.testing.assert_array_equal(got[1][0], [[0, 1, -1, -1], [0, 1, 2, 3]])
    fixed = rows(ragged().batch(4, pad_info={"seq": ([5], 9)}))
    assert fixed[0][0].shape == (4, 5) and fixed[0][0][0].tolist() == [0, 9, 9, 9, 9]
    with pytest.raises(ValueError, match="smaller"):
        rows(ragged().batch(4, pad_info={"seq": ([2], 0)}))


def test_batch_per_batch_map():
    infos = []

    def fn(xs, info):
        infos.append((info.get_batch_num(), info.get_epoch_num()))
        return ([x * 10 for x in xs],)

    d = seq(7).batch(3, per_batch_map=fn, input_columns=["x"])
    got = rows(d)
    np.testing.assert_array_equal(np.concatenate([r[0] for r in got]), np.arange(7) * 10)
    assert sorted(infos) == [(0, 0), (1, 0), (2, 0)]

    def two(xs, info):
        return xs, [x.sum(keepdims=True) for x in xs]
    d2 = seq(4).batch(2, per_batch_map=two, input_columns=["x"], output_columns=["x", "s"])
    assert d2.get_col_names() == ["x", "s"]
    assert [r[1].tolist() for r in rows(d2)] == [[0, 1], [2, 3]]


def test_repeat_take_skip():
    assert col(seq(5).repeat(3)) == list(range(5)) * 3
    assert seq(5).repeat(3).get_dataset_size() == 15 and seq(5).repeat(3).get_repeat_count() == 3
    assert col(seq(10).take(4)) == [0, 1, 2, 3]
    assert col(seq(10).skip(7)) == [7, 8, 9]
    assert col(seq(10).skip(3).take(2)) == [3, 4]
    assert col(seq(3).take(2).repeat(2)) == [0, 1, 0, 1]
    assert seq(10).skip(7).get_dataset_size() == 3 and seq(10).take(20).get_dataset_size() == 10


def test_take_ends_the_last_epoch_without_reading_the_rest():
    # A generator that counts what it yields: take(3) of its last epoch stops reading it (at most
    # what the queues hold ahead), where earlier epochs must read on to stay on epoch boundaries.
    made = []

    def gen():
        for i in range(5000):
            made.append(i)
            yield (np.array(i),)
    d = ds.GeneratorDataset(gen, ["x"], shuffle=False).map(lambda x: x + 1, input_columns="x")
    it = d.take(3).create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert [[int(r[0]) for r in it] for _ in range(2)] == [[1, 2, 3], [1, 2, 3]]
    assert 5000 + 3 <= len(made) < 5000 + 500  # epoch 1 read whole, epoch 2 cut short
    assert col(seq(10).take(4).repeat(2)) == [0, 1, 2, 3] * 2


def test_project_rename_zip_concat():
    d = ds.NumpySlicesDataset({"a": np.arange(3), "b": np.arange(3) + 10}, shuffle=False)
    assert [r[0].item() for r in rows(d.project(["b", "a"]))] == [10, 11, 12]
    r = d.rename(["a"], ["alpha"])
    assert r.get_col_names() == ["alpha", "b"] and col(r) == [0, 1, 2]
    z = d.zip(seq(5).rename("x", "c"))
    assert z.get_col_names() == ["a", "b", "c"] and z.get_dataset_size() == 3
    assert [[int(v) for v in row] for row in rows(z)] == [[i, i + 10, i] for i in range(3)]
    assert ds.zip((seq(2), d)).get_col_names() == ["x", "a", "b"]
    with pytest.raises(ValueError, match="more than one"):
        d.zip(d)
    c = seq(3) + seq(2) + seq(1)
    assert col(c) == [0, 1, 2, 0, 1, 0] and c.get_dataset_size() == 6
    assert col(c.repeat(2)) == [0, 1, 2, 0, 1, 0] * 2
    with pytest.raises(ValueError, match="differ"):
        seq(2).concat(d)
    it = d.create_tuple_iterator(columns=["b"], output_numpy=True, num_epochs=1)
    assert [int(r[0]) for r in it] == [10, 11, 12]


def test_split():
    a, b = seq(10).split([7, 3], randomize=False)
    assert col(a) == list(range(7)) and col(b) == [7, 8, 9]
    parts = ds.NumpySlicesDataset(np.arange(20), shuffle=False).split([0.5, 0.25, 0.25])
    got = [col(p) for p in parts]
    assert [len(g) for g in got] == [10, 5, 5]
    assert sorted(itertools.chain(*got)) == list(range(20))
    m = seq(10).map(lambda x: x)
    assert [col(p) for p in m.split([5, 5], randomize=False)] == [list(range(5)), list(range(5, 10))]
    with pytest.raises(ValueError, match="sum"):
        seq(10).split([3, 3])


def test_multi_epoch_iterator():
    d = seq(4).shuffle(4)
    it = d.create_dict_iterator(num_epochs=3, output_numpy=True)
    epochs = [[int(r["x"]) for r in it] for _ in range(3)]
    assert all(sorted(e) == [0, 1, 2, 3] for e in epochs)
    assert list(it) == []  # all epochs consumed


# -- robustness ------------------------------------------------------------------------------

def test_python_error_propagates():
    def boom(x):
        if int(x) == 5:
            raise ZeroDivisionError("row five is bad")
        return x
    before = n_threads()
    with pytest.raises(ZeroDivisionError, match="row five is bad"):
        rows(seq(20).map(boom, num_parallel_workers=3).batch(2))
    assert n_threads() <= before

    def bad_gen():
        yield (np.zeros(2),)
        raise KeyError("generator broke")
    with pytest.raises(KeyError, match="generator broke"):
        rows(ds.GeneratorDataset(bad_gen, ["x"]))


def test_cpp_error_propagates():
    with pytest.raises(ValueError, match="batch: column"):
        rows(ragged().map(lambda s: s, input_columns="seq", num_parallel_workers=2).batch(3))


def _fail_at_99(x):
    if int(x) == 99:
        raise ZeroDivisionError("row 99 is bad")
    return x


@pytest.mark.parametrize("map_workers,batch_workers", [(1, 1), (2, 1), (4, 3), (8, 2)])
def test_map_error_comes_after_the_batches_before_it(map_workers, batch_workers):
    # The error travels in its row's place: the 9 complete batches before row 99 all arrive
    # (rows 0..89, in order), then the map's own error; the batch row 99 would end is dropped.
    d = seq(200).map(_fail_at_99, num_parallel_workers=map_workers)
    d = d.batch(10, num_parallel_workers=batch_workers)
    got = []
    with pytest.raises(ZeroDivisionError, match="row 99 is bad"):
        for (b,) in d.create_tuple_iterator(num_epochs=1, output_numpy=True):
            got.append(np.asarray(b))
    assert len(got) == 9
    np.testing.assert_array_equal(np.stack(got), np.arange(90).reshape(9, 10))


@pytest.mark.parametrize("shape", ["project", "take", "concat", "zip", "repeat"])
def test_error_keeps_its_place_through_inline_ops(shape):
    d = seq(200).map(_fail_at_99, num_parallel_workers=3)
    expect = list(range(99))
    if shape == "project":
        d = d.project(["x"])
    elif shape == "take":
        d = d.take(150)
    elif shape == "concat":
        d = seq(5) + d
        expect = list(range(5)) + expect
    elif shape == "zip":
        d = d.zip(ds.NumpySlicesDataset({"y": np.arange(200)}, shuffle=False))
    else:
        d = d.repeat(2)
    got = []
    with pytest.raises(ZeroDivisionError, match="row 99 is bad"):
        for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True):
            got.append(int(r[0]))
    assert got == expect


def test_early_stop_joins_threads():
    before = n_threads()
    big = ds.NumpySlicesDataset(np.zeros((5000, 8)), shuffle=True, num_parallel_workers=3)
    d = big.map(lambda x: x + 1, num_parallel_workers=3).batch(4, num_parallel_workers=2).repeat()
    for i, _ in enumerate(d.create_tuple_iterator()):
        if i == 5:
            break
    import gc
    gc.collect()
    assert n_threads() <= before
    it = d.create_tuple_iterator()
    next(it)
    assert n_threads() > before
    del it
    gc.collect()
    assert n_threads() <= before
    assert threading.active_count() == 1
