"""Table rows for the indexing ops: slice, strided_slice(_grad), pad(_grad), gather, gather_nd,
embedding, tensor_scatter_add, scatter_add, gather_elements, tensor_scatter_elements, one_hot,
shift, and strided_slice_dynamic / slice_dynamic (bounds as int tensors) with their backward ops."""
import numpy as np

from op_cases import OpCase, make_input

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")
NUMERIC = ALL[1:]


def _key(key):
    """A reference that applies a fixed numpy index (the row's attrs spell the same index)."""
    return lambda x, **attrs: x[key]


def _ss(key, begin, end, strides, **masks):
    return dict(ref=_key(key), attrs=dict(begin=begin, end=end, strides=strides, **masks))


def _pad_ref(x, paddings, mode="constant", value=0.0):
    if x.ndim == 0:
        return x.copy()
    pairs = [(paddings[2 * i], paddings[2 * i + 1]) for i in range(x.ndim)]
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -a)) for i, (b, a) in enumerate(pairs))
    x = x[crop]
    pos = [(max(0, b), max(0, a)) for b, a in pairs]
    if mode == "constant":
        return np.pad(x, pos, mode="constant", constant_values=np.asarray(value).astype(x.dtype))
    return np.pad(x, pos, mode=mode)


def _gen(params_shape, index_shape, lo, hi, index_dtype="int64", extra=None):
    """Generator: a params array of the row's dtype and integer indices in [lo, hi)."""
    def gen(rng, dtype):
        arrays = [make_input(rng, params_shape, dtype),
                  rng.integers(lo, hi, size=index_shape).astype(index_dtype)]
        if extra is not None:
            arrays.append(make_input(rng, extra, dtype))
        return arrays
    return gen


def _nd_key(i):
    return tuple(np.moveaxis(i, -1, 0))


def _tensor_scatter_add_ref(x, i, u):
    out = x.copy()
    np.add.at(out, _nd_key(i), u)
    return out


def _scatter_add_ref(x, i, u):
    out = x.copy()
    np.add.at(out, i, u)
    return out


def _one_hot_ref(i, depth, on_value=1.0, off_value=0.0, axis=-1, dtype="float32"):
    hot = np.expand_dims(i, axis if axis != -1 else i.ndim) == np.arange(depth).reshape(
        [-1 if d == (axis if axis != -1 else i.ndim) else 1 for d in range(i.ndim + 1)])
    return np.where(hot, on_value, off_value).astype(dtype)


def _emb_gen(ids_shape, n, dim):
    def gen(rng, dtype):
        return [rng.integers(0, n, size=ids_shape).astype(np.int64), make_input(rng, (n, dim), dtype)]
    return gen


FLOATS = ("float16", "float32", "float64")


def _ss_grad(key, dy_shape, like_shape, begin, end, strides, **masks):
    """strided_slice_grad: zeros like `like` with dy written at the slice `key`."""
    def ref(dy, like, **attrs):
        out = np.zeros(like.shape, dy.dtype)
        out[key] = dy
        return out

    def gen(rng, dtype):
        return [make_input(rng, dy_shape, dtype), make_input(rng, like_shape, dtype)]
    return dict(ref=ref, shapes=gen, attrs=dict(begin=begin, end=end, strides=strides, **masks))


def _pad_grad_ref(dy, like, paddings, mode="constant", value=0.0):
    """The adjoint of pad: pad the element numbers of `like` (-1 in constant padding) and add dy
    into the elements each output position copied."""
    src = np.arange(like.size).reshape(like.shape)
    padded = _pad_ref(src, paddings, mode, value=-1) if mode == "constant" else _pad_ref(src, paddings, mode)
    out = np.zeros(like.size)
    keep = padded >= 0
    np.add.at(out, padded[keep], dy.astype(np.float64)[keep])
    return out.reshape(like.shape).astype(dy.dtype)


def _pad_grad_gen(dy_shape, like_shape):
    return lambda rng, dtype: [make_input(rng, dy_shape, dtype), make_input(rng, like_shape, dtype)]


def _along_gen(x_shape, index_shape, axis, updates=False, distinct=False):
    """input, int64 indices into `axis` (distinct along it when asked) [, updates]."""
    def gen(rng, dtype):
        n = x_shape[axis]
        if distinct:
            perm = np.argsort(rng.random(x_shape), axis=axis)
            idx = np.take(perm, np.arange(index_shape[axis]), axis=axis)
        else:
            idx = rng.integers(-n, n, size=index_shape)
        arrays = [make_input(rng, x_shape, dtype), idx.astype(np.int64)]
        if updates:
            arrays.append(make_input(rng, index_shape, dtype))
        return arrays
    return gen


def _scatter_elements_ref(x, idx, u, axis=0, reduction="none"):
    axis = axis % x.ndim
    coords = list(np.indices(idx.shape))
    coords[axis] = idx % x.shape[axis]
    if reduction == "add":
        out = x.astype(np.float64) if x.dtype.kind == "f" else x.copy()
        np.add.at(out, tuple(coords), u)
        return out.astype(x.dtype)
    out = x.copy()
    out[tuple(coords)] = u
    return out


def _gather_elements_ref(x, i, dim=0):
    """x at (position of i off `dim`, i at `dim`): an index smaller than x off `dim` included."""
    coords = list(np.indices(i.shape))
    coords[dim % x.ndim] = i % x.shape[dim]
    return x[tuple(coords)]


def _shift_ref(x, fill, periods=1, axis=-1):
    """out[..., i, ...] = x[..., i - periods, ...] where that exists along `axis`, else fill."""
    n = x.shape[axis]
    src = np.arange(n) - periods
    ok = (src >= 0) & (src < n)
    out = np.take(x, np.clip(src, 0, max(n - 1, 0)), axis=axis) if n else x.copy()
    shape = [1] * x.ndim
    shape[axis] = n
    return np.where(ok.reshape(shape), out, fill.astype(x.dtype))


def _shift_gen(shape):
    def gen(rng, dtype):
        return [make_input(rng, shape, dtype), make_input(rng, (), dtype)]
    return gen


COMPLEX = ("complex64", "complex128")
EXTENDED = ("uint16", "uint32", "uint64") + COMPLEX


def _bounds_gen(shape, *bounds):
    """x of the row's dtype, then each bound as an int64 array (the run-time bounds)."""
    def gen(rng, dtype):
        return [make_input(rng, shape, dtype)] + [np.array(b, np.int64) for b in bounds]
    return gen


def _ss_dynamic_ref(x, begin, end, strides, **masks):
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]


def _slice_dynamic_ref(x, begin, size):
    return x[tuple(slice(b, x.shape[d] if n == -1 else b + n) for d, (b, n) in enumerate(zip(begin, size)))]


def _ss_dynamic_grad_gen(dy_shape, like_shape, *bounds):
    def gen(rng, dtype):
        return [make_input(rng, dy_shape, dtype), make_input(rng, like_shape, dtype)] + \
            [np.array(b, np.int64) for b in bounds]
    return gen


def _ss_dynamic_grad_ref(dy, like, begin, *rest):
    out = np.zeros(like.shape, dy.dtype)
    if len(rest) == 2:
        key = tuple(slice(b, e, s) for b, e, s in zip(begin, *rest))
    else:
        key = tuple(slice(b, like.shape[d] if n == -1 else b + n)
                    for d, (b, n) in enumerate(zip(begin, rest[0])))
    out[key] = dy
    return out


CASES = [
    OpCase("strided_slice_dynamic", _ss_dynamic_ref, _bounds_gen((4, 6), (1, 5), (4, -7), (2, -2)),
           dtypes=ALL),
    OpCase("strided_slice_dynamic", lambda x, b, e, s, **m: x[1:, ::-1][..., None],
           _bounds_gen((3, 4), (1, 0, 0), (0, 0, 1), (1, -1, 1)),
           dict(begin_mask=0b010, end_mask=0b011, new_axis_mask=0b100), id="masks"),
    OpCase("strided_slice_dynamic", _ss_dynamic_ref, _bounds_gen((0, 3), (0, 1), (0, 3), (1, 1)), id="empty"),
    OpCase("strided_slice_dynamic", _ss_dynamic_ref, _bounds_gen((3, 4), (2, 0), (-4, 4), (-1, 3)),
           dtypes=EXTENDED, id="extended"),
    OpCase("strided_slice_dynamic", _ss_dynamic_ref, _bounds_gen((300, 200), (5, 0), (290, 200), (3, 1)),
           id="large"),
    OpCase("strided_slice_dynamic_grad", _ss_dynamic_grad_ref,
           _ss_dynamic_grad_gen((2, 3), (4, 6), (1, 5), (4, -7), (2, -2)), dtypes=FLOATS + COMPLEX),
    OpCase("slice_dynamic", _slice_dynamic_ref, _bounds_gen((4, 6), (1, 2), (2, -1)), dtypes=ALL),
    OpCase("slice_dynamic", _slice_dynamic_ref, _bounds_gen((3, 2), (0, 1), (-1, 1)), dtypes=EXTENDED,
           id="extended"),
    OpCase("slice_dynamic", _slice_dynamic_ref, _bounds_gen((300, 200), (5, 7), (200, 100)), id="large"),
    OpCase("slice_dynamic_grad", _ss_dynamic_grad_ref, _ss_dynamic_grad_gen((2, 4), (4, 6), (1, 2), (2, -1)),
           dtypes=FLOATS + COMPLEX),
    OpCase("shift", _shift_ref, _shift_gen((4, 5)), dict(periods=2, axis=1), dtypes=ALL),
    OpCase("shift", _shift_ref, _shift_gen((4, 5, 3)), dict(periods=-3, axis=0), id="back",
           dtypes=("float32", "float64", "uint16", "uint32", "uint64", "complex64", "complex128")),
    OpCase("shift", _shift_ref, _shift_gen((4, 6)), dict(periods=7, axis=-1), id="past_end"),
    OpCase("shift", _shift_ref, _shift_gen((4, 6)), dict(periods=0, axis=0), id="zero"),
    OpCase("shift", _shift_ref, _shift_gen((0, 4)), dict(periods=1, axis=1), id="empty"),
    OpCase("shift", _shift_ref, _shift_gen((200, 300)), dict(periods=-45, axis=1), id="large"),
    OpCase("slice", _key((slice(1, 3), slice(2, 5))), [(4, 5)], dict(begin=(1, 2), size=(2, -1)),
           dtypes=ALL),
    OpCase("slice", _key(()), [()], dict(begin=(), size=()), id="0d"),
    OpCase("slice", _key((slice(0, 0), slice(1, 2))), [(4, 5)], dict(begin=(0, 1), size=(0, 1)),
           id="empty"),
    OpCase("slice", _key((slice(10, 190), slice(1, 301))), [(200, 301)],
           dict(begin=(10, 1), size=(180, -1)), id="large"),
    OpCase("strided_slice", shapes=[(4, 5)], dtypes=ALL,
           **_ss((slice(0, 3, 2), slice(3, 0, -1)), (0, 3), (3, 0), (2, -1))),
    OpCase("strided_slice", shapes=[(4, 5, 6)], id="masks",
           **_ss((slice(None, 2), slice(1, None), slice(None, None, -2)), (7, 1, 9), (2, 7, 9),
                 (1, 1, -2), begin_mask=0b101, end_mask=0b110)),
    OpCase("strided_slice", shapes=[(4, 5, 6)], id="ellipsis_newaxis",
           **_ss((None, Ellipsis, 1, None), (0, 0, 1, 0), (1, 0, 2, 1), (1, 1, 1, 1),
                 ellipsis_mask=0b10, new_axis_mask=0b1001, shrink_axis_mask=0b100)),
    OpCase("strided_slice", shapes=[(4, 5)], id="shrink_neg",
           **_ss((-1, slice(-4, -1)), (-1, -4), (0, -1), (1, 1), shrink_axis_mask=0b1)),
    OpCase("strided_slice", shapes=[(4, 5)], id="clamp",
           **_ss((slice(-100, 100), slice(100, -100, -3)), (-100, 100), (100, -100), (1, -3))),
    OpCase("strided_slice", shapes=[(3,)], id="short_spec", **_ss((slice(1, 2),), (1,), (2,), (1,))),
    OpCase("strided_slice", shapes=[()], id="0d", **_ss((None,), (0,), (1,), (1,), new_axis_mask=1)),
    OpCase("strided_slice", shapes=[(0, 4)], id="empty", **_ss((slice(0, 1), slice(1, 3)), (0, 1), (1, 3), (1, 1))),
    OpCase("strided_slice", shapes=[(300, 300)], id="large",
           **_ss((slice(None, None, -1), slice(1, None, 2)), (0, 1), (0, 0), (-1, 2), begin_mask=1,
                 end_mask=3)),
    OpCase("strided_slice_grad", dtypes=FLOATS,
           **_ss_grad((slice(0, 3, 2), slice(3, 0, -1)), (2, 3), (4, 5), (0, 3), (3, 0), (2, -1))),
    OpCase("strided_slice_grad", id="ellipsis_newaxis",
           **_ss_grad((None, Ellipsis, 1, None), (1, 4, 5, 1), (4, 5, 6), (0, 0, 1, 0), (1, 0, 2, 1),
                      (1, 1, 1, 1), ellipsis_mask=0b10, new_axis_mask=0b1001, shrink_axis_mask=0b100)),
    OpCase("strided_slice_grad", id="empty",
           **_ss_grad((slice(0, 1), slice(1, 3)), (0, 2), (0, 4), (0, 1), (1, 3), (1, 1))),
    OpCase("strided_slice_grad", id="large",
           **_ss_grad((slice(None, None, -1), slice(1, None, 2)), (300, 150), (300, 300), (0, 1),
                      (0, 0), (-1, 2), begin_mask=1, end_mask=3)),
    OpCase("pad_grad", _pad_grad_ref, _pad_grad_gen((5, 4), (2, 3)), dict(paddings=(1, 2, 0, 1), value=1.5),
           dtypes=FLOATS),
    OpCase("pad_grad", _pad_grad_ref, _pad_grad_gen((6, 10), (3, 4)),
           dict(paddings=(2, 1, 3, 3), mode="reflect"), dtypes=FLOATS, id="reflect"),
    OpCase("pad_grad", _pad_grad_ref, _pad_grad_gen((6, 9), (3, 4)),
           dict(paddings=(2, 1, 0, 5), mode="edge"), id="edge"),
    OpCase("pad_grad", _pad_grad_ref, _pad_grad_gen((5, 3), (4, 5)), dict(paddings=(-1, 2, 1, -3)),
           id="crop"),
    OpCase("pad_grad", _pad_grad_ref, _pad_grad_gen((203, 207), (200, 200)),
           dict(paddings=(1, 2, 3, 4), mode="reflect"), id="large"),
    OpCase("pad", _pad_ref, [(2, 3)], dict(paddings=(1, 2, 0, 1), value=1.5), dtypes=ALL),
    OpCase("pad", _pad_ref, [(3, 4)], dict(paddings=(2, 1, 3, 3), mode="reflect"), dtypes=ALL, id="reflect"),
    OpCase("pad", _pad_ref, [(3, 4)], dict(paddings=(2, 1, 0, 5), mode="edge"), dtypes=ALL, id="edge"),
    OpCase("pad", _pad_ref, [(4, 5)], dict(paddings=(-1, 2, 1, -3)), id="crop"),
    OpCase("pad", _pad_ref, [()], dict(paddings=()), id="0d"),
    OpCase("pad", _pad_ref, [(0, 2)], dict(paddings=(1, 1, 0, 0), value=-2.0), id="empty"),
    OpCase("pad", _pad_ref, [(200, 200)], dict(paddings=(1, 2, 3, 4), mode="reflect"), id="large"),
    OpCase("gather", lambda p, i, axis=0: np.take(p, i, axis), _gen((4, 5), (2, 3), -5, 5),
           dict(axis=1), dtypes=ALL),
    OpCase("gather", lambda p, i, axis=0: np.take(p, i, axis), _gen((4, 5), (6,), -4, 4, "int32"),
           id="int32"),
    OpCase("gather", lambda p, i, axis=0: np.take(p, i, axis), _gen((4,), (), 0, 4), id="0d_index"),
    OpCase("gather", lambda p, i, axis=0: np.take(p, i, axis), _gen((4, 3), (0,), 0, 4), id="empty"),
    OpCase("gather", lambda p, i, axis=0: np.take(p, i, axis), _gen((300, 200), (500,), -300, 300),
           id="large"),
    OpCase("gather_nd", lambda p, i: p[_nd_key(i)], _gen((4, 5, 6), (3, 2), -4, 4), dtypes=ALL),
    OpCase("gather_nd", lambda p, i: p[_nd_key(i)], _gen((4, 5), (2, 2, 2), 0, 4, "int32"), id="full"),
    OpCase("gather_nd", lambda p, i: p[_nd_key(i)], _gen((4, 5), (0, 1), 0, 4), id="empty"),
    OpCase("gather_nd", lambda p, i: p[_nd_key(i)], _gen((300, 300), (400, 1), 0, 300), id="large"),
    OpCase("embedding", lambda ids, w, **kw: w[ids], _emb_gen((2, 3), 5, 4), dtypes=ALL),
    OpCase("embedding", lambda ids, w, **kw: w[ids], _emb_gen((4,), 5, 3), dict(padding_idx=0), id="pad"),
    OpCase("embedding", lambda ids, w, **kw: w[ids], _emb_gen((), 5, 3), id="0d"),
    OpCase("embedding", lambda ids, w, **kw: w[ids], _emb_gen((0, 2), 5, 3), id="empty"),
    OpCase("embedding", lambda ids, w, **kw: w[ids], _emb_gen((300,), 1000, 256), id="large"),
    OpCase("tensor_scatter_add", _tensor_scatter_add_ref, _gen((4, 5), (6, 1), -4, 4, extra=(6, 5)),
           dtypes=NUMERIC),
    OpCase("tensor_scatter_add", _tensor_scatter_add_ref, _gen((3, 4), (5, 2), 0, 3, "int32", extra=(5,)),
           id="elements"),
    OpCase("tensor_scatter_add", _tensor_scatter_add_ref, _gen((3, 4), (0, 1), 0, 3, extra=(0, 4)),
           id="empty"),
    OpCase("tensor_scatter_add", _tensor_scatter_add_ref,
           _gen((100, 400), (50, 1), 0, 100, extra=(50, 400)), id="large"),
    OpCase("scatter_add", _scatter_add_ref, _gen((5, 3), (4,), -5, 5, extra=(4, 3)), dtypes=NUMERIC),
    OpCase("scatter_add", _scatter_add_ref, _gen((5,), (2, 3), 0, 5, "int32", extra=(2, 3)), id="2d_index"),
    OpCase("scatter_add", _scatter_add_ref, _gen((5, 2), (0,), 0, 5, extra=(0, 2)), id="empty"),
    OpCase("scatter_add", _scatter_add_ref, _gen((100, 400), (60,), 0, 100, extra=(60, 400)), id="large"),
    OpCase("gather_elements", lambda x, i, dim=0: np.take_along_axis(x, i % x.shape[dim], dim),
           _along_gen((3, 4), (3, 6), 1), dict(dim=1), dtypes=ALL),
    OpCase("gather_elements", lambda x, i, dim=0: np.take_along_axis(x, i % x.shape[dim], dim),
           _along_gen((4, 3, 2), (2, 3, 2), 0), dict(dim=-3), id="dim0"),
    OpCase("gather_elements", lambda x, i, dim=0: np.take_along_axis(x, i % x.shape[dim], dim),
           _along_gen((3, 4), (3, 0), 1), dict(dim=1), id="empty"),
    OpCase("gather_elements", _gather_elements_ref, _along_gen((4, 5, 3), (2, 7, 1), 1), dict(dim=1),
           dtypes=ALL, id="smaller_index"),
    OpCase("gather_elements", lambda x, i, dim=0: np.take_along_axis(x, i % x.shape[dim], dim),
           _along_gen((300, 200), (300, 400), 1), dict(dim=1), id="large"),
    OpCase("tensor_scatter_elements", _scatter_elements_ref,
           _along_gen((4, 3), (3, 3), 0, updates=True, distinct=True), dict(axis=0), dtypes=ALL),
    OpCase("tensor_scatter_elements", _scatter_elements_ref, _along_gen((3, 5), (3, 7), 1, updates=True),
           dict(axis=-1, reduction="add"), dtypes=NUMERIC, id="add"),
    # An index smaller than the input off the axis (torch.scatter's rule) addresses its leading block.
    OpCase("tensor_scatter_elements", _scatter_elements_ref, _along_gen((4, 5), (2, 3), 0, updates=True),
           dict(axis=0, reduction="add"), dtypes=NUMERIC, id="smaller_index"),
    OpCase("tensor_scatter_elements", _scatter_elements_ref,
           lambda rng, dt: [make_input(rng, (3, 4, 2), dt), np.array([[[1], [0], [2]], [[0], [2], [1]]]),
                            make_input(rng, (2, 3, 1), dt)],
           dict(axis=1), dtypes=ALL, id="smaller_index_write"),
    OpCase("tensor_scatter_elements", _scatter_elements_ref, _along_gen((3, 5), (3, 0), 1, updates=True),
           dict(axis=1, reduction="add"), id="empty"),
    OpCase("tensor_scatter_elements", _scatter_elements_ref,
           _along_gen((200, 300), (200, 100), 1, updates=True), dict(axis=1, reduction="add"), id="large"),
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [rng.integers(-1, 6, size=(3, 4)).astype(dt)],
           dict(depth=5), dtypes=("int32", "int64")),
    # Indices of every integer type (MindSpore's OneHot); -1 wraps to the type's maximum unsigned.
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [rng.integers(0, 7, size=(3, 4)).astype(dt)],
           dict(depth=5), dtypes=("int8", "uint8", "int16"), id="small_ints"),
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [rng.integers(0, 7, size=(3, 4)).astype(dt)],
           dict(depth=5, axis=1, dtype="complex64", on_value=2.0, off_value=0.5),
           dtypes=("uint16", "uint32", "uint64"), id="unsigned_complex_out"),
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [rng.integers(0, 4, size=(3,)).astype(np.int64)],
           dict(depth=4, on_value=2.0, off_value=-1.0, axis=0, dtype="int32"), id="axis0"),
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [np.array(2, np.int64)], dict(depth=3), id="0d"),
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [np.zeros((2, 0), np.int64)], dict(depth=3),
           id="empty"),
    OpCase("one_hot", _one_hot_ref, lambda rng, dt: [rng.integers(0, 100, size=(1000,)).astype(np.int64)],
           dict(depth=100, axis=0, dtype="float64"), id="large"),
]
