"""Table rows for the shape ops: reshape-like views, transpose, broadcast_to/_like, tile, concat,
stack, split and cast."""
import numpy as np

from op_cases import OpCase

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")
LARGE = (200, 300)  # 60000 elements: above the parallel grain


def _split_ref(x, axis=0, output_num=1, size_splits=None):
    if size_splits is None:
        return tuple(np.split(x, output_num, axis))
    sizes = list(size_splits)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis))


CASES = [
    OpCase("reshape", lambda x, shape: x.reshape(shape), [(3, 4)], dict(shape=(2, -1, 2)), dtypes=ALL),
    OpCase("reshape", lambda x, shape: x.reshape(shape), [()], dict(shape=(1, 1)), id="0d"),
    OpCase("reshape", lambda x, shape: x.reshape(shape), [(0, 3)], dict(shape=(3, 0)), id="empty"),
    OpCase("reshape", lambda x, shape: x.reshape(shape), [LARGE], dict(shape=(-1,)), id="large"),
    OpCase("flatten", lambda x: x.reshape(x.shape[0], -1), [(2, 3, 4)], dtypes=ALL),
    OpCase("flatten", lambda x: x.reshape(x.shape[0], -1), [(5,)], id="1d"),
    OpCase("flatten", lambda x: x.reshape(x.shape[0], 0), [(2, 0, 3)], id="empty"),
    OpCase("expand_dims", lambda x, axis: np.expand_dims(x, axis), [(3, 4)], dict(axis=1), dtypes=ALL),
    OpCase("expand_dims", lambda x, axis: np.expand_dims(x, axis), [(3, 4)], dict(axis=-1), id="neg"),
    OpCase("expand_dims", lambda x, axis: np.expand_dims(x, axis), [()], dict(axis=0), id="0d"),
    OpCase("squeeze", lambda x, axis: np.squeeze(x, axis or None), [(1, 3, 1, 2)], dict(axis=()),
           dtypes=ALL),
    OpCase("squeeze", lambda x, axis: np.squeeze(x, axis), [(1, 3, 1)], dict(axis=(0, -1)), id="axes"),
    OpCase("squeeze", lambda x, axis: np.squeeze(x), [()], dict(axis=()), id="0d"),
    OpCase("squeeze", lambda x, axis: np.squeeze(x, axis), [(0, 1)], dict(axis=1), id="empty"),
    OpCase("identity", lambda x: x, [(3, 4)], dtypes=ALL),
    OpCase("identity", lambda x: x, [()], id="0d"),
    OpCase("transpose", lambda x, perm: np.transpose(x, perm), [(2, 3, 4)], dict(perm=(2, 0, 1)),
           dtypes=ALL),
    OpCase("transpose", lambda x, perm: np.transpose(x), [(2, 3, 4)], dict(perm=()), id="reverse"),
    OpCase("transpose", lambda x, perm: np.transpose(x, perm), [(2, 3)], dict(perm=(-1, 0)), id="neg"),
    OpCase("transpose", lambda x, perm: x, [()], dict(perm=()), id="0d"),
    OpCase("transpose", lambda x, perm: np.transpose(x, perm), [(0, 3)], dict(perm=(1, 0)), id="empty"),
    OpCase("transpose", lambda x, perm: np.transpose(x, perm), [LARGE], dict(perm=(1, 0)), id="large"),
    OpCase("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), [(3, 1)], dict(shape=(2, 3, 4)),
           dtypes=ALL),
    OpCase("broadcast_to", lambda x, shape: np.broadcast_to(x, (3, 4)), [(3, 1)], dict(shape=(-1, 4)),
           id="keep"),
    OpCase("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), [()], dict(shape=(2, 3)), id="0d"),
    OpCase("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), [(1, 3)], dict(shape=(0, 3)),
           id="empty"),
    OpCase("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), [(1, 300)],
           dict(shape=(200, 300)), id="large"),
    OpCase("broadcast_like", lambda x, like: np.broadcast_to(x, like.shape), [(3, 1), (2, 3, 4)],
           dtypes=ALL),
    OpCase("broadcast_like", lambda x, like: np.broadcast_to(x, like.shape), [(), (2, 3)], id="0d"),
    OpCase("broadcast_like", lambda x, like: np.broadcast_to(x, like.shape), [(1, 3), (0, 3)],
           id="empty"),
    OpCase("broadcast_like", lambda x, like: np.broadcast_to(x, like.shape), [(1, 300), LARGE],
           id="large"),
    OpCase("tile", lambda x, multiples: np.tile(x, multiples), [(2, 3)], dict(multiples=(2, 1, 2)),
           dtypes=ALL),
    OpCase("tile", lambda x, multiples: np.tile(x, multiples), [(2, 3, 2)], dict(multiples=(3,)),
           id="short"),
    OpCase("tile", lambda x, multiples: np.tile(x, multiples), [()], dict(multiples=(2, 2)), id="0d"),
    OpCase("tile", lambda x, multiples: np.tile(x, multiples), [(2, 3)], dict(multiples=(0, 2)),
           id="empty"),
    OpCase("tile", lambda x, multiples: np.tile(x, multiples), [(100, 150)], dict(multiples=(2, 2)),
           id="large"),
    OpCase("concat", lambda *xs, axis: np.concatenate(xs, axis), [(2, 3), (4, 3), (1, 3)],
           dict(axis=0), dtypes=ALL),
    OpCase("concat", lambda *xs, axis: np.concatenate(xs, axis), [(2, 1, 2), (2, 3, 2)],
           dict(axis=-2), id="mid"),
    OpCase("concat", lambda *xs, axis: np.concatenate(xs, axis), [(3,)], dict(axis=0), id="single"),
    OpCase("concat", lambda *xs, axis: np.concatenate(xs, axis), [(0, 3), (2, 3)], dict(axis=0),
           id="empty"),
    OpCase("concat", lambda *xs, axis: np.concatenate(xs, axis), [(200, 100), (200, 200)],
           dict(axis=1), id="large"),
    OpCase("stack", lambda *xs, axis: np.stack(xs, axis), [(2, 3), (2, 3), (2, 3)], dict(axis=1),
           dtypes=ALL),
    OpCase("stack", lambda *xs, axis: np.stack(xs, axis), [(2, 3), (2, 3)], dict(axis=-1), id="last"),
    OpCase("stack", lambda *xs, axis: np.stack(xs, axis), [(), ()], dict(axis=0), id="0d"),
    OpCase("stack", lambda *xs, axis: np.stack(xs, axis), [(0, 2), (0, 2)], dict(axis=0), id="empty"),
    OpCase("stack", lambda *xs, axis: np.stack(xs, axis), [LARGE, LARGE], dict(axis=1), id="large"),
    OpCase("split", _split_ref, [(6, 4)], dict(axis=0, output_num=3), dtypes=ALL),
    OpCase("split", _split_ref, [(3, 6)], dict(axis=1, size_splits=(1, -1, 2)), id="sizes"),
    OpCase("split", _split_ref, [(2, 0)], dict(axis=0, output_num=2), id="empty"),
    OpCase("split", _split_ref, [(100, 600)], dict(axis=-1, output_num=2), id="large"),
    OpCase("cast", lambda x, dtype: x.astype(dtype), [(3, 4)], dict(dtype="float32"), dtypes=ALL),
    OpCase("cast", lambda x, dtype: x.astype(dtype), [(3, 4)], dict(dtype="int32"),
           dtypes=("float32", "float64", "int8", "bool"), id="to_int"),
    OpCase("cast", lambda x, dtype: x.astype(dtype), [(3, 4)], dict(dtype="bool"), dtypes=ALL, id="to_bool"),
    OpCase("cast", lambda x, dtype: x.astype(dtype), [()], dict(dtype="float16"), id="0d"),
    OpCase("cast", lambda x, dtype: x.astype(dtype), [(0, 2)], dict(dtype="int64"), id="empty"),
    OpCase("cast", lambda x, dtype: x.astype(dtype), [LARGE], dict(dtype="float64"), id="large"),
]
