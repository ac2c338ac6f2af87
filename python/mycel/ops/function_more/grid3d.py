"""ops.grid_sample for 4-d and 5-d inputs: the 2-d case is vision.py's bilinear sampler; the
3-d one samples the 8 (trilinear) or nearest neighbours of each (x, y, z) position the same way,
so gradients reach the input and the grid."""
from mycel import _mycel
from mycel.common.dtype import int64
from mycel.ops.function_more.nn2 import _check_rank
from mycel.ops.function_more.vision import _gather_plane, _grid_sample_2d, _source_coord

_ops = _mycel.ops


def _inside3(zz, yy, xx, d, h, w):
    ok = _ops.logical_and(_ops.greater_equal(zz, 0.0), _ops.less_equal(zz, float(d - 1)))
    ok = _ops.logical_and(ok, _ops.logical_and(_ops.greater_equal(yy, 0.0), _ops.less_equal(yy, float(h - 1))))
    return _ops.logical_and(ok, _ops.logical_and(_ops.greater_equal(xx, 0.0), _ops.less_equal(xx, float(w - 1))))


def _index3(zz, yy, xx, d, h, w):
    return _ops.cast((_ops.clip_by_value(zz, 0.0, float(d - 1)) * float(h)
                      + _ops.clip_by_value(yy, 0.0, float(h - 1))) * float(w)
                     + _ops.clip_by_value(xx, 0.0, float(w - 1)), int64)


def _sample3(img, zs, ys, xs, mode):
    """img (B, C, D, H, W) at voxel coordinates zs, ys, xs (B, P): (B, C, P); neighbours outside
    the volume contribute zero."""
    b, c, d, h, w = img.shape
    p = zs.shape[1]
    flat = _ops.reshape(img, (b, c, d * h * w))
    if mode == "nearest":
        zz, yy, xx = _ops.round(zs), _ops.round(ys), _ops.round(xs)
        keep = _ops.cast(_inside3(zz, yy, xx, d, h, w), img.dtype)
        return _gather_plane(flat, _index3(zz, yy, xx, d, h, w), b, c, p) * _ops.expand_dims(keep, 1)
    z0, y0, x0 = _ops.floor(zs), _ops.floor(ys), _ops.floor(xs)
    wz1, wy1, wx1 = zs - z0, ys - y0, xs - x0
    out = None
    for dz, wz in ((0.0, 1.0 - wz1), (1.0, wz1)):
        for dy, wy in ((0.0, 1.0 - wy1), (1.0, wy1)):
            for dx, wx in ((0.0, 1.0 - wx1), (1.0, wx1)):
                zz, yy, xx = z0 + dz, y0 + dy, x0 + dx
                weight = wz * wy * wx * _ops.cast(_inside3(zz, yy, xx, d, h, w), img.dtype)
                term = _gather_plane(flat, _index3(zz, yy, xx, d, h, w), b, c, p) * _ops.expand_dims(weight, 1)
                out = term if out is None else out + term
    return out


def _grid_sample_3d(input, grid, mode, padding_mode, align_corners):  # noqa: A002
    who = "grid_sample"
    n, c, d, h, w = input.shape
    if grid.ndim != 5 or grid.shape[0] != n or grid.shape[4] != 3:
        raise ValueError(f"{who}: grid must be (N={n}, D_out, H_out, W_out, 3) for a 5-d input, got "
                         f"{tuple(grid.shape)}")
    do, ho, wo = grid.shape[1], grid.shape[2], grid.shape[3]
    p = do * ho * wo
    g = _ops.reshape(_ops.cast(grid, input.dtype), (n, p, 3))

    def coord(k, size):
        return _source_coord(_ops.squeeze(_ops.slice(g, (0, 0, k), (n, p, 1)), (2,)), size, padding_mode,
                             bool(align_corners))
    out = _sample3(input, coord(2, d), coord(1, h), coord(0, w), mode)
    return _ops.reshape(out, (n, c, do, ho, wo))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):  # noqa: A002
    """input (N, C, H, W) sampled at grid (N, H_out, W_out, 2) of normalized (x, y) in [-1, 1], or
    (N, C, D, H, W) at (N, D_out, H_out, W_out, 3) of (x, y, z): mode 'bilinear' (trilinear for
    5-d) or 'nearest'; padding_mode 'zeros', 'border' or 'reflection' for positions outside;
    align_corners: -1 and 1 are the corner pixels' centres (else their outer edges).
    Differentiable with respect to input and (bilinear) grid."""
    who = "grid_sample"
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"{who}: mode must be 'bilinear' or 'nearest', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"{who}: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}")
    _check_rank(who, "input", input.ndim, (4, 5))
    if input.ndim == 5:
        return _grid_sample_3d(input, grid, mode, padding_mode, align_corners)
    _check_rank(who, "grid", grid.ndim, (4,))
    return _grid_sample_2d(input, grid, mode, padding_mode, align_corners)


__all__ = ["grid_sample"]
