"""Shape, index and creation ops reject bad shapes, dtypes and attributes with the right Python
exception and a message that names the op, the argument and the values."""
import numpy as np
import pytest

import mycel
from mycel import ops


def t(shape, dtype=np.float32):
    return mycel.Tensor(np.zeros(shape, dtype))


def idx(values, dtype=np.int64):
    return mycel.Tensor(np.asarray(values, dtype))


# ---- reshape-like ----

def test_reshape_incompatible_size_names_both_shapes():
    with pytest.raises(ValueError, match=r"\[reshape\].*\(2, 3\).*\(4, 2\)"):
        ops.reshape(t((2, 3)), (4, 2))


def test_reshape_bad_minus_one():
    with pytest.raises(ValueError, match=r"\[reshape\].*more than one -1"):
        ops.reshape(t((2, 3)), (-1, -1))
    with pytest.raises(ValueError, match=r"\[reshape\].*\(2, 3\).*\(-1, 4\)"):
        ops.reshape(t((2, 3)), (-1, 4))
    with pytest.raises(ValueError, match=r"\[reshape\].*negative"):
        ops.reshape(t((2, 3)), (-2, -3))


def test_reshape_attribute_kind():
    with pytest.raises(TypeError, match=r"\[reshape\].*shape"):
        ops.reshape(t((2, 3)), "six")


def test_flatten_0d():
    with pytest.raises(ValueError, match=r"\[flatten\]"):
        ops.flatten(t(()))


def test_expand_dims_axis_out_of_range():
    with pytest.raises(ValueError, match=r"\[expand_dims\].*axis 3"):
        ops.expand_dims(t((2, 3)), 3)


def test_squeeze_non_one_dim():
    with pytest.raises(ValueError, match=r"\[squeeze\].*axis 1.*\(1, 3\)"):
        ops.squeeze(t((1, 3)), 1)
    with pytest.raises(ValueError, match=r"\[squeeze\]"):
        ops.squeeze(t((1, 3)), 2)


# ---- transpose, broadcast_to, tile ----

@pytest.mark.parametrize("perm", [(0, 0, 1), (0, 1), (0, 1, 3), (0, 1, 2, 3)])
def test_transpose_bad_perm(perm):
    with pytest.raises(ValueError, match=r"\[transpose\].*perm"):
        ops.transpose(t((2, 3, 4)), perm)


def test_broadcast_to_incompatible():
    with pytest.raises(ValueError, match=r"\[broadcast_to\].*\(2, 3\).*\(4, 3\)"):
        ops.broadcast_to(t((2, 3)), (4, 3))
    with pytest.raises(ValueError, match=r"\[broadcast_to\].*fewer"):
        ops.broadcast_to(t((2, 3)), (3,))
    with pytest.raises(ValueError, match=r"\[broadcast_to\].*-1"):
        ops.broadcast_to(t((3,)), (-1, 3))


def test_tile_negative_multiple():
    with pytest.raises(ValueError, match=r"\[tile\].*negative"):
        ops.tile(t((2,)), (-1,))


# ---- concat, stack, split ----

def test_concat_dtype_mismatch():
    with pytest.raises(TypeError, match=r"\[concat\].*float32.*int32"):
        ops.concat((t((2, 3)), t((2, 3), np.int32)))


def test_concat_shape_mismatch():
    with pytest.raises(ValueError, match=r"\[concat\].*tensors\[1\].*\(2, 4\).*\(2, 3\)"):
        ops.concat((t((2, 3)), t((2, 4))), axis=0)
    with pytest.raises(ValueError, match=r"\[concat\]"):
        ops.concat((t((2, 3)), t((2, 3, 1))), axis=0)


def test_concat_bad_inputs():
    with pytest.raises(ValueError, match=r"\[concat\].*at least one"):
        ops.concat(())
    with pytest.raises(ValueError, match=r"\[concat\].*0-d"):
        ops.concat((t(()), t(())))
    with pytest.raises(ValueError, match=r"\[concat\].*axis 2"):
        ops.concat((t((2, 3)), t((2, 3))), axis=2)
    with pytest.raises(TypeError, match=r"\[concat\].*tuple or list"):
        ops.concat(t((2, 3)))


def test_stack_shape_mismatch():
    with pytest.raises(ValueError, match=r"\[stack\].*\(2, 3\).*\(3, 2\)"):
        ops.stack((t((2, 3)), t((3, 2))))
    with pytest.raises(TypeError, match=r"\[stack\].*dtype"):
        ops.stack((t((2,)), t((2,), np.float64)))


def test_split_not_divisible():
    with pytest.raises(ValueError, match=r"\[split\].*\(5, 2\).*not divisible by output_num 2"):
        ops.split(t((5, 2)), axis=0, output_num=2)


def test_split_bad_sizes():
    with pytest.raises(ValueError, match=r"\[split\].*sum"):
        ops.split(t((5, 2)), size_splits=(2, 2))
    with pytest.raises(ValueError, match=r"\[split\].*output_num must be positive"):
        ops.split(t((4,)), output_num=0)
    with pytest.raises(ValueError, match=r"\[split\].*disagrees"):
        ops.split(t((4,)), output_num=3, size_splits=(1, 3))


# ---- slicing and padding ----

def test_slice_out_of_range():
    with pytest.raises(ValueError, match=r"\[slice\].*\(3, 4\)"):
        ops.slice(t((3, 4)), (2, 0), (2, 4))
    with pytest.raises(ValueError, match=r"\[slice\].*one entry per dimension"):
        ops.slice(t((3, 4)), (0,), (1,))


def test_strided_slice_errors():
    with pytest.raises(ValueError, match=r"\[strided_slice\].*strides\[0\].*non-zero"):
        ops.strided_slice(t((3,)), (0,), (3,), (0,))
    with pytest.raises(IndexError, match=r"\[strided_slice\].*index 3.*size 3"):
        ops.strided_slice(t((3,)), (3,), (4,), (1,), shrink_axis_mask=1)
    with pytest.raises(IndexError, match=r"\[strided_slice\].*too many indices"):
        ops.strided_slice(t((3,)), (0, 0), (1, 1), (1, 1))
    with pytest.raises(ValueError, match=r"\[strided_slice\].*same length"):
        ops.strided_slice(t((3,)), (0,), (1, 2), (1,))
    with pytest.raises(ValueError, match=r"\[strided_slice\].*ellipsis_mask"):
        ops.strided_slice(t((3, 3)), (0, 0), (1, 1), (1, 1), ellipsis_mask=3)


def test_pad_negative_beyond_size():
    with pytest.raises(ValueError, match=r"\[pad\].*\(-3, 0\).*dimension 0"):
        ops.pad(t((2, 3)), (-3, 0, 0, 0))
    with pytest.raises(ValueError, match=r"\[pad\].*\(-2, -2\)"):
        ops.pad(t((3, 3)), (0, 0, -2, -2))


def test_pad_bad_arguments():
    with pytest.raises(ValueError, match=r"\[pad\].*2 entries"):
        ops.pad(t((2, 3)), (1, 1))
    with pytest.raises(ValueError, match=r"\[pad\].*mode"):
        ops.pad(t((2, 3)), (1, 1, 1, 1), mode="wrap")
    with pytest.raises(ValueError, match=r"\[pad\].*reflect.*smaller than its size 2"):
        ops.pad(t((2, 3)), (2, 0, 0, 0), mode="reflect")


# ---- gathers and scatters: indices are checked before any memory is touched ----

@pytest.mark.parametrize("bad", [5, -6, 10**9, -10**9, 2**62])
def test_gather_index_out_of_range(bad):
    params = mycel.Tensor(np.arange(10.0).reshape(5, 2))
    with pytest.raises(IndexError, match=r"\[gather\].*index .* out of range for axis 0 with size 5"):
        ops.gather(params, idx([0, bad, 1]), 0)
    with pytest.raises(IndexError, match=r"\[gather\]"):
        ops.gather(params, idx([bad], np.int64), 0)


def test_gather_int32_out_of_range_other_axis():
    with pytest.raises(IndexError, match=r"\[gather\].*axis 1 with size 2"):
        ops.gather(t((5, 2)), idx([[0], [2**31 - 1]], np.int32), 1)


def test_gather_index_dtype():
    with pytest.raises(TypeError, match=r"\[gather\].*indices.*int32 or int64.*float32"):
        ops.gather(t((5, 2)), t((2,)), 0)
    with pytest.raises(ValueError, match=r"\[gather\].*axis"):
        ops.gather(t((5, 2)), idx([0]), 2)


def test_gather_nd_errors():
    with pytest.raises(IndexError, match=r"\[gather_nd\]"):
        ops.gather_nd(t((3, 4)), idx([[0, 4]]))
    with pytest.raises(ValueError, match=r"\[gather_nd\].*index depth"):
        ops.gather_nd(t((3, 4)), idx([[0, 0, 0]]))


def test_scatter_errors():
    with pytest.raises(IndexError, match=r"\[tensor_scatter_add\]"):
        ops.tensor_scatter_add(t((3, 4)), idx([[7]]), t((1, 4)))
    with pytest.raises(ValueError, match=r"\[tensor_scatter_add\].*updates.*\(1, 4\)"):
        ops.tensor_scatter_add(t((3, 4)), idx([[1]]), t((2, 4)))
    with pytest.raises(TypeError, match=r"\[tensor_scatter_add\].*dtype"):
        ops.tensor_scatter_add(t((3, 4)), idx([[1]]), t((1, 4), np.float64))
    with pytest.raises(IndexError, match=r"\[scatter_add\].*-4"):
        ops.scatter_add(t((3, 4)), idx([-4]), t((1, 4)))
    with pytest.raises(ValueError, match=r"\[scatter_add\].*updates"):
        ops.scatter_add(t((3, 4)), idx([0, 1]), t((2, 3)))


def test_scatter_out_of_range_leaves_input_untouched():
    x = mycel.Tensor(np.ones((3, 2), np.float32))
    with pytest.raises(IndexError):
        ops.scatter_add(x, idx([0, 1, 99]), mycel.Tensor(np.ones((3, 2), np.float32)))
    np.testing.assert_array_equal(x.asnumpy(), np.ones((3, 2)))


def test_embedding_errors():
    w = t((5, 3))
    with pytest.raises(IndexError, match=r"\[embedding\].*index 5"):
        ops.embedding(idx([0, 5]), w)
    with pytest.raises(IndexError, match=r"\[embedding\].*index -1"):
        ops.embedding(idx([-1]), w)
    with pytest.raises(ValueError, match=r"\[embedding\].*weight.*2-d"):
        ops.embedding(idx([0]), t((5,)))
    with pytest.raises(ValueError, match=r"\[embedding\].*padding_idx 5"):
        ops.embedding(idx([0]), w, padding_idx=5)


def test_one_hot_errors():
    with pytest.raises(ValueError, match=r"\[one_hot\].*depth must be >= 0, got -1"):
        ops.one_hot(idx([0, 1]), -1)
    with pytest.raises(TypeError, match=r"\[one_hot\].*unsupported dtype float32"):
        ops.one_hot(t((2,)), 3)
    with pytest.raises(ValueError, match=r"\[one_hot\].*axis"):
        ops.one_hot(idx([0, 1]), 3, axis=3)


# ---- creation and resize ----

def test_creation_errors():
    with pytest.raises(ValueError, match=r"\[zeros\].*negative"):
        ops.zeros((2, -1))
    with pytest.raises(TypeError, match=r"\[ones\].*missing required attribute 'shape'"):
        ops.ones()
    with pytest.raises(ValueError, match=r"\[arange\].*delta must be non-zero"):
        ops.arange(0, 5, 0)
    with pytest.raises(ValueError, match=r"\[arange\].*finite"):
        ops.arange(0, float("inf"))
    with pytest.raises(ValueError, match=r"\[eye\].*>= 0"):
        ops.eye(-1)
    with pytest.raises(TypeError, match=r"\[fill\].*value"):
        ops.fill(mycel.float32, (2,), "x")


def test_resize_errors():
    with pytest.raises(ValueError, match=r"\[resize_bilinear\].*rank 4"):
        ops.resize_bilinear(t((3, 4, 5)), (2, 2))
    with pytest.raises(ValueError, match=r"\[resize_nearest_neighbor\].*size"):
        ops.resize_nearest_neighbor(t((1, 1, 4, 4)), (0, 2))
    with pytest.raises(ValueError, match=r"\[resize_bilinear\].*both"):
        ops.resize_bilinear(t((1, 1, 4, 4)), (2, 2), align_corners=True, half_pixel_centers=True)
    with pytest.raises(TypeError, match=r"\[resize_bilinear\].*int64"):
        ops.resize_bilinear(t((1, 1, 4, 4), np.int64), (2, 2))
    with pytest.raises(ValueError, match=r"\[resize_bilinear\].*empty image"):
        ops.resize_bilinear(t((1, 1, 0, 4)), (2, 2))


# ---- sizes that would overflow int64 never reach the allocator ----

def test_huge_sizes_are_rejected():
    big = 2**62
    with pytest.raises(ValueError, match=r"\[slice\]"):
        ops.slice(t((3, 4)), (1, 0), (big, 4))
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        ops.reshape(t((2, 3)), (big, big, 0))
    with pytest.raises(ValueError, match=r"\[tile\]"):
        ops.tile(t((2, 3)), (big, big))
    with pytest.raises(ValueError, match=r"\[pad\]"):
        ops.pad(t((2,)), (big, big))
    with pytest.raises(ValueError, match=r"\[broadcast_to\]"):
        ops.broadcast_to(t((1,)), (big, big))
    with pytest.raises(ValueError, match=r"\[zeros\]"):
        ops.zeros((big, 4))
    with pytest.raises(ValueError, match=r"\[eye\]"):
        ops.eye(big, big)
    with pytest.raises(ValueError, match=r"\[one_hot\]"):
        ops.one_hot(idx([0, 1]), big)
    with pytest.raises(ValueError, match=r"\[split\]"):
        ops.split(t((4,)), size_splits=(3, big))


def test_triangle_errors():
    for op in (ops.tril, ops.triu):
        with pytest.raises(ValueError, match=r"\[tri[lu]\] input 'x' must have rank >= 2, got shape \(3,\)"):
            op(t((3,)))
