"""Table rows for resize_nearest_neighbor, resize_bilinear (NCHW) and their backward ops, against direct numpy
implementations of the coordinate rules: PyTorch's align_corners=True/False (False is
half_pixel_centers here) and TensorFlow's legacy asymmetric rule (both flags off)."""
import numpy as np

from op_cases import OpCase, make_input

ALL = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def _coords(out, inp, align_corners, half_pixel):
    i = np.arange(out, dtype=np.float64)
    if align_corners:
        return i * (inp - 1) / (out - 1) if out > 1 else np.zeros(out)
    if half_pixel:
        return np.maximum((i + 0.5) * inp / out - 0.5, 0.0)
    return i * inp / out


def _nearest(x, size, align_corners=False):
    idx = []
    for out, inp in zip(size, x.shape[2:]):
        if align_corners:
            j = np.floor(_coords(out, inp, True, False) + 0.5).astype(np.int64)  # round half up
        else:
            j = np.arange(out) * inp // out
        idx.append(np.minimum(j, inp - 1))
    return x[:, :, idx[0]][:, :, :, idx[1]]


def _bilinear(x, size, align_corners=False, half_pixel_centers=False):
    (oh, ow), (h, w) = size, x.shape[2:]
    sy = _coords(oh, h, align_corners, half_pixel_centers)
    sx = _coords(ow, w, align_corners, half_pixel_centers)
    y0 = np.minimum(np.floor(sy).astype(np.int64), h - 1)
    x0 = np.minimum(np.floor(sx).astype(np.int64), w - 1)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (sy - y0)[:, None], sx - x0
    a = x.astype(np.float64)
    top = a[:, :, y0][:, :, :, x0] * (1 - wx) + a[:, :, y0][:, :, :, x1] * wx
    bot = a[:, :, y1][:, :, :, x0] * (1 - wx) + a[:, :, y1][:, :, :, x1] * wx
    return (top * (1 - wy) + bot * wy).astype(x.dtype)


def _nearest_index(out_size, in_size, align_corners):
    idx = []
    for out, inp in zip(out_size, in_size):
        if align_corners:
            j = np.floor(_coords(out, inp, True, False) + 0.5).astype(np.int64)
        else:
            j = np.arange(out) * inp // out
        idx.append(np.minimum(j, inp - 1))
    return idx


def _nearest_grad(dy, like, align_corners=False):
    """The adjoint of _nearest: add each output's dy into the pixel it copied."""
    iy, ix = _nearest_index(dy.shape[2:], like.shape[2:], align_corners)
    dx = np.zeros(like.shape)
    np.add.at(dx, (slice(None), slice(None), iy[:, None], ix[None, :]), dy.astype(np.float64))
    return dx.astype(dy.dtype)


def _bilinear_grad(dy, like, align_corners=False, half_pixel_centers=False):
    """The adjoint of _bilinear: each output's dy spread on its four source pixels by weight."""
    (oh, ow), (h, w) = dy.shape[2:], like.shape[2:]
    sy = _coords(oh, h, align_corners, half_pixel_centers)
    sx = _coords(ow, w, align_corners, half_pixel_centers)
    y0 = np.minimum(np.floor(sy).astype(np.int64), h - 1)
    x0 = np.minimum(np.floor(sx).astype(np.int64), w - 1)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (sy - y0)[:, None], (sx - x0)[None, :]
    g = dy.astype(np.float64)
    dx = np.zeros(like.shape)
    s = slice(None)
    for ys, xs, wgt in ((y0, x0, (1 - wy) * (1 - wx)), (y0, x1, (1 - wy) * wx),
                        (y1, x0, wy * (1 - wx)), (y1, x1, wy * wx)):
        np.add.at(dx, (s, s, ys[:, None], xs[None, :]), g * wgt)
    return dx.astype(dy.dtype)


def _grad_gen(dy_shape, like_shape):
    return lambda rng, dtype: [make_input(rng, dy_shape, dtype), make_input(rng, like_shape, dtype)]


FLOATS = ("float16", "float32", "float64")

CASES = [
    OpCase("resize_nearest_neighbor", _nearest, [(2, 3, 4, 5)], dict(size=(7, 3)), dtypes=ALL),
    OpCase("resize_nearest_neighbor", _nearest, [(1, 2, 3, 5)], dict(size=(5, 9), align_corners=True),
           id="corners"),
    OpCase("resize_nearest_neighbor", _nearest, [(0, 2, 3, 3)], dict(size=(2, 2)), id="empty"),
    OpCase("resize_nearest_neighbor", _nearest, [(1, 1, 2, 3)], dict(size=(3, 4)), id="small"),  # help example
    OpCase("resize_nearest_neighbor", _nearest, [(2, 3, 50, 50)], dict(size=(120, 100)), id="large"),
    OpCase("resize_bilinear", _bilinear, [(2, 3, 4, 5)], dict(size=(7, 3)),
           dtypes=("float16", "float32", "float64"), rtol=1e-4, atol=1e-5),
    OpCase("resize_bilinear", _bilinear, [(2, 3, 4, 5)], dict(size=(8, 9), align_corners=True),
           id="corners", rtol=1e-4, atol=1e-5),
    OpCase("resize_bilinear", _bilinear, [(2, 3, 4, 5)], dict(size=(3, 11), half_pixel_centers=True),
           id="half_pixel", rtol=1e-4, atol=1e-5),
    OpCase("resize_bilinear", _bilinear, [(1, 1, 1, 1)], dict(size=(1, 3), align_corners=True),
           id="one"),
    OpCase("resize_bilinear", _bilinear, [(0, 3, 4, 4)], dict(size=(2, 2)), id="empty"),
    OpCase("resize_bilinear", _bilinear, [(2, 3, 60, 60)], dict(size=(100, 90), half_pixel_centers=True),
           id="large", rtol=1e-4, atol=1e-5),
    OpCase("resize_nearest_neighbor_grad", _nearest_grad, _grad_gen((2, 3, 7, 3), (2, 3, 4, 5)),
           dtypes=FLOATS),
    OpCase("resize_nearest_neighbor_grad", _nearest_grad, _grad_gen((1, 2, 5, 9), (1, 2, 3, 5)),
           dict(align_corners=True), id="corners"),
    OpCase("resize_nearest_neighbor_grad", _nearest_grad, _grad_gen((0, 2, 2, 2), (0, 2, 3, 3)),
           id="empty"),
    OpCase("resize_nearest_neighbor_grad", _nearest_grad, _grad_gen((2, 3, 120, 100), (2, 3, 50, 50)),
           id="large"),
    OpCase("resize_bilinear_grad", _bilinear_grad, _grad_gen((2, 3, 7, 3), (2, 3, 4, 5)), dtypes=FLOATS,
           rtol=1e-4, atol=1e-5),
    OpCase("resize_bilinear_grad", _bilinear_grad, _grad_gen((2, 3, 8, 9), (2, 3, 4, 5)),
           dict(align_corners=True), id="corners", rtol=1e-4, atol=1e-5),
    OpCase("resize_bilinear_grad", _bilinear_grad, _grad_gen((2, 3, 3, 11), (2, 3, 4, 5)),
           dict(half_pixel_centers=True), id="half_pixel", rtol=1e-4, atol=1e-5),
    OpCase("resize_bilinear_grad", _bilinear_grad, _grad_gen((0, 3, 2, 2), (0, 3, 4, 4)), id="empty"),
    OpCase("resize_bilinear_grad", _bilinear_grad, _grad_gen((2, 3, 100, 90), (2, 3, 60, 60)),
           dict(half_pixel_centers=True), id="large", rtol=1e-4, atol=1e-4),
]
