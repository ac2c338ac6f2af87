"""MindSpore 2.x's vision ops (issue 14): affine_grid, grid_sample's 2-d sampler (the public
ops.grid_sample, with the 5-d case, is in grid3d.py), the box ops (iou,
bounding_box_encode/decode, check_valid), crop_and_resize, col2im, roi_align,
nms_with_mask, extract_volume_patches and upsample, as compositions of registry ops. Sampling
at fractional positions is one helper (_bilinear): four gathers weighted by the distances, so
gradients reach both the image and the sampling positions (grid_sample's grid, ROIAlign's
boxes) through the registry's gather and arithmetic rules."""
import numpy as np

from mycel import _mycel
from mycel.common.dtype import float32, int32, int64, bool_
from mycel.common.tensor import Tensor
from mycel.ops.primitive import constexpr
from mycel.ops.function_more.nn import fold as _fold
from mycel.ops.function_more.nn2 import _check_rank, _ints
from mycel.ops.nn_more import interpolate as _interpolate

_ops = _mycel.ops


# ---- sampling ------------------------------------------------------------------------------------
def _gather_plane(flat, idx, b, c, p):
    """flat (B, C, H*W) at positions idx (B, P) for every channel: (B, C, P)."""
    return _ops.gather_elements(flat, _ops.broadcast_to(_ops.expand_dims(idx, 1), (b, c, p)), dim=2)


def _bilinear(img, ys, xs):
    """img (B, C, H, W) sampled at pixel coordinates ys, xs (B, P): (B, C, P). Each of the four
    neighbours outside the image contributes zero."""
    b, c, h, w = img.shape
    p = ys.shape[1]
    flat = _ops.reshape(img, (b, c, h * w))
    y0, x0 = _ops.floor(ys), _ops.floor(xs)
    wy1, wx1 = ys - y0, xs - x0
    out = None
    for dy, wy in ((0.0, 1.0 - wy1), (1.0, wy1)):
        for dx, wx in ((0.0, 1.0 - wx1), (1.0, wx1)):
            yy, xx = y0 + dy, x0 + dx
            inside = _inside(yy, xx, h, w)
            idx = _ops.cast(_ops.clip_by_value(yy, 0.0, float(h - 1)) * float(w)
                            + _ops.clip_by_value(xx, 0.0, float(w - 1)), int64)
            term = _gather_plane(flat, idx, b, c, p) * _ops.expand_dims(wy * wx * _ops.cast(inside, img.dtype), 1)
            out = term if out is None else out + term
    return out


def _nearest(img, ys, xs, half_up=False):
    """img (B, C, H, W) at the nearest pixel of ys, xs (B, P): halves to even (nearbyint, as
    grid_sample), or up (half_up: std::round on the non-negative positions crop_and_resize keeps)."""
    b, c, h, w = img.shape
    p = ys.shape[1]
    if half_up:
        yy, xx = _ops.floor(ys + 0.5), _ops.floor(xs + 0.5)
    else:
        yy, xx = _ops.round(ys), _ops.round(xs)
    inside = _inside(yy, xx, h, w)
    idx = _ops.cast(_ops.clip_by_value(yy, 0.0, float(h - 1)) * float(w)
                    + _ops.clip_by_value(xx, 0.0, float(w - 1)), int64)
    flat = _ops.reshape(img, (b, c, h * w))
    return _gather_plane(flat, idx, b, c, p) * _ops.expand_dims(_ops.cast(inside, img.dtype), 1)


def _inside(yy, xx, h, w):
    return _ops.logical_and(_ops.logical_and(_ops.greater_equal(yy, 0.0), _ops.less_equal(yy, float(h - 1))),
                            _ops.logical_and(_ops.greater_equal(xx, 0.0), _ops.less_equal(xx, float(w - 1))))


# ---- affine_grid and grid_sample -----------------------------------------------------------------
@constexpr
def _base_grid(sizes, align_corners):
    """The normalized coordinates [x, y(, z), 1] of every output position, (prod(sizes), nd + 1):
    linspace(-1, 1) with align_corners, else the pixel centres (2i + 1) / n - 1."""
    axes = []
    for n in sizes:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1))
        else:
            axes.append((2.0 * np.arange(n) + 1.0) / n - 1.0)
    grids = np.meshgrid(*axes, indexing="ij")  # (D,) H, W order
    coords = [g.ravel() for g in reversed(grids)]  # x first
    return Tensor(np.stack(coords + [np.ones_like(coords[0])], -1).astype(np.float32))


@constexpr
def _affine_sizes(theta_shape, output_size):
    size = tuple(output_size)
    nd = len(size) - 2
    if nd not in (2, 3) or tuple(theta_shape[1:]) != (nd, nd + 1) or size[0] != theta_shape[0]:
        raise ValueError(f"affine_grid: theta {tuple(theta_shape)} and output_size {size} must be (N, 2, 3) with "
                         f"(N, C, H, W) or (N, 3, 4) with (N, C, D, H, W)")
    return size[2:]


def affine_grid(theta, output_size, align_corners=False):
    """The sampling grid of affine maps theta (N, 2, 3) or (N, 3, 4): (N, H, W, 2) or
    (N, D, H, W, 3) of normalized (x, y(, z)) source positions, for grid_sample."""
    spatial = _affine_sizes(theta.shape, output_size)
    base = _ops.cast(_base_grid(spatial, bool(align_corners)), theta.dtype)   # (P, nd + 1)
    n = theta.shape[0]
    nd = theta.shape[1]
    grid = _ops.matmul(_ops.broadcast_to(base, (n,) + tuple(base.shape)), _ops.transpose(theta, (0, 2, 1)))
    return _ops.reshape(grid, (n,) + tuple(spatial) + (nd,))


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1.0) * (0.5 * (size - 1))
    return ((coord + 1.0) * size - 1.0) * 0.5


def _reflect(x, twice_low, twice_high):
    """x reflected into [twice_low / 2, twice_high / 2] (as many bounces as it takes)."""
    if twice_low == twice_high:
        return _ops.zeros_like(x)
    low = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    x = _ops.abs(x - low)
    flips = _ops.floor(x / span)
    extra = x - flips * span
    even = _ops.equal(flips - _ops.floor(flips / 2.0) * 2.0, 0.0)
    return _ops.select(even, extra + low, span - extra + low)


def _source_coord(coord, size, padding_mode, align_corners):
    x = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        return _ops.clip_by_value(x, 0.0, float(size - 1))
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return _ops.clip_by_value(x, 0.0, float(size - 1))
    return x


def _grid_sample_2d(input, grid, mode, padding_mode, align_corners):  # noqa: A002
    """grid_sample of (N, C, H, W) at grid (N, H_out, W_out, 2) (grid3d.py checks the options)."""
    who = "grid_sample"
    n, c, h, w = input.shape
    if grid.shape[0] != n or grid.shape[3] != 2:
        raise ValueError(f"{who}: grid must be (N={n}, H_out, W_out, 2), got {tuple(grid.shape)}")
    ho, wo = grid.shape[1], grid.shape[2]
    g = _ops.reshape(_ops.cast(grid, input.dtype), (n, ho * wo, 2))
    xs = _source_coord(_ops.squeeze(_ops.slice(g, (0, 0, 0), (n, ho * wo, 1)), (2,)), w, padding_mode,
                       bool(align_corners))
    ys = _source_coord(_ops.squeeze(_ops.slice(g, (0, 0, 1), (n, ho * wo, 1)), (2,)), h, padding_mode,
                       bool(align_corners))
    out = _bilinear(input, ys, xs) if mode == "bilinear" else _nearest(input, ys, xs)
    return _ops.reshape(out, (n, c, ho, wo))


# ---- boxes ---------------------------------------------------------------------------------------
def _columns(boxes):
    """The four coordinate columns of (K, 4) boxes, each (K,)."""
    k = boxes.shape[0]
    return tuple(_ops.reshape(_ops.slice(boxes, (0, i), (k, 1)), (k,)) for i in range(4))


def _check_boxes(who, arg, boxes, width=4):
    _check_rank(who, arg, boxes.ndim, (2,))
    if boxes.shape[1] != width:
        raise ValueError(f"{who}: {arg} must be (N, {width}) boxes, got shape {tuple(boxes.shape)}")


def iou(anchor_boxes, gt_boxes, mode="iou"):
    """Intersection over union (or over the ground-truth area, mode 'iof') of every gt box
    (M, 4) with every anchor (N, 4), boxes [x0, y0, x1, y1] in pixels (a box includes both end
    pixels: widths are x1 - x0 + 1, as MindSpore's); output (M, N)."""
    who = "iou"
    if mode not in ("iou", "iof"):
        raise KeyError(f"{who}: mode must be 'iou' or 'iof', got {mode!r}")
    _check_boxes(who, "anchor_boxes", anchor_boxes)
    _check_boxes(who, "gt_boxes", gt_boxes)
    ax0, ay0, ax1, ay1 = _columns(anchor_boxes)
    gx0, gy0, gx1, gy1 = _columns(gt_boxes)

    def col(v):
        return _ops.expand_dims(v, 1)  # gt along rows
    iw = _ops.relu(_ops.minimum(col(gx1), ax1) - _ops.maximum(col(gx0), ax0) + 1.0)
    ih = _ops.relu(_ops.minimum(col(gy1), ay1) - _ops.maximum(col(gy0), ay0) + 1.0)
    inter = iw * ih
    area_a = (ax1 - ax0 + 1.0) * (ay1 - ay0 + 1.0)
    area_g = col((gx1 - gx0 + 1.0) * (gy1 - gy0 + 1.0))
    if mode == "iou":
        return inter / (area_a + area_g - inter + 1e-10)
    return inter / (area_g + 1e-10)


def _centre_size(boxes):
    x0, y0, x1, y1 = _columns(boxes)
    return (x0 + x1) * 0.5, (y0 + y1) * 0.5, x1 - x0 + 1.0, y1 - y0 + 1.0


def _four(who, arg, value):
    vals = tuple(float(v) for v in value)
    if len(vals) != 4:
        raise ValueError(f"{who}: {arg} must hold 4 numbers, got {value!r}")
    return vals


def bounding_box_encode(anchor_box, groundtruth_box, means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0)):
    """The regression deltas (dx, dy, dw, dh) that move each anchor onto its ground-truth box
    ((N, 4) each, [x0, y0, x1, y1], widths x1 - x0 + 1), normalized by means and stds."""
    who = "bounding_box_encode"
    _check_boxes(who, "anchor_box", anchor_box)
    _check_boxes(who, "groundtruth_box", groundtruth_box)
    m, s = _four(who, "means", means), _four(who, "stds", stds)
    px, py, pw, ph = _centre_size(anchor_box)
    gx, gy, gw, gh = _centre_size(groundtruth_box)
    return _ops.stack((((gx - px) / pw - m[0]) / s[0], ((gy - py) / ph - m[1]) / s[1],
                       (_ops.log(gw / pw) - m[2]) / s[2], (_ops.log(gh / ph) - m[3]) / s[3]), 1)


def bounding_box_decode(anchor_box, deltas, max_shape, means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0),
                        wh_ratio_clip=0.016):
    """bounding_box_encode's inverse: anchors (N, 4) moved by deltas (N, 4) (de-normalized,
    the log-size deltas clipped to |log(wh_ratio_clip)|), clipped to max_shape (height, width)."""
    who = "bounding_box_decode"
    _check_boxes(who, "anchor_box", anchor_box)
    _check_boxes(who, "deltas", deltas)
    m, s = _four(who, "means", means), _four(who, "stds", stds)
    if len(tuple(max_shape)) != 2:
        raise ValueError(f"{who}: max_shape must be (height, width), got {max_shape!r}")
    height, width = float(max_shape[0]), float(max_shape[1])
    d0, d1, d2, d3 = _columns(deltas)
    dx, dy, dw, dh = d0 * s[0] + m[0], d1 * s[1] + m[1], d2 * s[2] + m[2], d3 * s[3] + m[3]
    limit = _log_limit(wh_ratio_clip)
    dw = _ops.clip_by_value(dw, -limit, limit)
    dh = _ops.clip_by_value(dh, -limit, limit)
    px, py, pw, ph = _centre_size(anchor_box)
    gx, gy = px + pw * dx, py + ph * dy
    gw, gh = pw * _ops.exp(dw), ph * _ops.exp(dh)
    x0 = _ops.clip_by_value(gx - gw * 0.5 + 0.5, 0.0, width)
    y0 = _ops.clip_by_value(gy - gh * 0.5 + 0.5, 0.0, height)
    x1 = _ops.clip_by_value(gx + gw * 0.5 - 0.5, 0.0, width)
    y1 = _ops.clip_by_value(gy + gh * 0.5 - 0.5, 0.0, height)
    return _ops.stack((x0, y0, x1, y1), 1)


@constexpr
def _log_limit(wh_ratio_clip):
    if isinstance(wh_ratio_clip, bool) or not isinstance(wh_ratio_clip, (int, float)) or wh_ratio_clip <= 0:
        raise ValueError(f"bounding_box_decode: wh_ratio_clip must be a positive float, got {wh_ratio_clip!r}")
    return float(abs(np.log(wh_ratio_clip)))


def check_valid(bboxes, img_metas):
    """Whether each box (N, 4) lies in the image: x0, y0 >= 0, x1 <= width * ratio - 1 and
    y1 <= height * ratio - 1 for img_metas (height, width, ratio). Bool (N,)."""
    who = "check_valid"
    _check_boxes(who, "bboxes", bboxes)
    _check_rank(who, "img_metas", img_metas.ndim, (1,))
    if img_metas.shape[0] != 3:
        raise ValueError(f"{who}: img_metas must be (height, width, ratio), got shape {tuple(img_metas.shape)}")
    x0, y0, x1, y1 = _columns(bboxes)
    meta = _ops.cast(img_metas, bboxes.dtype)
    height, width, ratio = meta[0], meta[1], meta[2]
    ok = _ops.logical_and(_ops.greater_equal(x0, 0.0), _ops.greater_equal(y0, 0.0))
    ok = _ops.logical_and(ok, _ops.less_equal(x1, width * ratio - 1.0))
    return _ops.logical_and(ok, _ops.less_equal(y1, height * ratio - 1.0))


# ---- crops and regions ---------------------------------------------------------------------------
def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear", extrapolation_value=0.0):
    """Crops of image (N, H, W, C) at normalized boxes (K, 4) [y0, x0, y1, x1] of images
    box_indices (K,), each resized to crop_size (h, w) by 'bilinear' or 'nearest' sampling
    (TensorFlow's geometry: y = y0 (H - 1) + i (y1 - y0) (H - 1) / (h - 1)); samples outside
    the image are extrapolation_value. Output (K, h, w, C), float32."""
    who = "crop_and_resize"
    if method not in ("bilinear", "nearest", "bilinear_v2"):
        raise ValueError(f"{who}: method must be 'bilinear', 'nearest' or 'bilinear_v2', got {method!r}")
    _check_rank(who, "image", image.ndim, (4,))
    _check_boxes(who, "boxes", boxes)
    _check_rank(who, "box_indices", box_indices.ndim, (1,))
    ch, cw = _ints(who, "crop_size", crop_size, 2)
    n, h, w, c = image.shape
    k = boxes.shape[0]
    img = _ops.cast(_ops.transpose(image, (0, 3, 1, 2)), float32)
    img = _ops.gather(img, _ops.cast(box_indices, int64), 0)                       # (K, C, H, W)
    y0, x0, y1, x1 = tuple(_ops.expand_dims(_ops.cast(v, float32), 1) for v in _columns(boxes))
    ys = _crop_positions(y0, y1, h, ch)                                             # (K, ch)
    xs = _crop_positions(x0, x1, w, cw)                                             # (K, cw)
    yy = _ops.reshape(_ops.broadcast_to(_ops.expand_dims(ys, 2), (k, ch, cw)), (k, ch * cw))
    xx = _ops.reshape(_ops.broadcast_to(_ops.expand_dims(xs, 1), (k, ch, cw)), (k, ch * cw))
    inside = _inside(yy, xx, h, w)
    vals = _nearest(img, yy, xx, True) if method == "nearest" else _bilinear(img, yy, xx)
    vals = _ops.select(_ops.broadcast_to(_ops.expand_dims(inside, 1), (k, c, ch * cw)), vals,
                       _ops.zeros_like(vals) + float(extrapolation_value))
    return _ops.transpose(_ops.reshape(vals, (k, c, ch, cw)), (0, 2, 3, 1))


def _crop_positions(lo, hi, size, n):
    if n == 1:
        return (lo + hi) * (0.5 * (size - 1))
    steps = _ops.cast(_arange(n), float32)
    return lo * float(size - 1) + steps * ((hi - lo) * (float(size - 1) / (n - 1)))


@constexpr
def _arange(n):
    return Tensor(np.arange(n, dtype=np.float32))


def roi_align(features, rois, pooled_height, pooled_width, spatial_scale, sample_num=2, roi_end_mode=1):
    """ROIAlign (Mask R-CNN): per region [batch, x0, y0, x1, y1] of rois (R, 5), scaled by
    spatial_scale (x1, y1 first extended by roi_end_mode), the mean of sample_num x sample_num
    bilinear samples in each of pooled_height x pooled_width bins of features (N, C, H, W).
    Samples beyond one pixel outside the map are 0; others are clamped to it. (R, C, ph, pw)."""
    who = "ROIAlign"
    _check_rank(who, "features", features.ndim, (4,))
    _check_boxes(who, "rois", rois, 5)
    ph, pw = _ints(who, "pooled_height/pooled_width", (pooled_height, pooled_width), 2)
    if isinstance(sample_num, bool) or not isinstance(sample_num, int) or sample_num < 1:
        raise ValueError(f"{who}: sample_num must be an int >= 1 (an adaptive count gives data-dependent shapes), "
                         f"got {sample_num!r}")
    if roi_end_mode not in (0, 1):
        raise ValueError(f"{who}: roi_end_mode must be 0 or 1, got {roi_end_mode!r}")
    n, c, h, w = features.shape
    r = rois.shape[0]
    cols = tuple(_ops.reshape(_ops.slice(rois, (0, i), (r, 1)), (r, 1)) for i in range(5))
    batch = _ops.cast(_ops.reshape(cols[0], (r,)), int64)
    x0, y0 = cols[1] * spatial_scale, cols[2] * spatial_scale
    x1, y1 = (cols[3] + float(roi_end_mode)) * spatial_scale, (cols[4] + float(roi_end_mode)) * spatial_scale
    bin_w = _ops.maximum(x1 - x0, _ops.ones_like(x0)) / float(pw)
    bin_h = _ops.maximum(y1 - y0, _ops.ones_like(y0)) / float(ph)
    fy, fx = _roi_offsets(ph, pw, sample_num)                                      # (1, P) each
    ys = y0 + fy * bin_h                                                           # (R, P)
    xs = x0 + fx * bin_w
    valid = _ops.logical_and(_ops.logical_and(_ops.greater_equal(ys, -1.0), _ops.less_equal(ys, float(h))),
                             _ops.logical_and(_ops.greater_equal(xs, -1.0), _ops.less_equal(xs, float(w))))
    ys = _ops.clip_by_value(ys, 0.0, float(h - 1))
    xs = _ops.clip_by_value(xs, 0.0, float(w - 1))
    img = _ops.gather(features, batch, 0)
    vals = _bilinear(img, ys, xs) * _ops.expand_dims(_ops.cast(valid, features.dtype), 1)   # (R, C, P)
    vals = _ops.reshape(vals, (r, c, ph, sample_num, pw, sample_num))
    return _ops.mean(vals, (3, 5))


@constexpr
def _roi_offsets(ph, pw, s):
    """Sample positions in bin units, (1, ph * s * pw * s) for y and x: bin + (k + 0.5) / s."""
    iy = (np.arange(ph)[:, None] + (np.arange(s)[None, :] + 0.5) / s).reshape(ph * s)
    ix = (np.arange(pw)[:, None] + (np.arange(s)[None, :] + 0.5) / s).reshape(pw * s)
    gy, gx = np.meshgrid(iy, ix, indexing="ij")
    return (Tensor(gy.reshape(1, -1).astype(np.float32)), Tensor(gx.reshape(1, -1).astype(np.float32)))


def nms_with_mask(bboxes, iou_threshold=0.5):
    """Greedy non-maximum suppression of (N, 5) [x0, y0, x1, y1, score] boxes: sorted by score
    (highest first), a box is dropped when its IoU (areas (x1 - x0) (y1 - y0)) with a kept,
    higher-scored box exceeds iou_threshold. Returns (the sorted boxes (N, 5), their positions
    0..N-1 (int32), the keep mask (N,) bool), as MindSpore's CPU kernel."""
    who = "NMSWithMask"
    _check_boxes(who, "bboxes", bboxes, 5)
    n = bboxes.shape[0]
    order = _ops.argsort(_ops.reshape(_ops.slice(bboxes, (0, 4), (n, 1)), (n,)), axis=-1, descending=True)
    boxes = _ops.gather(bboxes, order, 0)
    x0, y0, x1, y1 = _columns(_ops.slice(boxes, (0, 0), (n, 4)))
    iw = _ops.relu(_ops.minimum(_ops.expand_dims(x1, 1), x1) - _ops.maximum(_ops.expand_dims(x0, 1), x0))
    ih = _ops.relu(_ops.minimum(_ops.expand_dims(y1, 1), y1) - _ops.maximum(_ops.expand_dims(y0, 1), y0))
    inter = iw * ih
    area = (x1 - x0) * (y1 - y0)
    overlap = _ops.greater(inter / (_ops.expand_dims(area, 1) + area - inter), float(iou_threshold))
    later = _later_mask(n)                                                          # j > i
    suppress = _ops.logical_and(overlap, later)                                     # (N, N): i suppresses j
    keep = _ops.ones((n,), bool_)
    for i in range(n):  # box i, if still kept, drops the later boxes it overlaps
        row = _ops.reshape(_ops.slice(suppress, (i, 0), (1, n)), (n,))
        kept_i = _ops.reshape(_ops.slice(keep, (i,), (1,)), ())
        keep = _ops.logical_and(keep, _ops.logical_not(_ops.logical_and(row, kept_i)))
    return boxes, _ops.cast(_arange(n), int32), keep


@constexpr
def _later_mask(n):
    return Tensor(np.triu(np.ones((n, n), np.bool_), 1))


# ---- patches -------------------------------------------------------------------------------------
def col2im(input_x, output_size, kernel_size, dilation, padding_value, stride):
    """Columns (N, C, kh * kw, L) summed back into (N, C, H, W) at output_size (H, W) (the
    adjoint of unfold; MindSpore's argument names)."""
    who = "col2im"
    _check_rank(who, "input_x", input_x.ndim, (4,))
    size = _size_pair(output_size)
    n, c, kk, length = input_x.shape
    cols = _ops.reshape(input_x, (n, c * kk, length))
    return _fold(cols, size, kernel_size, dilation, padding_value, stride)


def _size_pair(output_size):
    if isinstance(output_size, Tensor):
        return tuple(int(v) for v in output_size.asnumpy().reshape(-1))
    return tuple(output_size)


@constexpr
def _volume_plan(shape, kernel_size, strides, padding):
    who = "ExtractVolumePatches"

    def five(v, arg):
        vals = (v,) * 3 if isinstance(v, int) else tuple(v)
        if len(vals) == 5:
            if vals[:2] != (1, 1):
                raise ValueError(f"{who}: {arg} must start with (1, 1) in its 5-int form, got {v!r}")
            vals = vals[2:]
        if len(vals) != 3 or any(not isinstance(k, int) or k < 1 for k in vals):
            raise ValueError(f"{who}: {arg} must be an int, 3 ints or (1, 1, d, h, w), got {v!r}")
        return vals
    k, s = five(kernel_size, "kernel_size"), five(strides, "strides")
    mode = str(padding).upper()
    if mode not in ("VALID", "SAME"):
        raise ValueError(f"{who}: padding must be 'VALID' or 'SAME', got {padding!r}")
    pads, outs = [], []
    for n, kk, ss in zip(shape[2:], k, s):
        if mode == "SAME":
            o = -(-n // ss)
            total = max((o - 1) * ss + kk - n, 0)
            pads += [total // 2, total - total // 2]
        else:
            o = (n - kk) // ss + 1
            pads += [0, 0]
        if o < 1:
            raise ValueError(f"{who}: a kernel of {k} does not fit the input {tuple(shape[2:])}")
        outs.append(o)
    return k, s, tuple(pads), tuple(outs)


def extract_volume_patches(x, kernel_size, strides, padding):
    """Every kd x kh x kw patch of x (N, C, D, H, W) moved by strides ('VALID' or 'SAME'
    zero padding), as channels: (N, kd * kh * kw * C, OD, OH, OW), the patch offset outer and the
    channel inner (TensorFlow's order)."""
    _check_rank("ExtractVolumePatches", "x", x.ndim, (5,))
    k, s, pads, outs = _volume_plan(tuple(x.shape), kernel_size, strides, padding)
    xp = _ops.pad(x, (0, 0, 0, 0) + pads)
    n, c = x.shape[0], x.shape[1]
    pieces = []
    for i in range(k[0]):
        for j in range(k[1]):
            for m in range(k[2]):
                pieces.append(_ops.strided_slice(
                    xp, (0, 0, i, j, m),
                    (n, c, i + s[0] * (outs[0] - 1) + 1, j + s[1] * (outs[1] - 1) + 1, m + s[2] * (outs[2] - 1) + 1),
                    (1, 1, s[0], s[1], s[2])))
    return _ops.concat(pieces, 1)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
             recompute_scale_factor=None):
    """MindSpore's name for interpolate."""
    return _interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)


def _tensor_col2im(self, output_size, kernel_size, dilation, padding_value, stride):
    """Tensor.col2im: ops.col2im with the tensor first."""
    return col2im(self, output_size, kernel_size, dilation, padding_value, stride)


if not hasattr(Tensor, "col2im"):
    Tensor.col2im = _tensor_col2im

__all__ = ["affine_grid", "iou", "bounding_box_encode", "bounding_box_decode", "check_valid",
           "crop_and_resize", "col2im", "roi_align", "nms_with_mask", "extract_volume_patches", "upsample"]
