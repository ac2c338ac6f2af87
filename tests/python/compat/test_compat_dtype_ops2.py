"""The binary ops beyond add/sub/mul/div/comparisons and the shape and indexing ops on MindSpore's
newer dtypes (uint16/32/64, complex64/128), in both modes, against numpy: one table of
(op, numpy reference, dtypes) rows run for each dtype. Ordered ops (maximum, clip, sort, unique)
take the unsigned types only: complex values have no order, and those ops refuse them with a
TypeError naming the dtype."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(11)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
UNSIGNED = ("uint16", "uint32", "uint64")
COMPLEX = ("complex64", "complex128")
EXT = UNSIGNED + COMPLEX


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _arr(dt, shape=(3, 4), lo=0, hi=None):
    if np.dtype(dt).kind == "c":
        return (R.normal(size=shape) + 1j * R.normal(size=shape)).astype(dt)
    hi = hi if hi is not None else {"uint16": 60000, "uint32": 2 ** 31, "uint64": 2 ** 62}[dt]
    return R.integers(lo, hi, size=shape).astype(dt)


MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
IDX = np.array([2, 0, 2])
IDX_ND = np.array([[0, 1], [2, 3], [1, 1]])
IDX_EL = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
UPD_ROWS = np.array([[1], [0], [1]])


def _tensor_scatter_add_ref(x, u):
    out = x.copy()
    np.add.at(out, (IDX_ND[:, 0], IDX_ND[:, 1]), u)
    return out


def _scatter_elements_ref(x, u):
    out = x.copy()
    for j in range(IDX_EL.shape[0]):
        for k in range(IDX_EL.shape[1]):
            out[IDX_EL[j, k], k] = u[j, k]
    return out


ROWS = {}  # name: (function of mycel tensors, numpy reference, dtypes, how its inputs are made)


def row(ref, dtypes, kind=""):
    """Registers the decorated function (a def: graph mode parses its source) as a table row."""
    def register(fn):
        ROWS[fn.__name__] = (fn, ref, dtypes, kind)
        return fn
    return register


@row(np.maximum, UNSIGNED, "pair")
def maximum(x, y):
    return ops.maximum(x, y)


@row(np.minimum, UNSIGNED, "pair")
def minimum(x, y):
    return ops.minimum(x, y)


@row(np.floor_divide, UNSIGNED, "pair0")
def floor_div(x, y):
    return ops.floor_div(x, y)


@row(np.remainder, UNSIGNED, "pair0")
def mod(x, y):
    return ops.mod(x, y)


@row(np.power, EXT, "pow")
def pow_(x, y):
    return ops.pow(x, y)


@row(lambda x, y: np.clip(x, y, y + y), UNSIGNED, "pair_small")
def clip(x, y):
    return ops.clip_by_value(x, y, y + y)


@row(lambda x: np.take(x, IDX, 1), EXT)
def gather(x):
    return ops.gather(x, Tensor(IDX), 1)


@row(lambda x: x[IDX_ND[:, 0], IDX_ND[:, 1]], EXT)
def gather_nd(x):
    return ops.gather_nd(x, Tensor(IDX_ND))


@row(lambda x: np.take_along_axis(x, IDX_EL, 0), EXT)
def gather_elements(x):
    return ops.gather_elements(x, 0, Tensor(IDX_EL))


@row(_tensor_scatter_add_ref, EXT, "updates3")
def tensor_scatter_add(x, u):
    return ops.tensor_scatter_add(x, Tensor(IDX_ND), u)


@row(_scatter_elements_ref, EXT, "updates24")
def tensor_scatter_elements(x, u):
    return ops.tensor_scatter_elements(x, Tensor(IDX_EL), u, 0)


@row(lambda x, y: np.where(MASK, x, y), EXT, "pair")
def select(x, y):
    return ops.select(Tensor(MASK), x, y)


@row(lambda x: np.where(MASK, np.zeros_like(x), x), EXT)
def masked_fill(x):
    return ops.masked_fill(x, Tensor(MASK), ops.zeros((), x.dtype))


@row(lambda x: np.tile(x, (2, 1, 3)), EXT)
def tile(x):
    return ops.tile(x, (2, 1, 3))


@row(lambda x: np.tril(x, 1), EXT)
def tril(x):
    return ops.tril(x, 1)


@row(lambda x: np.triu(x, -1), EXT)
def triu(x):
    return ops.triu(x, -1)


@row(lambda x, y: np.concatenate((x, y), 1), EXT, "pair")
def concat(x, y):
    return ops.concat((x, y), 1)


@row(lambda x, y: np.stack((x, y), 2), EXT, "pair")
def stack(x, y):
    return ops.stack((x, y), 2)


@row(lambda x: x.T, EXT)
def transpose(x):
    return ops.transpose(x, (1, 0))


@row(lambda x: x.reshape(2, 6), EXT)
def reshape(x):
    return ops.reshape(x, (2, 6))


@row(lambda x: x[1:3, 1:3], EXT)
def slice_(x):
    return ops.slice(x, (1, 1), (2, 2))


@row(lambda x: x[::2, 1::2], EXT)
def strided_slice(x):
    return x[::2, 1::2]


@row(lambda x: np.broadcast_to(x, (2, 3, 4)), EXT)
def broadcast_to(x):
    return ops.broadcast_to(x, (2, 3, 4))


@row(lambda x: np.sort(x, 1), UNSIGNED)
def sort(x):
    return ops.sort(x, 1)[0]


@row(lambda x: np.argsort(x, 0, kind="stable"), UNSIGNED)
def argsort(x):
    return ops.argsort(x, 0)


@row(lambda x: np.sort(x, 1)[:, ::-1][:, :2], UNSIGNED)
def topk(x):
    return ops.topk(x, 2)[0]


def _inputs(dt, kind):
    x = _arr(dt)
    if kind == "":
        return [x]
    if kind == "pair":
        return [x, _arr(dt)]
    if kind == "pair0":  # divisors with zeros (x // 0 and x % 0 give 0, as numpy's)
        y = _arr(dt, hi=50)
        y[0, 0] = 0
        return [x, y]
    if kind == "pair_small":
        return [x, _arr(dt, hi=2 ** 15)]
    if kind == "pow":
        if np.dtype(dt).kind == "c":
            y = _arr(dt)
            y[0, 0] = 0
            return [x, y]
        return [x, _arr(dt, hi=9)]  # wraps modulo 2^bits, as numpy's
    if kind == "updates3":
        return [x, _arr(dt, (3,))]
    if kind == "updates24":
        return [x, _arr(dt, (2, 4))]
    raise AssertionError(kind)


def _params():
    for name, (_, _, dts, _) in ROWS.items():
        for dt in dts:
            yield pytest.param(name, dt, id=f"{name}-{dt}")


@MODES
@pytest.mark.parametrize("name,dt", list(_params()))
def test_op_on_new_dtype_matches_numpy(mode, name, dt):
    fn, ref, _, kind = ROWS[name]
    arrays = _inputs(dt, kind)
    ms.set_context(mode=mode)

    class Net(nn.Cell):
        def construct(self, *xs):
            return fn(*xs)
    got = Net()(*[Tensor(a) for a in arrays]).asnumpy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        want = ref(*arrays)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if np.dtype(dt).kind == "c" and name == "pow_":
        np.testing.assert_allclose(got, want, rtol=1e-4 if dt == "complex64" else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)



def _unique_first_ref(x):
    """MindSpore's Unique (CPU): the distinct values in order of first appearance, each element's
    index into them, from np.unique's first indices."""
    flat = np.asarray(x).ravel()
    _, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return flat[np.sort(first)], rank[inv.ravel()].reshape(np.shape(x))

@pytest.mark.parametrize("dt", UNSIGNED)
def test_unique_of_unsigned(dt):
    x = _arr(dt, (20,), hi=6)
    v, i = ops.unique(Tensor(x))
    wv, wi = _unique_first_ref(x)
    np.testing.assert_array_equal(v.asnumpy(), wv)
    np.testing.assert_array_equal(i.asnumpy(), wi)


@pytest.mark.parametrize("op", [lambda x: ops.maximum(x, x), lambda x: ops.sort(x), lambda x: ops.clip_by_value(x, x, x),
                                lambda x: ops.unique(x), lambda x: ops.floor_div(x, x)],
                         ids=["maximum", "sort", "clip", "unique", "floor_div"])
def test_ordered_ops_refuse_complex(op):
    with pytest.raises(TypeError, match="complex64"):
        op(Tensor(_arr("complex64")))


def test_gather_gradient_of_complex_params():
    """gather's rule (a scatter-add, now on complex values too) gives the complex gradient:
    d/dz of sum(|gather(z)|^2) is 2 z at each gathered position (PyTorch's convention)."""
    z = _arr("complex128")
    g = ms.grad(lambda t: ops.sum(ops.real(ops.gather(t, Tensor(IDX), 1) * ops.conj(ops.gather(t, Tensor(IDX), 1)))))(
        Tensor(z)).asnumpy()
    want = np.zeros_like(z)
    np.add.at(want, (slice(None), IDX), 2 * z[:, IDX])
    np.testing.assert_allclose(g, want, rtol=1e-12)
