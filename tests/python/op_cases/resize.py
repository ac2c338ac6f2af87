"""Table rows for resize_nearest_neighbor and resize_bilinear (NCHW), against direct numpy
implementations of the coordinate rules: PyTorch's align_corners=True/False (False is
half_pixel_centers here) and TensorFlow's legacy asymmetric rule (both flags off)."""
import numpy as np

from op_cases import OpCase

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


CASES = [
    OpCase("resize_nearest_neighbor", _nearest, [(2, 3, 4, 5)], dict(size=(7, 3)), dtypes=ALL),
    OpCase("resize_nearest_neighbor", _nearest, [(1, 2, 3, 5)], dict(size=(5, 9), align_corners=True),
           id="corners"),
    OpCase("resize_nearest_neighbor", _nearest, [(0, 2, 3, 3)], dict(size=(2, 2)), id="empty"),
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
]
