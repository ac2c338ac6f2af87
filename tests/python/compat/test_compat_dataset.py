"""Dataset.filter, bucket_batch_by_length and the array transforms (Slice, Concatenate, Mask,
PadEnd), against numpy and plain-Python references."""
import numpy as np
import pytest

import mycel
from mycel.dataset import GeneratorDataset, NumpySlicesDataset
from mycel.dataset import transforms as T

X = np.arange(24).reshape(2, 3, 4)


@pytest.mark.parametrize("selection,key", [
    ((1,), (slice(1, 2),)), ((slice(0, 2), [0, 2]), (slice(0, 2), [0, 2])),
    ((None, slice(None, None, -2)), (slice(None), slice(None, None, -2))),
    ((Ellipsis, -1, [3, 0]), (slice(None), slice(2, 3), [3, 0])), ((slice(5, 9),), (slice(5, 9),))])
def test_slice_vs_numpy(selection, key):
    ref = X
    for axis, k in enumerate(key):  # one selection per axis, as MindSpore's Slice applies them
        ref = np.take(ref, np.arange(ref.shape[axis])[k], axis=axis)
    np.testing.assert_array_equal(T.Slice(*selection)(X), ref)


def test_array_transforms_vs_numpy():
    v = np.array([3, 1, 4, 1, 5], np.int32)
    np.testing.assert_array_equal(T.Concatenate(0, np.array([0, 0]), np.array([9]))(v), np.r_[0, 0, v, 9])
    for op, ref in ((T.Relational.EQ, v == 1), (T.Relational.NE, v != 1), (T.Relational.GT, v > 1),
                    (T.Relational.GE, v >= 3), (T.Relational.LT, v < 4), (T.Relational.LE, v <= 4)):
        np.testing.assert_array_equal(T.Mask(op, 3 if op is T.Relational.GE else 1 if op in (
            T.Relational.EQ, T.Relational.NE, T.Relational.GT) else 4)(v), ref)
    np.testing.assert_array_equal(T.Mask(T.Relational.GT, 2, mycel.float32)(v), (v > 2).astype(np.float32))
    np.testing.assert_array_equal(T.PadEnd([7], -1)(v), np.r_[v, -1, -1])
    np.testing.assert_array_equal(T.PadEnd([3])(v), v[:3])
    np.testing.assert_array_equal(T.PadEnd([3, 5], 0.5)(np.ones((2, 2), np.float32)),
                                  np.pad(np.ones((2, 2)), ((0, 1), (0, 3)), constant_values=0.5))
    with pytest.raises(ValueError, match="only 1-d"):
        T.Concatenate(0, np.array([1]))(X)
    with pytest.raises(ValueError, match="rank"):
        T.PadEnd([3])(X)
    with pytest.raises(IndexError, match="out of range for dimension 0"):
        T.Slice(5)(X)


def test_transforms_in_a_pipeline():
    data = np.arange(12, dtype=np.int32).reshape(4, 3)
    ds = NumpySlicesDataset({"x": data}, shuffle=False)
    ds = ds.map([T.Slice(slice(1, 3)), T.Concatenate(0, np.array([-1])), T.PadEnd([4], 100)], input_columns="x")
    rows = [r[0] for r in ds.create_tuple_iterator(output_numpy=True, num_epochs=1)]
    np.testing.assert_array_equal(np.stack(rows), np.c_[np.full(4, -1), data[:, 1:3], np.full(4, 100)])


def test_filter_vs_python():
    data = np.arange(20, dtype=np.int32)
    ds = NumpySlicesDataset({"a": data, "b": data * 10}, shuffle=False)
    kept = ds.filter(lambda a: a % 3 == 0, input_columns=["a"])
    rows = list(kept.create_tuple_iterator(output_numpy=True, num_epochs=1))
    assert [int(r[0]) for r in rows] == [v for v in range(20) if v % 3 == 0]
    assert [int(r[1]) for r in rows] == [10 * v for v in range(20) if v % 3 == 0]
    assert kept.get_col_names() == ["a", "b"]
    # twice: each epoch re-reads the child
    assert len(list(kept.create_tuple_iterator(output_numpy=True, num_epochs=1))) == 7
    assert kept.batch(3).get_dataset_size() == 3


def _sequences():
    rng = np.random.default_rng(0)
    return [np.arange(n, dtype=np.int32) + 1 for n in rng.integers(1, 12, size=25)]


def test_bucket_batch_by_length_vs_python():
    seqs = _sequences()
    ds = GeneratorDataset(lambda: ((s,) for s in seqs), column_names=["seq"])
    bounds, sizes = [4, 8], [3, 2, 4]
    out = list(ds.bucket_batch_by_length(["seq"], bounds, sizes, pad_info={"seq": (None, -1)})
               .create_tuple_iterator(output_numpy=True, num_epochs=1))
    # reference: bucket by length, emit full buckets in arrival order, then the rest by bucket
    pending, ref = [[], [], []], []
    for s in seqs:
        b = 0 if len(s) < 4 else 1 if len(s) < 8 else 2
        pending[b].append(s)
        if len(pending[b]) == sizes[b]:
            ref.append(pending[b])
            pending[b] = []
    ref += [p for p in pending if p]
    assert len(out) == len(ref)
    for (got,), want in zip(out, ref):
        width = max(len(s) for s in want)
        np.testing.assert_array_equal(got, np.stack([np.pad(s, (0, width - len(s)), constant_values=-1) for s in want]))
    boundary = list(ds.bucket_batch_by_length(["seq"], [12], [5, 5], pad_info={"seq": ([None], 0)},
                                               pad_to_bucket_boundary=True, drop_remainder=True)
                    .create_tuple_iterator(output_numpy=True, num_epochs=1))
    assert len(boundary) == len(seqs) // 5 and all(b[0].shape == (5, 11) for b in boundary)
    with pytest.raises(ValueError, match="one more than the boundaries"):
        ds.bucket_batch_by_length(["seq"], [4, 8], [3, 2])
