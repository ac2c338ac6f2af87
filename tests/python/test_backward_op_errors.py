"""The helper and backward ops added for gradient rules (broadcast_like, strided_slice_grad,
pad_grad, gather_elements, tensor_scatter_elements, resize_*_grad) reject bad inputs with the
right exception and a message naming the op, the argument and the shapes."""
import numpy as np
import pytest

import mycel
from mycel import ops


def t(shape, dtype=np.float32):
    return mycel.Tensor(np.zeros(shape, dtype))


def idx(shape, dtype=np.int64, value=0):
    return mycel.Tensor(np.full(shape, value, dtype))


def test_broadcast_like_incompatible_shapes():
    with pytest.raises(ValueError, match=r"\[broadcast_like\].*'x'.*\(3, 2\).*\(2, 3, 4\)"):
        ops.broadcast_like(t((3, 2)), t((2, 3, 4)))
    with pytest.raises(ValueError, match=r"\[broadcast_like\].*\(2, 3\).*\(3,\)"):
        ops.broadcast_like(t((2, 3)), t((3,)))


def test_strided_slice_grad_dy_must_match_the_slice():
    with pytest.raises(ValueError, match=r"\[strided_slice_grad\].*'dy'.*\(2, 2\).*expected \(2, 3\)"):
        ops.strided_slice_grad(t((2, 2)), t((4, 5)), begin=(0, 3), end=(3, 0), strides=(2, -1))


def test_strided_slice_grad_float_only():
    with pytest.raises(TypeError, match=r"strided_slice_grad"):
        ops.strided_slice_grad(t((2, 3), np.int32), t((4, 5), np.int32), begin=(0, 3), end=(3, 0),
                               strides=(2, -1))


def test_pad_grad_dy_must_match_the_padded_shape():
    with pytest.raises(ValueError, match=r"\[pad_grad\].*'dy'.*\(4, 4\).*expected \(5, 4\)"):
        ops.pad_grad(t((4, 4)), t((2, 3)), paddings=(1, 2, 0, 1))


def test_pad_grad_checks_its_attributes():
    with pytest.raises(ValueError, match=r"mode"):
        ops.pad_grad(t((5, 4)), t((2, 3)), paddings=(1, 2, 0, 1), mode="wrap")


def test_gather_elements_index_shape_and_dtype():
    # an index may be smaller than the input off `dim` (torch.gather's rule), not larger
    with pytest.raises(ValueError, match=r"\[gather_elements\].*'index'.*\(4, 2\).*\(3, 4\).*no larger.*dim 1"):
        ops.gather_elements(t((3, 4)), 1, idx((4, 2)))
    with pytest.raises(ValueError, match=r"\[gather_elements\].*'index'.*\(3,\)"):
        ops.gather_elements(t((3, 4)), 1, idx((3,)))
    with pytest.raises(TypeError, match=r"\[gather_elements\].*'index'.*int32 or int64.*float32"):
        ops.gather_elements(t((3, 4)), 1, t((3, 4)))
    with pytest.raises(ValueError, match=r"\[gather_elements\].*dim"):
        ops.gather_elements(t((3, 4)), 2, idx((3, 4)))


def test_gather_elements_index_out_of_range():
    with pytest.raises(IndexError, match=r"\[gather_elements\].*index 4.*axis 1 with size 4"):
        ops.gather_elements(t((3, 4)), 1, idx((3, 2), value=4))


def test_tensor_scatter_elements_checks():
    with pytest.raises(ValueError, match=r"\[tensor_scatter_elements\].*reduction.*'mul'"):
        ops.tensor_scatter_elements(t((3, 4)), idx((3, 2)), t((3, 2)), axis=1, reduction="mul")
    with pytest.raises(ValueError, match=r"\[tensor_scatter_elements\].*'updates'.*\(3, 3\).*\(3, 2\)"):
        ops.tensor_scatter_elements(t((3, 4)), idx((3, 2)), t((3, 3)), axis=1)
    with pytest.raises(TypeError, match=r"\[tensor_scatter_elements\]"):
        ops.tensor_scatter_elements(t((3, 4)), idx((3, 2)), t((3, 2), np.float64), axis=1)
    with pytest.raises(IndexError, match=r"\[tensor_scatter_elements\].*index -5"):
        ops.tensor_scatter_elements(t((3, 4)), idx((3, 2), value=-5), t((3, 2)), axis=1)


@pytest.mark.parametrize("op", ["resize_nearest_neighbor_grad", "resize_bilinear_grad"])
def test_resize_grads_check_shapes(op):
    fn = getattr(ops, op)
    with pytest.raises(ValueError, match=rf"\[{op}\].*'dy'.*\(1, 3, 5, 5\).*'like'.*\(1, 2, 3, 3\)"):
        fn(t((1, 3, 5, 5)), t((1, 2, 3, 3)))
    with pytest.raises(ValueError, match=rf"\[{op}\]"):
        fn(t((3, 5, 5)), t((1, 3, 3, 3)))


def test_resize_bilinear_grad_exclusive_flags():
    with pytest.raises(ValueError, match=r"\[resize_bilinear_grad\].*align_corners and half_pixel"):
        ops.resize_bilinear_grad(t((1, 1, 4, 4)), t((1, 1, 2, 2)), align_corners=True,
                                 half_pixel_centers=True)
