"""Tensor.__getitem__/__setitem__ follow numpy exactly; leading-int/slice keys return views
sharing storage; reshape-like Tensor methods match numpy."""
import numpy as np
import pytest

import mycel
from mycel import ops

A = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
I = np.s_  # I[...] builds index keys

KEYS = [
    I[0], I[-1], I[1, 2], I[1, -1, 3], I[1, 2, 3, 4], I[-2, -3, -4, -5],
    I[:], I[1:], I[:1], I[0:2], I[5:], I[-1:], I[0, 1:3], I[1, 0:0], I[0, :, 1:3],
    I[::2], I[:, ::2], I[:, ::-1], I[::-1, ::-2], I[1, ::-1, 1:4:2], I[..., ::-3], I[:, 2:0:-1],
    I[:, -100:100], I[:, 100:-100:-1], I[0, ..., 1], I[..., 0], I[..., 1:3], I[0, ...], I[...],
    I[None], I[:, None], I[..., None], I[None, 0, None, ..., None, 1], I[0, None, 1, None],
    I[1, :, None, ::2], I[()], I[None, ...],
    I[[0, 1]], I[[1, 0, 1]], I[[-1]], I[:, [0, 2]], I[1, [2, 0, 1]], I[..., [4, 0]],
    I[0, :, [1, 3], 1:], I[:, [[0, 1], [2, 0]]], I[None, :, [0, -1]], I[np.array([1, 0])],
    I[:, 1, [3, 2, 1]], I[[]], I[0, ..., [1]], I[1, [0, 2], ..., 3], I[:, [0, 1], 2], I[1, :, :, [0]],
    I[0, None, [1, 2]], I[..., 0, [[1]], :],
]


def _key_id(k):
    return repr(k).replace(" ", "")


@pytest.mark.parametrize("key", KEYS, ids=[_key_id(k) for k in KEYS])
def test_getitem_matches_numpy(key):
    x = mycel.Tensor(A)
    got = x[key]
    ref = A[key]
    assert isinstance(got, mycel.Tensor)
    assert got.shape == ref.shape, f"{key}: {got.shape} vs numpy {ref.shape}"
    np.testing.assert_array_equal(got.asnumpy(), ref)


@pytest.mark.parametrize("key", [I[0], I[1, 2], I[1:], I[0, 1:3], I[0, 1, 2:4, ...], I[1, :, :],
                                 I[...], I[()], I[0:0], I[-1, ...]],
                         ids=lambda k: _key_id(k))
def test_leading_int_and_slice_are_views(key):
    x = mycel.Tensor(A)
    v = x[key]
    assert v._is_view_of(x)
    np.testing.assert_array_equal(v.asnumpy(), A[key])


def test_view_writes_through():
    x = mycel.Tensor(A)
    row = x[1]
    row[0, 0] = -7.0
    assert x.asnumpy()[1, 0, 0, 0] == -7.0
    sub = x[0, 1:3]
    sub[...] = 0.0
    assert (x.asnumpy()[0, 1:3] == 0).all()
    assert (x.asnumpy()[0, 0] == A[0, 0]).all()


def test_strided_keys_copy():
    x = mycel.Tensor(A)
    assert not x[:, 1]._is_view_of(x)
    assert not x[::2]._is_view_of(x)
    assert not x[[0]]._is_view_of(x)


def test_tensor_indices():
    x = mycel.Tensor(A)
    for idx in (mycel.Tensor(np.array([1, 0], np.int32)), mycel.Tensor(np.array([[1], [0]]))):
        np.testing.assert_array_equal(x[:, idx].asnumpy(), A[:, idx.asnumpy()])
    k = mycel.Tensor(np.array(1))  # a 0-d integer tensor indexes like an int
    np.testing.assert_array_equal(x[k].asnumpy(), A[1])
    assert x[np.int64(1), np.int32(2)].shape == (4, 5)


def test_bool_mask_and_multiple_arrays_fall_back_to_numpy():
    x = mycel.Tensor(A)
    mask = A > 50
    np.testing.assert_array_equal(x[mask].asnumpy(), A[mask])
    np.testing.assert_array_equal(x[mycel.Tensor(mask)].asnumpy(), A[mask])
    sel = A[0, :, 0, 0] > 10
    np.testing.assert_array_equal(x[0, sel].asnumpy(), A[0, sel])
    np.testing.assert_array_equal(x[[0, 1], [2, 1]].asnumpy(), A[[0, 1], [2, 1]])


@pytest.mark.parametrize("key", [I[2], I[-3], I[0, 3], I[0, 0, -5], I[1, 1, 1, 5], I[[0, 2]],
                                 I[:, [3]], I[:, -4], I[0, 0, 0, 0, 0], I[..., ..., 0], I[1.5],
                                 I["a"]],
                         ids=lambda k: _key_id(k))
def test_getitem_errors_like_numpy(key):
    x = mycel.Tensor(A)
    with pytest.raises(IndexError):
        A[key]
    with pytest.raises(IndexError):
        x[key]


def test_zero_step_and_0d():
    x = mycel.Tensor(A)
    with pytest.raises(ValueError, match="step"):
        x[::0]
    s = mycel.Tensor(np.float32(3.5))
    assert s[()].shape == () and s[()].item() == 3.5
    assert s[None].shape == (1,)
    assert s[...].shape == ()
    with pytest.raises(IndexError):
        s[0]


def test_iteration_stops_at_index_error():
    x = mycel.Tensor(A[:, 0, 0])
    assert [r.asnumpy().tolist() for r in x] == A[:, 0, 0].tolist()


@pytest.mark.parametrize("key,value", [
    (I[0], 1.0), (I[1, 2], -3.0), (I[:, 1:3], 5.0), (I[..., ::2], 0.5), (I[[0, 1], 0], 9.0),
    (I[1], np.ones((3, 4, 5))), (I[:, 0, None], np.arange(5.0)), (I[A > 60], 0.0),
])
def test_setitem_matches_numpy(key, value):
    x = mycel.Tensor(A)
    ref = A.copy()
    ref[key] = value
    x[key] = mycel.Tensor(np.asarray(value, np.float32)) if isinstance(value, np.ndarray) else value
    np.testing.assert_array_equal(x.asnumpy(), ref)


def test_setitem_with_tensor_key_and_int_dtype():
    x = mycel.Tensor(np.zeros((4, 3), np.int32))
    x[mycel.Tensor(np.array([0, 2]))] = 7
    x[1, mycel.Tensor(np.array(1))] = -1
    ref = np.zeros((4, 3), np.int32)
    ref[[0, 2]] = 7
    ref[1, 1] = -1
    np.testing.assert_array_equal(x.asnumpy(), ref)
    assert x.dtype == mycel.int32


def test_bfloat16_indexing_and_assignment():
    x = mycel.Tensor(np.arange(12.0).reshape(3, 4), dtype=mycel.bfloat16)
    assert x[1].dtype == mycel.bfloat16 and x[1]._is_view_of(x)
    np.testing.assert_array_equal(x[:, ::-2].asnumpy(), np.arange(12.0).reshape(3, 4)[:, ::-2])
    x[0, 1:3] = 100.0
    assert x.dtype == mycel.bfloat16
    np.testing.assert_array_equal(x.asnumpy()[0], [0, 100, 100, 3])
    np.testing.assert_array_equal(x[x.asnumpy() > 5].asnumpy(), [100, 100, 6, 7, 8, 9, 10, 11])


def test_shape_methods_match_numpy():
    x = mycel.Tensor(A)
    assert x.reshape(6, 20).shape == (6, 20)
    assert x.reshape((6, -1)).shape == (6, 20)
    assert x.reshape(6, 20)._is_view_of(x)
    assert x.view(-1).shape == (120,) and x.view(-1)._is_view_of(x)
    np.testing.assert_array_equal(x.flatten().asnumpy(), A.flatten())
    assert x.flatten(start_dim=1).shape == (2, 60)
    assert x.flatten(start_dim=1, end_dim=2).shape == (2, 12, 5)
    np.testing.assert_array_equal(x.transpose().asnumpy(), A.transpose())
    np.testing.assert_array_equal(x.transpose(1, 0, 3, 2).asnumpy(), A.transpose(1, 0, 3, 2))
    np.testing.assert_array_equal(x.transpose((3, 2, 1, 0)).asnumpy(), A.transpose(3, 2, 1, 0))
    np.testing.assert_array_equal(x.T.asnumpy(), A.T)
    assert x.expand_dims(1).shape == (2, 1, 3, 4, 5)
    assert x[:, :1].squeeze().shape == (2, 4, 5)
    assert x[:, :1].squeeze(1).shape == (2, 4, 5)
    y = mycel.Tensor(A[:1, :1])
    assert y.squeeze(axis=(0, 1)).shape == (4, 5)
    np.testing.assert_array_equal(x[0, 0].broadcast_to((2, 4, 5)).asnumpy(),
                                  np.broadcast_to(A[0, 0], (2, 4, 5)))
    np.testing.assert_array_equal(x[0, 0].tile((2, 1)).asnumpy(), np.tile(A[0, 0], (2, 1)))
    np.testing.assert_array_equal(x[0, 0].tile(2, 1).asnumpy(), np.tile(A[0, 0], (2, 1)))
    c = x.copy()
    assert not c._is_view_of(x)
    np.testing.assert_array_equal(c.asnumpy(), A)


def test_view_ops_share_storage_and_kernels_copy():
    x = mycel.Tensor(A)
    for v in (ops.reshape(x, (-1,)), ops.flatten(x), ops.expand_dims(x, 0), ops.squeeze(x),
              ops.identity(x)):
        assert v._is_view_of(x)
    assert not ops.transpose(x, ()).\
        _is_view_of(x)
