"""Tensor construction, metadata, numpy/DLPack interop, printing and Python operators."""
import gc

import numpy as np
import pytest

import mycel
from mycel import Tensor
from bf16_reference import bf16_round

ALL_NUMPY = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("dt", ALL_NUMPY)
def test_from_numpy_roundtrip(dt):
    a = (np.arange(24).reshape(2, 3, 4) % 7).astype(dt)
    t = Tensor(a)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.size == 24
    assert t.dtype.name == dt
    np.testing.assert_array_equal(t.asnumpy(), a)
    assert t.asnumpy().dtype == a.dtype


def test_constructor_copies_input_once():
    a = np.ones(4, np.float32)
    t = Tensor(a)
    a[0] = 5
    assert t.asnumpy()[0] == 1.0  # Tensor(ndarray) owns a copy


def test_asnumpy_shares_memory_and_outlives_tensor():
    t = Tensor(np.arange(5, dtype=np.float64))
    a = t.asnumpy()
    b = t.numpy()
    assert np.shares_memory(a, b)
    del t
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(5))


def test_python_data_defaults_follow_mindspore():
    assert Tensor([1.0, 2.0]).dtype == mycel.float32
    assert Tensor([1, 2]).dtype == mycel.int64
    assert Tensor(True).dtype == mycel.bool_
    assert Tensor(3.5).shape == ()
    assert Tensor([[1, 2], [3, 4]], dtype=mycel.float64).dtype == mycel.float64
    assert Tensor(np.float64(2.0)).dtype == mycel.float64


def test_non_contiguous_numpy_input():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (a.T, a[:, ::2], a[::-1], a[1:3, 2:5]):
        np.testing.assert_array_equal(Tensor(view).asnumpy(), view)


def test_shape_only_constructor():
    t = Tensor(shape=(2, 3), dtype=mycel.int32)
    assert t.shape == (2, 3) and t.dtype == mycel.int32
    np.testing.assert_array_equal(t.asnumpy(), np.zeros((2, 3), np.int32))


def test_astype_matches_numpy():
    a = np.array([-2.7, -0.5, 0.0, 0.5, 1.5, 300.0], np.float32)
    for dt in ["int8", "int32", "int64", "float16", "float64", "bool", "uint8"]:
        got = Tensor(a).astype(dt).asnumpy()
        with np.errstate(invalid="ignore"):
            ref = a.astype(dt)
        if dt in ("int8", "uint8"):  # out-of-range float->small int is undefined in numpy too
            keep = np.abs(a) < 100
            got, ref = got[keep], ref[keep]
        np.testing.assert_array_equal(got, ref)


def test_bfloat16_storage_rounds_to_nearest_even():
    vals = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.14159, -1e-3, 65504.0], np.float32)
    t = Tensor(vals, dtype=mycel.bfloat16)
    assert t.dtype == mycel.bfloat16 and t.itemsize == 2 and t.nbytes == 12
    got = t.asnumpy()
    assert got.dtype == np.float32
    # Reference: round-to-nearest-even on the top 16 bits, computed with integer arithmetic.
    np.testing.assert_array_equal(got, bf16_round(vals))


def test_float16_storage():
    t = Tensor(np.array([1.0, 0.1, 65504.0], np.float32), dtype=mycel.float16)
    np.testing.assert_array_equal(t.asnumpy(), np.array([1.0, 0.1, 65504.0], np.float16))


def test_repr_like_numpy():
    t = Tensor(np.array([[1.5, 2.0], [3.0, 4.0]], np.float32))
    r = repr(t)
    assert r.startswith("Tensor(") and "dtype=Float32" in r and "1.5" in r
    assert repr(Tensor(2)) == "Tensor(2, dtype=Int64)"
    assert str(Tensor([1, 2])) == "[1 2]"


def test_array_protocol_and_scalars():
    t = Tensor(np.array([[1.0, 2.0]], np.float64))
    np.testing.assert_array_equal(np.asarray(t), [[1.0, 2.0]])
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert float(Tensor(2.5)) == 2.5 and int(Tensor(7)) == 7 and bool(Tensor(True))
    assert Tensor([3]).item() == 3 and Tensor([[1, 2]]).tolist() == [[1, 2]]
    with pytest.raises(ValueError):
        Tensor([1, 2]).item()
    assert len(Tensor(np.zeros((5, 2)))) == 5
    with pytest.raises(TypeError):
        len(Tensor(1.0))


def test_numpy_reads_dlpack_without_copy():
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr()
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))


def test_from_dlpack_shares_numpy_memory():
    a = np.arange(6, dtype=np.int32).reshape(3, 2)
    t = mycel.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and t.dtype == mycel.int32
    a[0, 0] = 42
    assert t.asnumpy()[0, 0] == 42
    del a
    gc.collect()
    assert t.asnumpy()[0, 0] == 42  # the tensor keeps the producer alive


def test_from_dlpack_non_contiguous_copies():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(mycel.from_dlpack(a).asnumpy(), a)


def test_torch_dlpack_both_ways():
    torch = pytest.importorskip("torch")
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr()
    assert tt.tolist() == [[0, 1, 2], [3, 4, 5]]
    src = torch.arange(4, dtype=torch.float64)
    back = mycel.from_dlpack(src)
    assert back.data_ptr() == src.data_ptr()
    bf = Tensor(np.array([1.5, 2.0], np.float32), dtype=mycel.bfloat16)
    assert torch.from_dlpack(bf).dtype == torch.bfloat16


def test_bad_construction_raises_cleanly():
    with pytest.raises(TypeError):
        Tensor(object())
    with pytest.raises(TypeError):
        Tensor([[1, 2], [3]])  # ragged
    with pytest.raises(TypeError):
        Tensor("abc")
    with pytest.raises(TypeError):
        Tensor(np.zeros(2, "datetime64[s]"))  # complex64 is a dtype now; datetimes are not
    with pytest.raises(TypeError):
        Tensor([1.0], dtype="complex32")
    with pytest.raises(ValueError):
        Tensor(shape=(2, -3))  # -1 is MindSpore's dynamic dim and [-2] its dynamic rank; -3 is nothing
    with pytest.raises(TypeError):
        Tensor()


def test_operators_follow_numpy():
    a = np.array([[1.0, -2.0, 3.0]], np.float32)
    b = np.array([[2.0], [4.0]], np.float32)
    x, y = Tensor(a), Tensor(b)
    np.testing.assert_allclose((x + y).asnumpy(), a + b)
    np.testing.assert_allclose((x - y).asnumpy(), a - b)
    np.testing.assert_allclose((x * y).asnumpy(), a * b)
    np.testing.assert_allclose((x / y).asnumpy(), a / b)
    np.testing.assert_allclose((2 - x).asnumpy(), 2 - a)
    np.testing.assert_allclose((1 / y).asnumpy(), 1 / b)
    np.testing.assert_array_equal((x == 3.0).asnumpy(), a == 3.0)
    np.testing.assert_allclose((-x).asnumpy(), -a)


def test_weak_python_scalars_keep_tensor_dtype():
    x = Tensor(np.ones(3, np.float16))
    assert (x + 1.5).dtype == mycel.float16
    assert (Tensor(np.ones(3, np.int32)) + 2).dtype == mycel.int32
    assert (Tensor(np.ones(3, np.int32)) + 2.5).dtype == mycel.float32
    assert (Tensor(np.ones(3, np.uint8)) * 2).dtype == mycel.uint8
    assert (Tensor(np.array([True])) + 1).dtype == mycel.int64


def test_tensor_dtype_promotion_matches_numpy():
    for da, db in [("int32", "float32"), ("uint8", "int8"), ("int16", "float16"), ("bool", "int8"),
                   ("float16", "float64"), ("int64", "int8")]:
        a, b = np.ones(2, da), np.ones(2, db)
        assert (Tensor(a) + Tensor(b)).dtype.name == str((a + b).dtype), (da, db)
