"""MindSpore's vision ops (ops/function_more/vision.py, ops/operations/vision_ops.py) against
numpy brute force written here pixel by pixel: affine_grid, grid_sample (both modes, the three
paddings, align_corners; gradients for input and grid by finite differences), the box ops,
crop_and_resize, ROIAlign, NMSWithMask, col2im, ExtractVolumePatches, upsample; graph mode."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops

RNG = np.random.default_rng(114)


def T(a):
    return ms.Tensor(np.asarray(a))


def close(got, want, tol=1e-5):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def in_graph(cell, *args):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return cell(*args)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def fd_grad(f, xs, wrt, eps=1e-6):
    xs = [np.asarray(x, np.float64) for x in xs]
    num = np.zeros_like(xs[wrt])
    for idx in np.ndindex(*xs[wrt].shape):
        hi = [x.copy() for x in xs]
        lo = [x.copy() for x in xs]
        hi[wrt][idx] += eps
        lo[wrt][idx] -= eps
        num[idx] = (float(f(*[T(x) for x in hi]).sum().asnumpy()) - float(f(*[T(x) for x in lo]).sum().asnumpy())) / (2 * eps)
    return num


# ---- affine_grid / grid_sample -------------------------------------------------------------------
def test_affine_grid_against_loops():
    theta = RNG.normal(size=(2, 2, 3)).astype(np.float32)
    for align in (False, True):
        got = ops.affine_grid(T(theta), (2, 3, 4, 5), align).asnumpy()
        for n in range(2):
            for i in range(4):
                for j in range(5):
                    x = -1 + 2 * j / 4 if align else (2 * j + 1) / 5 - 1
                    y = -1 + 2 * i / 3 if align else (2 * i + 1) / 4 - 1
                    np.testing.assert_allclose(got[n, i, j], theta[n] @ [x, y, 1], rtol=1e-5, atol=1e-5)
    theta3 = RNG.normal(size=(1, 3, 4)).astype(np.float32)
    g3 = ops.affine_grid(T(theta3), (1, 1, 2, 3, 4), True).asnumpy()
    assert g3.shape == (1, 2, 3, 4, 3)
    np.testing.assert_allclose(g3[0, 1, 2, 3], theta3[0] @ [1, 1, 1, 1], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="affine_grid: theta"):
        ops.affine_grid(T(theta), (2, 3, 4, 5, 6))


def reflect_ref(x, lo, hi):
    """x bounced between lo and hi until inside (one bounce at a time)."""
    if hi <= lo:
        return 0.0
    while x < lo or x > hi:
        x = 2 * lo - x if x < lo else 2 * hi - x
    return x


def grid_sample_ref(img, grid, mode, padding, align):
    n, c, h, w = img.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))

    def coord(v, size):
        p = (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2
        if padding == "border":
            p = min(max(p, 0), size - 1)
        elif padding == "reflection":
            p = reflect_ref(p, 0, size - 1) if align else min(max(reflect_ref(p, -0.5, size - 0.5), 0), size - 1)
        return p

    def pixel(b, yy, xx):
        return img[b, :, yy, xx] if 0 <= yy < h and 0 <= xx < w else np.zeros(c)
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                x, y = coord(grid[b, i, j, 0], w), coord(grid[b, i, j, 1], h)
                if mode == "nearest":
                    out[b, :, i, j] = pixel(b, int(np.rint(y)), int(np.rint(x)))
                    continue
                x0, y0 = math.floor(x), math.floor(y)
                for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                    for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                        out[b, :, i, j] += wy * wx * pixel(b, yy, xx)
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_against_brute_force(mode, padding, align):
    img = RNG.normal(size=(2, 3, 4, 5))
    grid = RNG.uniform(-1.6, 1.6, size=(2, 3, 4, 2))
    got = ops.grid_sample(T(img), T(grid), mode, padding, align)
    close(got, grid_sample_ref(img, grid, mode, padding, align), 1e-9)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_gradients(padding):
    img = RNG.normal(size=(1, 2, 3, 4))
    grid = RNG.uniform(-1.3, 1.3, size=(1, 2, 3, 2))
    weight = T(RNG.normal(size=(1, 2, 2, 3)))

    def f(a, g):
        return ops.grid_sample(a, g, "bilinear", padding, False) * weight
    gi, gg = ms.grad(lambda a, g: f(a, g).sum(), grad_position=(0, 1))(T(img), T(grid))
    close(gi, fd_grad(f, [img, grid], 0), 1e-6)
    close(gg, fd_grad(f, [img, grid], 1), 1e-5)


def test_grid_sample_graph_mode_and_errors():
    class Warp(nn.Cell):
        def construct(self, x, theta):
            return ops.grid_sample(x, ops.affine_grid(theta, (2, 3, 4, 4), False), "bilinear", "border", False)

    x = RNG.normal(size=(2, 3, 5, 5)).astype(np.float32)
    theta = RNG.normal(size=(2, 2, 3)).astype(np.float32) * 0.5
    eager = Warp()(T(x), T(theta)).asnumpy()
    close(in_graph(Warp(), T(x), T(theta)), eager, 1e-5)
    grid = ops.affine_grid(T(theta), (2, 3, 4, 4), False).asnumpy()
    close(eager, grid_sample_ref(x.astype(np.float64), grid, "bilinear", "border", False), 1e-4)
    with pytest.raises(ValueError, match="grid_sample: padding_mode"):
        ops.grid_sample(T(x), T(grid), padding_mode="wrap")
    with pytest.raises(ValueError, match=r"grid_sample: grid must be \(N=2"):
        ops.grid_sample(T(x), T(grid[:1]))


# ---- boxes ---------------------------------------------------------------------------------------
def boxes(k, scale=20.0):
    a = RNG.uniform(0, scale, size=(k, 2))
    return np.concatenate([a, a + RNG.uniform(1, scale / 2, size=(k, 2))], 1)


def test_iou_and_iof():
    anchors, gts = boxes(5), boxes(3)
    want_iou, want_iof = np.zeros((3, 5)), np.zeros((3, 5))
    for m in range(3):
        for n in range(5):
            iw = max(0.0, min(anchors[n, 2], gts[m, 2]) - max(anchors[n, 0], gts[m, 0]) + 1)
            ih = max(0.0, min(anchors[n, 3], gts[m, 3]) - max(anchors[n, 1], gts[m, 1]) + 1)
            aa = (anchors[n, 2] - anchors[n, 0] + 1) * (anchors[n, 3] - anchors[n, 1] + 1)
            ag = (gts[m, 2] - gts[m, 0] + 1) * (gts[m, 3] - gts[m, 1] + 1)
            want_iou[m, n] = iw * ih / (aa + ag - iw * ih)
            want_iof[m, n] = iw * ih / ag
    close(ops.iou(T(anchors), T(gts)), want_iou)
    close(ops.IOU(mode="iof")(T(anchors), T(gts)), want_iof)
    with pytest.raises(KeyError, match="iou: mode"):
        ops.iou(T(anchors), T(gts), "giou")


def test_bounding_box_encode_decode_round_trip():
    anchors, gts = boxes(6, 50.0), boxes(6, 50.0)
    means, stds = (0.1, -0.1, 0.0, 0.2), (0.5, 0.5, 1.0, 1.5)
    d = ops.bounding_box_encode(T(anchors), T(gts), means, stds).asnumpy()
    pw, ph = anchors[:, 2] - anchors[:, 0] + 1, anchors[:, 3] - anchors[:, 1] + 1
    gw, gh = gts[:, 2] - gts[:, 0] + 1, gts[:, 3] - gts[:, 1] + 1
    px, py = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    gx, gy = (gts[:, 0] + gts[:, 2]) / 2, (gts[:, 1] + gts[:, 3]) / 2
    want = np.stack([(gx - px) / pw, (gy - py) / ph, np.log(gw / pw), np.log(gh / ph)], 1)
    close(d, (want - np.array(means)) / np.array(stds))
    back = ops.BoundingBoxDecode((1000, 1000), means, stds, wh_ratio_clip=1e-6)(T(anchors), T(d))
    close(back, gts, 1e-6)
    clipped = ops.bounding_box_decode(T(anchors), T(d), (30, 25), means, stds).asnumpy()
    assert clipped[:, [0, 2]].max() <= 25 and clipped[:, [1, 3]].max() <= 30 and clipped.min() >= 0
    valid = ops.check_valid(T(np.float32([[0, 0, 9, 19], [-1, 0, 5, 5], [0, 0, 10, 5], [2, 3, 9, 20]])),
                            T(np.float32([20, 10, 1.0])))
    np.testing.assert_array_equal(valid.asnumpy(), [True, False, False, False])


# ---- crops and regions ---------------------------------------------------------------------------
def crop_ref(image, bxs, idx, size, method, extrap):
    n, h, w, c = image.shape
    ch, cw = size
    out = np.zeros((len(bxs), ch, cw, c))
    for k, (y0, x0, y1, x1) in enumerate(bxs):
        for i in range(ch):
            y = y0 * (h - 1) + i * (y1 - y0) * (h - 1) / (ch - 1) if ch > 1 else 0.5 * (y0 + y1) * (h - 1)
            for j in range(cw):
                x = x0 * (w - 1) + j * (x1 - x0) * (w - 1) / (cw - 1) if cw > 1 else 0.5 * (x0 + x1) * (w - 1)
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    out[k, i, j] = extrap
                elif method == "nearest":
                    out[k, i, j] = image[idx[k], math.floor(y + 0.5), math.floor(x + 0.5)]  # std::round
                else:
                    t, l = math.floor(y), math.floor(x)
                    b, r = math.ceil(y), math.ceil(x)
                    top = image[idx[k], t, l] + (image[idx[k], t, r] - image[idx[k], t, l]) * (x - l)
                    bot = image[idx[k], b, l] + (image[idx[k], b, r] - image[idx[k], b, l]) * (x - l)
                    out[k, i, j] = top + (bot - top) * (y - t)
    return out


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_against_loops(method):
    image = RNG.normal(size=(2, 6, 7, 3)).astype(np.float32)
    bxs = np.float32([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.0, 0.5, 1.3], [0.3, 0.3, 0.3, 0.7]])
    idx = np.int32([1, 0, 1])
    got = ops.CropAndResize(method, extrapolation_value=-7.0)(T(image), T(bxs), T(idx), (4, 5))
    close(got, crop_ref(image.astype(np.float64), bxs.astype(np.float64), idx, (4, 5), method, -7.0), 1e-5)


def roi_align_ref(feat, rois, ph, pw, scale, s, end_mode):
    n, c, h, w = feat.shape
    out = np.zeros((len(rois), c, ph, pw))

    def sample(b, y, x):
        if y < -1 or y > h or x < -1 or x > w:
            return np.zeros(c)
        y, x = min(max(y, 0), h - 1), min(max(x, 0), w - 1)
        y0, x0 = int(y), int(x)
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        ly, lx = y - y0, x - x0
        return ((1 - ly) * (1 - lx) * feat[b, :, y0, x0] + (1 - ly) * lx * feat[b, :, y0, x1]
                + ly * (1 - lx) * feat[b, :, y1, x0] + ly * lx * feat[b, :, y1, x1])
    for r, (b, x0, y0, x1, y1) in enumerate(rois):
        sx, sy = x0 * scale, y0 * scale
        rw = max((x1 + end_mode) * scale - sx, 1.0)
        rh = max((y1 + end_mode) * scale - sy, 1.0)
        bw, bh = rw / pw, rh / ph
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(c)
                for iy in range(s):
                    for ix in range(s):
                        acc += sample(int(b), sy + i * bh + (iy + 0.5) * bh / s, sx + j * bw + (ix + 0.5) * bw / s)
                out[r, :, i, j] = acc / (s * s)
    return out


def test_roi_align_against_loops_and_gradient():
    feat = RNG.normal(size=(2, 3, 8, 9))
    rois = np.array([[0, 1.0, 1.5, 10.0, 12.0], [1, -3.0, 2.0, 6.0, 5.0], [1, 14.0, 0.0, 20.0, 18.0]])
    got = ops.ROIAlign(2, 3, 0.5, 2, 1)(T(feat), T(rois))
    close(got, roi_align_ref(feat, rois, 2, 3, 0.5, 2, 1), 1e-9)
    close(ops.roi_align(T(feat), T(rois), 3, 2, 0.25, 1, 0), roi_align_ref(feat, rois, 3, 2, 0.25, 1, 0), 1e-9)
    num = fd_grad(lambda f: ops.roi_align(f, T(rois[:2]), 2, 2, 0.5, 2), [feat[:, :1, :5, :5]], 0)
    got_g = ms.grad(lambda f: ops.roi_align(f, T(rois[:2]), 2, 2, 0.5, 2).sum())(T(feat[:, :1, :5, :5]))
    close(got_g, num, 1e-6)
    with pytest.raises(ValueError, match="ROIAlign: sample_num must be an int >= 1"):
        ops.ROIAlign(2, 2, 1.0, 0)(T(feat), T(rois))


def test_nms_with_mask_against_greedy_loop():
    b = boxes(12, 30.0)
    scores = RNG.uniform(size=(12, 1))
    bb = np.concatenate([b, scores], 1).astype(np.float32)
    out, idx, mask = ops.NMSWithMask(0.3)(T(bb))
    order = np.argsort(-bb[:, 4], kind="stable")
    sb = bb[order]
    keep = np.ones(12, bool)
    for i in range(12):
        if not keep[i]:
            continue
        for j in range(i + 1, 12):
            iw = max(0.0, min(sb[i, 2], sb[j, 2]) - max(sb[i, 0], sb[j, 0]))
            ih = max(0.0, min(sb[i, 3], sb[j, 3]) - max(sb[i, 1], sb[j, 1]))
            union = (sb[i, 2] - sb[i, 0]) * (sb[i, 3] - sb[i, 1]) + (sb[j, 2] - sb[j, 0]) * (sb[j, 3] - sb[j, 1])
            if iw * ih / (union - iw * ih) > 0.3:
                keep[j] = False
    close(out, sb)
    np.testing.assert_array_equal(idx.asnumpy(), np.arange(12))
    np.testing.assert_array_equal(mask.asnumpy(), keep)
    assert not keep.all()  # the sample exercises suppression


# ---- patches, upsample ---------------------------------------------------------------------------
def test_col2im_and_tensor_method():
    n, c, kh, kw, h, w = 2, 3, 2, 3, 5, 6
    pad, stride, dil = (1, 1), (2, 1), (1, 2)
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    cols = RNG.normal(size=(n, c, kh * kw, oh * ow))
    want = np.zeros((n, c, h + 2 * pad[0], w + 2 * pad[1]))
    for i in range(kh):
        for j in range(kw):
            for p in range(oh):
                for q in range(ow):
                    want[:, :, p * stride[0] + i * dil[0], q * stride[1] + j * dil[1]] += cols[:, :, i * kw + j, p * ow + q]
    want = want[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w]
    close(ops.col2im(T(cols), (h, w), (kh, kw), dil, pad, stride), want)
    close(T(cols).col2im(T(np.int32([h, w])), (kh, kw), dil, pad, stride), want)


def test_extract_volume_patches_against_loops():
    x = RNG.normal(size=(1, 2, 4, 5, 3))
    for padding in ("VALID", "SAME"):
        got = ops.ExtractVolumePatches((1, 1, 2, 3, 2), (1, 1, 2, 1, 2), padding)(T(x)).asnumpy()
        if padding == "VALID":
            xp, outs = x, (2, 3, 1)
        else:
            outs = (2, 5, 2)
            xp = np.pad(x, ((0, 0), (0, 0), (0, 0), (1, 1), (0, 1)))
        want = np.zeros((1, 2 * 2 * 3 * 2) + outs)
        for i in range(2):
            for j in range(3):
                for m in range(2):
                    for ch in range(2):
                        k = ((i * 3 + j) * 2 + m) * 2 + ch
                        want[0, k] = xp[0, ch, i:i + 2 * outs[0]:2, j:j + outs[1], m:m + 2 * outs[2]:2]
        close(got, want)


def test_upsample_is_interpolate_and_vision_in_graph_mode():
    x = RNG.normal(size=(1, 2, 3, 4)).astype(np.float32)
    close(ops.upsample(T(x), scale_factor=2.0, mode="bilinear", align_corners=True),
          ops.interpolate(T(x), scale_factor=2.0, mode="bilinear", align_corners=True).asnumpy())

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.roi = ops.ROIAlign(2, 2, 1.0)
            self.nms = ops.NMSWithMask(0.5)

        def construct(self, feat, rois, bb, a, g):
            _, _, keep = self.nms(bb)
            return (self.roi(feat, rois).sum() + ops.iou(a, g).sum() + ops.cast(keep, ms.float32).sum()
                    + ops.bounding_box_encode(a, g).sum())

    feat = RNG.normal(size=(1, 2, 5, 5)).astype(np.float32)
    rois = np.float32([[0, 0, 0, 3, 3], [0, 1, 1, 4, 2]])
    bb = np.concatenate([boxes(4), RNG.uniform(size=(4, 1))], 1).astype(np.float32)
    a, g = boxes(3).astype(np.float32), boxes(3).astype(np.float32)
    args = [T(v) for v in (feat, rois, bb, a, g)]
    close(in_graph(Net(), *args), Net()(*args).asnumpy(), 1e-4)


# ---- deformable convolution ----------------------------------------------------------------------
def deform_ref(x, wt, off, k, stride, pad, dil, groups, dg, modulated):
    n, c, h, w = x.shape
    cout = wt.shape[0]
    kh, kw = k
    oh = (h + pad[0] + pad[1] - (dil[0] * (kh - 1) + 1)) // stride[0] + 1
    ow = (w + pad[2] + pad[3] - (dil[1] * (kw - 1) + 1)) // stride[1] + 1
    out = np.zeros((n, cout, oh, ow))

    def bil(b, ch, y, xx):
        if y <= -1 or y >= h or xx <= -1 or xx >= w:
            return 0.0
        y0, x0 = math.floor(y), math.floor(xx)
        acc = 0.0
        for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for xq, wx in ((x0, 1 - (xx - x0)), (x0 + 1, xx - x0)):
                if 0 <= yy < h and 0 <= xq < w:
                    acc += wy * wx * x[b, ch, yy, xq]
        return acc
    kk = kh * kw
    for b in range(n):
        for o in range(cout):
            g = o // (cout // groups)
            for r in range(oh):
                for q in range(ow):
                    s = 0.0
                    for ci in range(c // groups):
                        ch = g * (c // groups) + ci
                        d = ch // (c // dg)
                        for i in range(kh):
                            for j in range(kw):
                                t = i * kw + j
                                dx = off[b, d * kk + t, r, q]
                                dy = off[b, dg * kk + d * kk + t, r, q]
                                m = off[b, 2 * dg * kk + d * kk + t, r, q] if modulated else 1.0
                                y = r * stride[0] - pad[0] + i * dil[0] + dy
                                xx = q * stride[1] - pad[2] + j * dil[1] + dx
                                s += wt[o, ci, i, j] * bil(b, ch, y, xx) * m
                    out[b, o, r, q] = s
    return out


@pytest.mark.parametrize("modulated", [True, False])
def test_deformable_conv2d_against_brute_force(modulated):
    x = RNG.normal(size=(2, 4, 5, 6))
    wt = RNG.normal(size=(4, 2, 2, 3))
    oh, ow = (5 + 2 - 2) // 2 + 1, (6 + 1 - 5) // 1 + 1
    off = RNG.normal(size=(2, 3 * 2 * 6, oh, ow)) * 1.5
    got = ops.deformable_conv2d(T(x), T(wt), T(off), (2, 3), (1, 1, 2, 1), (1, 1, 0, 1), None, (1, 1, 1, 2),
                                groups=2, deformable_groups=2, modulated=modulated)
    close(got, deform_ref(x, wt, off, (2, 3), (2, 1), (1, 1, 0, 1), (1, 2), 2, 2, modulated), 1e-9)
    # zero offsets and unit masks: an ordinary convolution
    zero = np.concatenate([np.zeros((1, 2 * 4, 4, 5)), np.ones((1, 4, 4, 5))], 1)
    w1 = RNG.normal(size=(3, 4, 2, 2))
    b1 = RNG.normal(size=(3,))
    plain = ops.conv2d(T(x[:1]), T(w1), T(b1)).asnumpy()
    close(ops.deformable_conv2d(T(x[:1]), T(w1), T(zero), (2, 2), (1, 1, 1, 1), (0, 0, 0, 0), T(b1)), plain, 1e-9)


def test_deformable_conv2d_gradients():
    x = RNG.normal(size=(1, 2, 4, 4))
    wt = RNG.normal(size=(2, 2, 2, 2))
    off = RNG.normal(size=(1, 12, 3, 3)) * 0.7

    def f(a, b, o):
        return ops.deformable_conv2d(a, b, o, (2, 2), (1, 1, 1, 1), (0, 0, 0, 0))
    grads = ms.grad(lambda a, b, o: f(a, b, o).sum(), grad_position=(0, 1, 2))(T(x), T(wt), T(off))
    for k, arr in enumerate((x, wt, off)):
        close(grads[k], fd_grad(f, [x, wt, off], k), 1e-5)
    with pytest.raises(ValueError, match=r"deformable_conv2d: offsets must be \(1, 12, 3, 3\)"):
        f(T(x), T(wt), T(off[:, :9]))


def test_deformable_conv2d_in_graph_mode():
    class Deform(nn.Cell):
        def construct(self, a, b, o):
            return ops.deformable_conv2d(a, b, o, (2, 2), (1, 1, 1, 1), (1, 1, 1, 1))

    x = RNG.normal(size=(1, 2, 3, 3)).astype(np.float32)
    wt = RNG.normal(size=(2, 2, 2, 2)).astype(np.float32)
    off = RNG.normal(size=(1, 12, 4, 4)).astype(np.float32)
    close(in_graph(Deform(), T(x), T(wt), T(off)), Deform()(T(x), T(wt), T(off)).asnumpy(), 1e-5)


def test_box_crop_and_patch_ops_in_graph_mode():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.crop = ops.CropAndResize("nearest", 0.5)
            self.patches = ops.ExtractVolumePatches((1, 1, 2, 2, 2), (1, 1, 1, 1, 1), "SAME")
            self.decode = ops.BoundingBoxDecode((20, 20), (0.0, 0.1, 0.0, 0.0), (1.0, 2.0, 1.0, 1.0))

        def construct(self, img, bxs, idx, b, meta, cols, vol):
            return (self.crop(img, bxs, idx, (3, 3)).sum() + ops.cast(ops.check_valid(b, meta), ms.float32).sum()
                    + ops.col2im(cols, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)).sum() + self.patches(vol).sum()
                    + self.decode(b, b * 0.01).sum() + ops.upsample(vol[:, :, 0], scale_factor=2.0).sum())

    args = [T(RNG.normal(size=(2, 5, 5, 3)).astype(np.float32)), T(np.float32([[0.1, 0.1, 0.9, 0.8]])),
            T(np.int32([1])), T(np.float32([[1, 2, 5, 6], [0, 0, 30, 3]])), T(np.float32([10, 10, 1])),
            T(RNG.normal(size=(1, 2, 4, 9)).astype(np.float32)), T(RNG.normal(size=(1, 2, 3, 3, 3)).astype(np.float32))]
    close(in_graph(Net(), *args), Net()(*args).asnumpy(), 1e-4)


def grid_sample_3d_ref(vol, grid, mode, padding, align):
    n, c, d, h, w = vol.shape
    _, do, ho, wo, _ = grid.shape
    out = np.zeros((n, c, do, ho, wo))

    def coord(v, size):
        p = (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2
        if padding == "border":
            p = min(max(p, 0), size - 1)
        elif padding == "reflection":
            p = reflect_ref(p, 0, size - 1) if align else min(max(reflect_ref(p, -0.5, size - 0.5), 0), size - 1)
        return p

    def voxel(b, zz, yy, xx):
        return vol[b, :, zz, yy, xx] if 0 <= zz < d and 0 <= yy < h and 0 <= xx < w else np.zeros(c)
    for b in range(n):
        for idx in np.ndindex(do, ho, wo):
            x, y, z = (coord(grid[(b,) + idx + (k,)], s) for k, s in ((0, w), (1, h), (2, d)))
            if mode == "nearest":
                out[(b, slice(None)) + idx] = voxel(b, int(np.rint(z)), int(np.rint(y)), int(np.rint(x)))
                continue
            z0, y0, x0 = math.floor(z), math.floor(y), math.floor(x)
            for zz, wz in ((z0, 1 - (z - z0)), (z0 + 1, z - z0)):
                for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                    for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                        out[(b, slice(None)) + idx] += wz * wy * wx * voxel(b, zz, yy, xx)
    return out


@pytest.mark.parametrize("mode, padding, align", [("bilinear", "zeros", False), ("bilinear", "reflection", True),
                                                  ("nearest", "border", False)])
def test_grid_sample_5d_against_brute_force(mode, padding, align):
    vol = RNG.normal(size=(2, 2, 3, 4, 5))
    grid = RNG.uniform(-1.4, 1.4, size=(2, 2, 3, 2, 3))
    close(ops.grid_sample(T(vol), T(grid), mode, padding, align), grid_sample_3d_ref(vol, grid, mode, padding, align),
          1e-9)


def test_grid_sample_5d_gradients_and_graph_mode():
    vol = RNG.normal(size=(1, 1, 2, 3, 3))
    grid = RNG.uniform(-1.2, 1.2, size=(1, 1, 2, 2, 3))

    def f(v, g):
        return ops.grid_sample(v, g, "bilinear", "border", False) * T(np.arange(1.0, 5.0).reshape(1, 1, 1, 2, 2))
    gv, gg = ms.grad(lambda v, g: f(v, g).sum(), grad_position=(0, 1))(T(vol), T(grid))
    close(gv, fd_grad(f, [vol, grid], 0), 1e-6)
    close(gg, fd_grad(f, [vol, grid], 1), 1e-5)

    class Warp3d(nn.Cell):
        def construct(self, v, theta):
            return ops.grid_sample(v, ops.affine_grid(theta, (1, 2, 2, 3, 3), True), "bilinear", "zeros", True)

    v = RNG.normal(size=(1, 2, 3, 4, 4)).astype(np.float32)
    theta = (np.eye(3, 4) + RNG.normal(size=(3, 4)) * 0.2)[None].astype(np.float32)
    close(in_graph(Warp3d(), T(v), T(theta)), Warp3d()(T(v), T(theta)).asnumpy(), 1e-5)
    with pytest.raises(ValueError, match=r"grid_sample: grid must be \(N=1, D_out, H_out, W_out, 3\)"):
        ops.grid_sample(T(vol), T(grid[..., :2]))
