"""The Python-level ops of mycel.ops (array_info.py, full.py, composite.py, clip.py, effects.py)
check that their tensor arguments are Tensors and say which op, which argument and what was
given, eagerly and in graph mode, where the check folds away for real tensors."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops
from mycel.ops import operations as P

X = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
MASK = Tensor(np.array([[True, False, True]] * 2))

# (op name, argument name, call with the bad value in that argument's place, what it expects)
CASES = [(op, arg, call, "a Tensor") for op, arg, call in [
    ("shape", "input_x", lambda v: ops.shape(v)),
    ("rank", "input_x", lambda v: ops.rank(v)),
    ("size", "input_x", lambda v: ops.size(v)),
    ("dtype", "input_x", lambda v: ops.dtype(v)),
    ("shape", "input_x", lambda v: P.Shape()(v)),
    ("rank", "input_x", lambda v: P.Rank()(v)),
    ("size", "input_x", lambda v: P.Size()(v)),
    ("dtype", "input_x", lambda v: P.DType()(v)),
    ("full_like", "input", lambda v: ops.full_like(v, 2)),
    ("chunk", "input", lambda v: ops.chunk(v, 2)),
    ("masked_fill", "input_x", lambda v: ops.masked_fill(v, MASK, 1.0)),
    ("masked_fill", "mask", lambda v: ops.masked_fill(X, v, 1.0)),
]] + [
    ("assign", "variable", lambda v: ops.assign(v, X), "a Parameter or Tensor"),
    ("assign", "variable", lambda v: P.Assign()(v, X), "a Parameter or Tensor"),
    ("clip_by_global_norm", "x", lambda v: ops.clip_by_global_norm(v),
     "a non-empty tuple of Tensors"),
]
BAD = [(1.5, "float"), (3, "int"), (None, "NoneType"), ([1], "list"), (np.ones(3), "ndarray")]


@pytest.mark.parametrize("value,type_name", BAD)
@pytest.mark.parametrize("op,arg,call,expected", CASES)
def test_non_tensor_input_is_a_type_error_naming_op_and_argument(op, arg, call, expected, value,
                                                                 type_name):
    if type_name == "list":
        type_name = r"list of \(int\)"  # a sequence: the types of its items too
    msg = rf"^\[{op}\] input '{arg}' must be {expected}, got {type_name}$"
    with pytest.raises(TypeError, match=msg):
        call(value)


def test_checks_fold_away_in_graph_mode():
    def f(x, m):
        pieces = ops.chunk(x, 2, 1)
        filled = ops.masked_fill(x, m, -1.0)
        like = ops.full_like(x, 3)
        return pieces[0], filled, like, ops.rank(x) + ops.size(x)
    eager = f(X, MASK)
    compiled = mycel.jit(f)(X, MASK)
    for a, b in zip(eager[:3], compiled[:3]):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert int(eager[3]) == int(compiled[3]) == 8
    want = np.where(MASK.asnumpy(), -1.0, X.asnumpy())
    np.testing.assert_array_equal(compiled[1].asnumpy(), want)


def test_graph_mode_raises_the_same_error_at_compile_time():
    def g(x):
        return ops.chunk(3, 2), x
    with pytest.raises(TypeError, match=r"\[chunk\] input 'input' must be a Tensor, got int"):
        mycel.jit(g)(X)
