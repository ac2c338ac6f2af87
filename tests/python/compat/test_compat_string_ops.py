"""Slice, Concatenate and Mask on string columns, string pad values in batch and
bucket_batch_by_length, and pad_to_bucket_boundary beyond the first dimension, written as a
MindSpore user would (imports renamed), each against numpy on the same arrays."""
import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel.dataset import transforms

WORDS = np.array([["a", "bb", "ccc"], ["dddd", "é", "中文"], ["", "x", "yz"]])


def _rows(d):
    return [r for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]


@pytest.mark.parametrize("sl", [(slice(1, None),), (1,), ([2, 0],), (slice(None, None, -1), [0, 2]),
                                (Ellipsis, slice(0, 2)), (slice(-2, None), 1)])
def test_slice_strings(sl):
    d = ds.NumpySlicesDataset({"s": WORDS[None]}, shuffle=False)
    d = d.map(operations=transforms.Slice(*sl), input_columns=["s"])
    (got,), = _rows(d)
    # MindSpore's Slice: one selection per dimension, each kept as a dimension (an int keeps
    # that one index), the rest of the dimensions whole.
    lists = []
    for d, item in enumerate(sl + (Ellipsis,) * (WORDS.ndim - len(sl))):
        n = WORDS.shape[d]
        lists.append(list(range(n)) if item is Ellipsis else [item % n] if isinstance(item, int)
                     else [i % n for i in item] if isinstance(item, list) else list(range(n))[item])
    expect = WORDS[np.ix_(*lists)]
    assert got.dtype.kind == "U" and got.tolist() == expect.tolist()
    # eagerly too
    assert transforms.Slice(*sl)(WORDS).tolist() == expect.tolist()


def test_slice_strings_rank_error():
    with pytest.raises(ValueError, match="3 slices given for a tensor of rank 2"):
        transforms.Slice(0, 0, 0)(WORDS)


def test_concatenate_strings():
    op = transforms.Concatenate(0, np.array(["<s>", "<t>"]), np.array(["</s>"]))
    for row in WORDS:
        assert op(row).tolist() == np.concatenate([["<s>", "<t>"], row, ["</s>"]]).tolist()
    d = ds.NumpySlicesDataset({"s": WORDS}, shuffle=False).map(
        operations=transforms.Concatenate(append=np.array(["end"])), input_columns=["s"])
    assert [r[0].tolist() for r in _rows(d)] == [list(r) + ["end"] for r in WORDS.tolist()]
    with pytest.raises(TypeError, match="prepend/append hold strings but the column holds numbers"):
        transforms.Concatenate(0, np.array(["a"]))(np.array([1, 2]))
    with pytest.raises(TypeError, match="must be a 1-d string array"):
        transforms.Concatenate(0, np.array(["a"]), np.array([1.0]))


@pytest.mark.parametrize("rel", list(transforms.Relational))
def test_mask_strings(rel):
    ref = {"EQ": np.equal, "NE": np.not_equal, "GT": np.greater, "GE": np.greater_equal,
           "LT": np.less, "LE": np.less_equal}[rel.value]
    for c in ["bb", "", "中", "é"]:
        got = transforms.Mask(rel, c)(WORDS)
        assert got.dtype == np.bool_ and got.tolist() == ref(WORDS, c).tolist(), (rel, c)
    got = transforms.Mask(rel, "dddd", mycel.int32)(WORDS)
    assert got.dtype == np.int32 and got.tolist() == ref(WORDS, "dddd").astype(np.int32).tolist()
    with pytest.raises(TypeError, match="constant is a string but the column holds numbers"):
        transforms.Mask(rel, "a")(np.array([1, 2]))


def _ragged():
    return [np.array(["the", "cat"]), np.array(["a"]), np.array(["dogs", "run", "far"]),
            np.array(["x", "y"])]


@pytest.mark.parametrize("shape", [None, [4], [None]])
def test_batch_pads_strings_with_a_value(shape):
    rows = _ragged()
    d = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["s"])
    d = d.batch(2, pad_info={"s": (shape, "<pad>")})
    got = [r[0] for r in _rows(d)]
    for b, batch in enumerate(got):
        items = rows[2 * b:2 * b + 2]
        width = 4 if shape == [4] else max(len(r) for r in items)
        expect = [list(r) + ["<pad>"] * (width - len(r)) for r in items]
        assert batch.dtype.kind == "U" and batch.tolist() == expect


def test_batch_pads_2d_strings_and_errors():
    rows = [np.array([["a", "b"]]), np.array([["c"], ["d"]])]
    d = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["s"]).batch(2, pad_info={"s": (None, "-")})
    (got,), = _rows(d)
    assert got.tolist() == [[["a", "b"], ["-", "-"]], [["c", "-"], ["d", "-"]]]
    n = ds.NumpySlicesDataset({"x": np.arange(4).reshape(2, 2)}, shuffle=False)
    with pytest.raises(Exception, match="gives the pad string 'p' but the column holds numbers"):
        _rows(n.batch(2, pad_info={"x": (None, "p")}))
    d = ds.GeneratorDataset(lambda: ((r,) for r in _ragged()), ["s"])
    with pytest.raises(Exception, match="smaller than a row"):
        _rows(d.batch(4, pad_info={"s": ([2], "<pad>")}))


def test_bucket_batch_string_pad_and_boundary_beyond_dim0():
    rows = [np.array(["a"] * n) for n in (1, 3, 2, 5, 4, 6)]
    d = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["s"])
    out = _rows(d.bucket_batch_by_length(["s"], [3, 7], [2, 2, 2], pad_info={"s": ([None], "<pad>")},
                                         pad_to_bucket_boundary=True))
    # bucket 0 (length < 3) pads to 2, bucket 1 (3 <= length < 7) pads to 6
    expect = [[["a"] * n + ["<pad>"] * (width - n) for n in pair]
              for pair, width in [((1, 2), 2), ((3, 5), 6), ((4, 6), 6)]]
    assert sorted(o[0].tolist() for o in out) == sorted(expect)
    # 2-d rows: every dimension pad_info leaves open goes to the boundary - 1
    mats = [np.ones((n, n), np.float32) for n in (1, 2, 4, 5)]
    d = ds.GeneratorDataset(lambda: ((m,) for m in mats), ["m"])
    out = _rows(d.bucket_batch_by_length(["m"], [3, 7], [2, 2, 2], pad_info={"m": ([None, None], -1)},
                                         pad_to_bucket_boundary=True,
                                         element_length_function=lambda m: m.shape[0]))
    for (b,), shape in zip(out, [(2, 2, 2), (2, 6, 6)]):
        assert b.shape == shape
        ref = np.full(shape, -1, np.float32)
        for i, n in enumerate([1, 2] if shape[1] == 2 else [4, 5]):
            ref[i, :n, :n] = 1
        np.testing.assert_array_equal(b, ref)
    d = ds.GeneratorDataset(lambda: ((m,) for m in mats), ["m"])
    out = _rows(d.bucket_batch_by_length(["m"], [3, 7], [2, 2, 2], pad_info={"m": ([None, 8], 0)},
                                         pad_to_bucket_boundary=True,
                                         element_length_function=lambda m: m.shape[0]))
    assert [o[0].shape for o in out] == [(2, 2, 8), (2, 6, 8)]
