"""Gradient rows for the NCHW resizes and their backward ops (all linear in the image)."""
from . import GradCase


def _pair(dy_shape, like_shape):
    return lambda rng: [rng.standard_normal(dy_shape), rng.standard_normal(like_shape)]


CASES = [
    GradCase("resize_nearest_neighbor", [(1, 2, 3, 4)], dict(size=(5, 7))),
    GradCase("resize_nearest_neighbor", [(2, 1, 5, 6)], dict(size=(2, 3)), id="down"),
    GradCase("resize_nearest_neighbor", [(1, 2, 3, 4)], dict(size=(6, 5), align_corners=True),
             id="align_corners"),
    GradCase("resize_bilinear", [(1, 2, 3, 4)], dict(size=(5, 7))),
    GradCase("resize_bilinear", [(2, 1, 5, 6)], dict(size=(3, 4), align_corners=True), id="align_corners"),
    GradCase("resize_bilinear", [(1, 2, 3, 4)], dict(size=(7, 5), half_pixel_centers=True),
             id="half_pixel"),
    GradCase("resize_bilinear", [(1, 1, 4, 4)], dict(size=(1, 1)), id="to_1x1"),
    GradCase("resize_nearest_neighbor_grad", _pair((1, 2, 5, 7), (1, 2, 3, 4)), wrt=[0]),
    GradCase("resize_nearest_neighbor_grad", _pair((1, 2, 6, 5), (1, 2, 3, 4)),
             dict(align_corners=True), wrt=[0], id="align_corners"),
    GradCase("resize_bilinear_grad", _pair((1, 2, 5, 7), (1, 2, 3, 4)), wrt=[0]),
    GradCase("resize_bilinear_grad", _pair((2, 1, 3, 4), (2, 1, 5, 6)), dict(half_pixel_centers=True),
             wrt=[0], id="half_pixel"),
    GradCase("resize_bilinear_grad", _pair((2, 1, 3, 4), (2, 1, 5, 6)), dict(align_corners=True),
             wrt=[0], id="align_corners"),
]
