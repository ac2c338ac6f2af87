"""uint16/uint32/uint64 and complex64/complex128 as a MindSpore user meets them: creation from
numpy and lists, asnumpy, casts both ways, printing, numpy's promotion, elementwise add, sub,
mul, div, neg and (in)equality in both modes against numpy; other ops refuse them naming the op
and the dtype."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
NEW = [("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64),
       ("complex64", np.complex64), ("complex128", np.complex128)]
R = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _sample(np_t, shape=(2, 3)):
    if np.issubdtype(np_t, np.complexfloating):
        return (R.normal(size=shape) + 1j * R.normal(size=shape)).astype(np_t)
    info = np.iinfo(np_t)
    return R.integers(1, min(info.max, 2**40), size=shape, dtype=np.uint64).astype(np_t)


@pytest.mark.parametrize("name,np_t", NEW)
def test_create_asnumpy_cast_and_print(name, np_t):
    a = _sample(np_t)
    t = Tensor(a)
    assert t.dtype == getattr(ms, name) and str(t.dtype) == {"uint16": "UInt16", "uint32": "UInt32",
                                                             "uint64": "UInt64", "complex64": "Complex64",
                                                             "complex128": "Complex128"}[name]
    np.testing.assert_array_equal(t.asnumpy(), a)
    assert t.asnumpy().dtype == np_t
    for other in (np.float64, np.int64, np.bool_, np.complex128, np.uint32):
        with np.errstate(all="ignore"):
            want = a.astype(other) if not (np.iscomplexobj(a) and not np.issubdtype(other, np.complexfloating)) \
                else (a != 0 if other is np.bool_ else a.real.astype(other))
        got = ops.cast(t, other)
        np.testing.assert_array_equal(got.asnumpy(), want)
    back = Tensor(a.astype(np.float64)).astype(getattr(ms, name))
    np.testing.assert_array_equal(back.asnumpy(), a.astype(np.float64).astype(np_t))
    assert str(t) == str(Tensor(a)) and len(repr(t)) > 0
    if name.startswith("complex"):
        assert "j" in str(t)
    else:
        assert str(int(a.max())) in str(t)


@pytest.mark.parametrize("a,b", [("uint16", "int16"), ("uint32", "int32"), ("uint64", "int64"),
                                 ("uint64", "uint8"), ("uint16", "float16"), ("complex64", "float64"),
                                 ("complex64", "int32"), ("complex64", "complex128"), ("uint32", "complex64")])
def test_promotion_matches_numpy(a, b):
    want = np.promote_types(a, b).name
    assert ms.promote_types(getattr(ms, a), getattr(ms, b)).name == want


def _arith(x, y):
    return x + y, x - y, x * y, x / y, x == y, x != y


@MODES
@pytest.mark.parametrize("name,np_t", NEW)
def test_elementwise_vs_numpy(mode, name, np_t):
    ms.set_context(mode=mode)
    a, b = _sample(np_t), _sample(np_t, (3,))
    b[0] = a[0, 0]  # one equal pair
    fn = ms.jit(_arith) if mode == ms.GRAPH_MODE else _arith
    got = fn(Tensor(a), Tensor(b))
    with np.errstate(all="ignore"):
        want = (a + b, a - b, a * b, a / b, a == b, a != b)
    for g, w in zip(got, want):
        assert g.asnumpy().dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6)
        else:
            np.testing.assert_array_equal(g.asnumpy(), w)


def test_neg_mixed_and_errors():
    c = _sample(np.complex64)
    np.testing.assert_array_equal((-Tensor(c)).asnumpy(), -c)
    u = _sample(np.uint32)
    mixed = Tensor(u) + Tensor(np.int32(5))  # uint32 with int32 promotes to int64 (numpy)
    assert mixed.dtype == ms.int64
    np.testing.assert_array_equal(mixed.asnumpy(), u.astype(np.int64) + 5)
    cmix = Tensor(c) * Tensor(np.float64(2.0))
    assert cmix.dtype == ms.complex128
    np.testing.assert_allclose(cmix.asnumpy(), c.astype(np.complex128) * 2.0, rtol=1e-6)
    with pytest.raises(TypeError, match=r"\[erf\] input 'x' has unsupported dtype complex64"):
        ops.erf(Tensor(c))  # exp, cumsum, ... take the new dtypes (test_compat_dtype_math.py); erf does not
    with pytest.raises(TypeError, match=r"\[relu\].*unsupported dtype complex64"):
        ops.relu(Tensor(c))  # (relu of the unsigned types is the identity: test_compat_dtype_nn.py)
    with pytest.raises(TypeError, match=r"\[less\].*unsupported dtype complex128"):
        ops.less(Tensor(c.astype(np.complex128)), Tensor(c.astype(np.complex128)))


@pytest.mark.parametrize("name,np_t", NEW)
def test_list_creation_dlpack_and_creation_ops(name, np_t):
    dt = getattr(ms, name)
    vals = [[1, 2, 3], [4, 5, 6]]
    t = Tensor(vals, dtype=dt)
    np.testing.assert_array_equal(t.asnumpy(), np.array(vals, dtype=np_t))
    a = _sample(np_t)
    # DLPack both ways: numpy reads a Mycel tensor, Mycel reads a numpy array
    np.testing.assert_array_equal(np.from_dlpack(Tensor(a)), a)
    back = ms.from_dlpack(a)
    assert back.dtype == dt
    np.testing.assert_array_equal(back.asnumpy(), a)
    for op, ref in ((ops.zeros, np.zeros), (ops.ones, np.ones)):
        z = op((2, 2), dt)
        assert z.dtype == dt
        np.testing.assert_array_equal(z.asnumpy(), ref((2, 2), np_t))
    # views keep the bytes: reshape, transpose, slicing
    np.testing.assert_array_equal(Tensor(a).reshape(3, 2).asnumpy(), a.reshape(3, 2))
    np.testing.assert_array_equal(Tensor(a).T.asnumpy(), a.T)


def test_unsigned_values_beyond_the_signed_range():
    big = np.array([0, 2**63, 2**64 - 1], np.uint64)
    t = Tensor(big)
    np.testing.assert_array_equal(t.asnumpy(), big)
    assert str(2**64 - 1) in str(t)
    np.testing.assert_array_equal((t + Tensor(np.uint64(1))).asnumpy(), big + np.uint64(1))  # wraps
    u32 = np.array([4000000000, 7], np.uint32)
    np.testing.assert_array_equal(ops.cast(Tensor(u32), ms.float64).asnumpy(), u32.astype(np.float64))
    np.testing.assert_array_equal(Tensor(np.array([-1.0, 3.7])).astype(ms.uint16).asnumpy()[1:], [3])


@MODES
@pytest.mark.parametrize("np_t", [np.complex64, np.complex128])
def test_complex_parts_vs_numpy(mode, np_t):
    ms.set_context(mode=mode)
    z = _sample(np_t, (3, 4))

    def parts(t):
        return ops.abs(t), ops.real(t), ops.imag(t), ops.conj(t)
    fn = ms.jit(parts) if mode == ms.GRAPH_MODE else parts
    got = fn(Tensor(z))
    want = (np.abs(z), z.real, z.imag, np.conj(z))
    for g, w in zip(got, want):
        assert g.asnumpy().dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6)
    # real inputs: real/conj are the input, imag is zeros (numpy)
    x = R.normal(size=(2, 3)).astype(np.float32)
    r, i, c = ops.real(Tensor(x)), ops.imag(Tensor(x)), ops.conj(Tensor(x))
    np.testing.assert_array_equal(r.asnumpy(), np.real(x))
    np.testing.assert_array_equal(i.asnumpy(), np.imag(x))
    np.testing.assert_array_equal(c.asnumpy(), np.conj(x))
    u = np.array([1, 7], np.uint32)
    assert ops.abs(Tensor(u)).dtype == ms.uint32 and ops.abs(Tensor(u)).asnumpy().tolist() == [1, 7]


def test_grad_of_real_parts_of_real_inputs():
    x = R.normal(size=(4,)).astype(np.float32)
    g = ops.grad(lambda t: (ops.real(t) * 3 + ops.imag(t) + ops.conj(t)).sum())(Tensor(x))
    np.testing.assert_allclose(g.asnumpy(), np.full(4, 4.0), rtol=1e-6)


@pytest.mark.parametrize("name,np_t", NEW)
def test_checkpoint_round_trip(tmp_path, name, np_t):
    a = _sample(np_t, (3, 2))
    path = str(tmp_path / "m.ckpt")
    ms.save_checkpoint({"w": Tensor(a)}, path)
    got = ms.load_checkpoint(path)["w"]
    assert got.dtype == getattr(ms, name)
    np.testing.assert_array_equal(got.asnumpy(), a)


def test_mindrecord_takes_unsigned_values_and_refuses_complex(tmp_path):
    from mycel.mindrecord import FileWriter
    import mycel.dataset as ds
    path = str(tmp_path / "d.mindrecord")
    w = FileWriter(path)
    w.add_schema({"u": {"type": "int64", "shape": [-1]}, "c": {"type": "float32", "shape": [-1]}})
    u = np.array([1, 2**40, 65535], np.uint64)
    with pytest.raises(ValueError, match=r"field 'c'.*expected float32 values, got an array of complex64"):
        w.write_raw_data([{"u": u, "c": np.array([1 + 2j], np.complex64)}])
    with pytest.raises(ValueError, match=r"field 'u'.*out of range for int64"):
        w.write_raw_data([{"u": np.array([2**64 - 1], np.uint64), "c": np.zeros(1, np.float32)}])
    w.write_raw_data([{"u": u, "c": np.zeros(1, np.float32)}])
    w.commit()
    row = next(ds.MindDataset(path, shuffle=False).create_dict_iterator(output_numpy=True))
    np.testing.assert_array_equal(row["u"], u.astype(np.int64))


def test_summary_tensors_of_new_dtypes_read_by_tensorboard(tmp_path):
    # TensorBoard's own reader decodes what the summary writer wrote, dtype and values
    tensor_util = pytest.importorskip("tensorboard.util.tensor_util")
    from insight_helpers import accumulator, only_event_file
    vals = {"u": np.array([1, 2**33], np.uint64), "h": np.array([7, 65535], np.uint16),
            "z": np.array([1 + 2j, -3.5j], np.complex64)}
    with ms.SummaryRecord(str(tmp_path)) as rec:
        for k, v in vals.items():
            rec.add_value("tensor", k, Tensor(v))
        rec.record(1)
        rec.flush()
    acc = accumulator(only_event_file(str(tmp_path)))
    for k, v in vals.items():
        got = tensor_util.make_ndarray(acc.Tensors(k)[0].tensor_proto)
        assert got.dtype == v.dtype
        np.testing.assert_array_equal(got, v)
