"""Vision and generic transforms against independent numpy references.

Resampling convention checked here (OpenCV's, which MindSpore uses): LINEAR/CUBIC sample the source
at (dst + 0.5) * in/out - 0.5 (half-pixel centers), LINEAR clamps to [0, in-1]; NEAREST takes
floor(dst * in/out). Decode is checked against Pillow's decoding of Pillow-encoded fixtures.
"""
import colorsys
import io
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import mycel
from mycel import _mycel
from mycel.dataset import transforms, vision
from mycel.dataset.vision import Border, Inter


def run(op, *cols, seed=0, row=0):
    """Applies op to numpy columns with a fixed (seed, row); returns numpy output(s)."""
    outs = op._handle.apply([mycel.Tensor(np.require(c, requirements="C")) for c in cols], seed, row)
    outs = [o.asnumpy() for o in outs]
    return outs[0] if len(outs) == 1 else outs


def image(h=12, w=16, c=3, seed=0, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, (h, w, c) if c else (h, w), dtype=np.uint8)
    return rng.random((h, w, c) if c else (h, w)).astype(dtype)


# ---------------------------------------------------------------- numpy references

def linear_taps(n_in, n_out):
    f = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    s = np.floor(f).astype(np.int64)
    f = f - s
    f[s < 0], s[s < 0] = 0, 0
    hi = s >= n_in - 1
    f[hi], s[hi] = 0, n_in - 1
    return s, np.minimum(s + 1, n_in - 1), f


def ref_resize_linear(img, oh, ow):
    x = img.astype(np.float64)
    y0, y1, fy = linear_taps(img.shape[0], oh)
    x0, x1, fx = linear_taps(img.shape[1], ow)
    fy = fy.reshape(-1, 1, *([1] * (img.ndim - 2)))
    fx = fx.reshape(1, -1, *([1] * (img.ndim - 2)))
    rows = x[y0] * (1 - fy) + x[y1] * fy
    out = rows[:, x0] * (1 - fx) + rows[:, x1] * fx
    return out


def ref_resize_cubic(img, oh, ow):
    a = -0.75

    def taps(n_in, n_out):
        f = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        s = np.floor(f).astype(np.int64)
        t = f - s
        w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
        w1 = ((a + 2) * t - (a + 3)) * t * t + 1
        w2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) ** 2 + 1
        w = np.stack([w0, w1, w2, 1 - w0 - w1 - w2], 1)
        idx = np.clip(s[:, None] + np.arange(-1, 3)[None], 0, n_in - 1)
        return idx, w

    x = img.astype(np.float64)
    iy, wy = taps(img.shape[0], oh)
    ix, wx = taps(img.shape[1], ow)
    rows = np.einsum("ok,okwc->owc", wy, x[iy])
    return np.einsum("ok,hokc->hoc", wx, rows[:, ix])


def to_u8(x):
    return np.clip(np.floor(x + 0.5), 0, 255).astype(np.uint8)


def gray(img):
    x = img.astype(np.float64)
    return 0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]


def assert_u8_close(got, want):
    """uint8 results computed in float32 vs float64: ties may round apart by one."""
    assert got.shape == want.shape and got.dtype == want.dtype
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.9, (diff.max(), (diff == 0).mean())


# ---------------------------------------------------------------- geometry

@pytest.mark.parametrize("oh,ow", [(24, 32), (5, 7), (12, 16), (3, 40)])
def test_resize_linear_matches_half_pixel_reference(oh, ow):
    img = image()
    assert_u8_close(run(vision.Resize((oh, ow)), img), to_u8(ref_resize_linear(img, oh, ow)))
    f = image(dtype=np.float32)
    np.testing.assert_allclose(run(vision.Resize((oh, ow), Inter.BILINEAR), f),
                               ref_resize_linear(f, oh, ow), atol=1e-5)


def test_resize_nearest_cubic_area():
    img = image(10, 14)
    for oh, ow in [(25, 9), (4, 31)]:
        ys = np.minimum(np.floor(np.arange(oh) * 10 / oh).astype(int), 9)
        xs = np.minimum(np.floor(np.arange(ow) * 14 / ow).astype(int), 13)
        np.testing.assert_array_equal(run(vision.Resize((oh, ow), Inter.NEAREST), img), img[ys][:, xs])
        assert_u8_close(run(vision.Resize((oh, ow), Inter.BICUBIC), img),
                        to_u8(ref_resize_cubic(img, oh, ow)))
    f = image(8, 12, dtype=np.float32)
    blocks = f.reshape(4, 2, 6, 2, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(run(vision.Resize((4, 6), Inter.AREA), f), blocks, atol=1e-6)


def test_resize_shorter_side_and_gray():
    assert run(vision.Resize(6), image(12, 16)).shape == (6, 8, 3)
    assert run(vision.Resize(6), image(20, 10)).shape == (12, 6, 3)
    g = image(9, 9, c=0)
    out = run(vision.Resize((18, 4)), g)
    assert out.shape == (18, 4)
    assert_u8_close(out, to_u8(ref_resize_linear(g, 18, 4)))


def test_crops_exact():
    img = image(11, 14)
    np.testing.assert_array_equal(run(vision.CenterCrop((5, 6)), img), img[3:8, 4:10])
    np.testing.assert_array_equal(run(vision.CenterCrop(4), img), img[3:7, 5:9])
    big = run(vision.CenterCrop((13, 14)), img)  # larger than the image: zero padded
    np.testing.assert_array_equal(big, np.pad(img, ((1, 1), (0, 0), (0, 0))))
    np.testing.assert_array_equal(run(vision.Crop((2, 3), (4, 5)), img), img[2:6, 3:8])
    with pytest.raises(ValueError, match="Crop"):
        run(vision.Crop((9, 3), (4, 5)), img)


def find_crop(src, out):
    h, w = out.shape[:2]
    hits = [(t, l) for t in range(src.shape[0] - h + 1) for l in range(src.shape[1] - w + 1)
            if np.array_equal(src[t:t + h, l:l + w], out)]
    assert hits, "output is not a crop of the input"
    return hits[0]


@pytest.mark.parametrize("mode,np_mode", [(Border.CONSTANT, "constant"), (Border.EDGE, "edge"),
                                          (Border.REFLECT, "reflect"), (Border.SYMMETRIC, "symmetric")])
def test_random_crop_with_padding(mode, np_mode):
    img = image(8, 9)
    op = vision.RandomCrop((8, 9), padding=(2, 3), padding_mode=mode)
    padded = np.pad(img, ((3, 3), (2, 2), (0, 0)), mode=np_mode)
    positions = {find_crop(padded, run(op, img, row=r)) for r in range(30)}
    assert len(positions) > 5  # the position varies with the row
    np.testing.assert_array_equal(run(op, img, row=7), run(op, img, row=7))


def test_random_crop_pad_if_needed_and_errors():
    img = image(5, 6)
    out = run(vision.RandomCrop((8, 6), pad_if_needed=True, fill_value=(1, 2, 3)), img)
    assert out.shape == (8, 6, 3)
    with pytest.raises(ValueError, match="RandomCrop"):
        run(vision.RandomCrop((8, 6)), img)


@pytest.mark.parametrize("padding,np_pad", [(2, ((2, 2), (2, 2))), ((1, 3), ((3, 3), (1, 1))),
                                            ((1, 2, 3, 4), ((2, 4), (1, 3)))])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_matches_numpy(padding, np_pad, mode):
    img = image(5, 6)
    want = np.pad(img, np_pad + ((0, 0),), mode=mode)
    np.testing.assert_array_equal(run(vision.Pad(padding, padding_mode=Border(mode)), img), want)


def test_pad_fill_per_channel_and_float():
    img = image(3, 4, dtype=np.float32)
    out = run(vision.Pad(1, fill_value=(7, 8, 9)), img)
    np.testing.assert_array_equal(out[0, 0], [7, 8, 9])
    np.testing.assert_array_equal(out[1:-1, 1:-1], img)


def test_flips():
    img = image(4, 5)
    np.testing.assert_array_equal(run(vision.HorizontalFlip(), img), img[:, ::-1])
    np.testing.assert_array_equal(run(vision.VerticalFlip(), img), img[::-1])
    np.testing.assert_array_equal(run(vision.RandomHorizontalFlip(1.0), img), img[:, ::-1])
    np.testing.assert_array_equal(run(vision.RandomVerticalFlip(1.0), img), img[::-1])
    np.testing.assert_array_equal(run(vision.RandomHorizontalFlip(0.0), img), img)
    f = image(4, 5, c=0, dtype=np.float32)
    np.testing.assert_array_equal(run(vision.HorizontalFlip(), f), f[:, ::-1])
    flips = [np.array_equal(run(vision.RandomHorizontalFlip(), img, row=r), img[:, ::-1]) for r in range(200)]
    assert 60 < sum(flips) < 140


def test_hwc2chw_and_to_tensor():
    img = image(4, 5)
    np.testing.assert_array_equal(run(vision.HWC2CHW(), img), img.transpose(2, 0, 1))
    with pytest.raises(ValueError, match=r"HWC2CHW.*<H, W, C>.*\(4, 5\)"):
        run(vision.HWC2CHW(), img[..., 0])
    np.testing.assert_allclose(run(vision.ToTensor(), img), img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert run(vision.ToTensor(), img[..., 0]).shape == (1, 4, 5)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_rotate_multiples_of_90_exact(k):
    img = image(7, 7)
    for interp in (Inter.NEAREST, Inter.LINEAR):
        np.testing.assert_array_equal(run(vision.Rotate(90 * k, resample=interp), img), np.rot90(img, k))
    rect = image(4, 6)
    np.testing.assert_array_equal(run(vision.Rotate(90 * k, expand=True), rect), np.rot90(rect, k))
    op = vision.RandomRotation((90 * k, 90 * k))
    np.testing.assert_array_equal(run(op, img, row=3), np.rot90(img, k))


def test_rotate_fill_and_random_range():
    img = np.full((9, 9, 3), 200, np.uint8)
    out = run(vision.Rotate(45, fill_value=(1, 2, 3)), img)
    np.testing.assert_array_equal(out[0, 0], [1, 2, 3])  # corner comes from outside
    np.testing.assert_array_equal(out[4, 4], [200, 200, 200])
    op = vision.RandomRotation(30, expand=True)
    shapes = {run(op, image(8, 8), row=r).shape for r in range(10)}
    assert len(shapes) > 1 and op.is_random


# ---------------------------------------------------------------- RandomResizedCrop

def test_random_resized_crop_box_inside_and_in_range():
    h, w = 40, 50
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    coords = np.stack([yy, xx, np.zeros_like(yy)], -1).astype(np.float32)
    scale, ratio = (0.2, 0.6), (0.5, 2.0)
    op = vision.RandomResizedCrop((200, 200), scale=scale, ratio=ratio, interpolation=Inter.NEAREST)
    boxes = set()
    for r in range(25):
        out = run(op, coords, seed=5, row=r)
        assert out.shape == (200, 200, 3)
        rows, cols = np.unique(out[..., 0]), np.unique(out[..., 1])
        # Upsampling with NEAREST samples every crop row/column: the box is contiguous.
        assert np.array_equal(rows, np.arange(rows[0], rows[-1] + 1))
        assert np.array_equal(cols, np.arange(cols[0], cols[-1] + 1))
        assert 0 <= rows[0] and rows[-1] < h and 0 <= cols[0] and cols[-1] < w
        ch, cw = len(rows), len(cols)
        assert scale[0] * h * w * 0.8 <= ch * cw <= scale[1] * h * w * 1.2
        assert ratio[0] * 0.8 <= cw / ch <= ratio[1] * 1.25
        boxes.add((rows[0], cols[0], ch, cw))
        np.testing.assert_array_equal(out, run(op, coords, seed=5, row=r))
    assert len(boxes) > 10


def test_random_resized_crop_full_image_is_resize():
    img = image(16, 16)
    op = vision.RandomResizedCrop(8, scale=(1.0, 1.0), ratio=(1.0, 1.0))
    np.testing.assert_array_equal(run(op, img, row=4), run(vision.Resize((8, 8)), img))


# ---------------------------------------------------------------- color and value

def test_color_adjust_brightness_contrast_saturation():
    img = image(6, 7)
    out = run(vision.RandomColorAdjust(brightness=(1.3, 1.3)), img)
    assert_u8_close(out, to_u8(img * 1.3))
    out = run(vision.RandomColorAdjust(contrast=(0.6, 0.6)), img)
    assert_u8_close(out, to_u8(0.6 * img + 0.4 * gray(img).mean()))
    out = run(vision.RandomColorAdjust(saturation=(1.7, 1.7)), img)
    assert_u8_close(out, to_u8(1.7 * img + (1 - 1.7) * gray(img)[..., None]))
    np.testing.assert_array_equal(run(vision.RandomColorAdjust(), img), img)
    f = image(6, 7, dtype=np.float32)
    np.testing.assert_allclose(run(vision.RandomColorAdjust(brightness=(1.5, 1.5)), f),
                               np.clip(f * 1.5, 0, 1), atol=1e-6)


def test_color_adjust_hue_matches_colorsys():
    img = image(5, 5)
    shift = 0.2
    want = np.empty_like(img)
    for i in range(5):
        for j in range(5):
            h, s, v = colorsys.rgb_to_hsv(*(img[i, j] / 255.0))
            want[i, j] = to_u8(np.array(colorsys.hsv_to_rgb((h + shift) % 1.0, s, v)) * 255)
    got = run(vision.RandomColorAdjust(hue=(shift, shift)), img)
    assert np.abs(got.astype(int) - want).max() <= 1


def test_color_adjust_random_range_and_errors():
    op = vision.RandomColorAdjust(brightness=0.5, contrast=0.5, saturation=0.5, hue=0.1)
    img = image(6, 6)
    outs = [run(op, img, row=r) for r in range(5)]
    assert len({o.tobytes() for o in outs}) == 5 and op.is_random
    with pytest.raises(ValueError, match="RandomColorAdjust"):
        vision.RandomColorAdjust(hue=0.7)


def test_normalize_and_rescale():
    img = image(4, 5)
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    want = (img.astype(np.float32) - mean) / std
    np.testing.assert_allclose(run(vision.Normalize(mean, std), img), want, rtol=1e-6)
    chw = img.transpose(2, 0, 1).astype(np.float32)
    np.testing.assert_allclose(run(vision.Normalize(mean, std, is_hwc=False), chw),
                               want.transpose(2, 0, 1), rtol=1e-6)
    with pytest.raises(ValueError, match=r"Normalize.*2 values.*\(4, 5, 3\).*3 channels"):
        run(vision.Normalize([1, 2], [1, 1]), img)
    out = run(vision.Rescale(1 / 255, -0.5), img)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, img / 255 - 0.5, atol=1e-6)


def test_enhance_ops():
    img = image(6, 7)
    np.testing.assert_array_equal(run(vision.Invert(), img), 255 - img)
    np.testing.assert_array_equal(run(vision.Posterize(3), img), img & 0b11100000)
    np.testing.assert_array_equal(run(vision.Solarize(128), img), np.where(img >= 128, 255 - img, img))
    lo, hi = img.min((0, 1)), img.max((0, 1))
    assert_u8_close(run(vision.AutoContrast(), img), to_u8((img - lo) * (255.0 / (hi - lo))))
    eq = run(vision.Equalize(), img)
    assert eq.shape == img.shape and eq.dtype == np.uint8
    PIL = pytest.importorskip("PIL")
    from PIL import Image, ImageOps
    np.testing.assert_array_equal(eq, np.asarray(ImageOps.equalize(Image.fromarray(img))))


# ---------------------------------------------------------------- Decode

def encode(arr, fmt, **kw):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, fmt, **kw)
    return np.frombuffer(buf.getvalue(), np.uint8)


def pil_decode(data):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(data.tobytes())).convert("RGB"))


def test_decode_png_exact():
    pytest.importorskip("PIL")
    from PIL import Image
    rgb = image(13, 17)
    for arr in (rgb, rgb[..., 0], np.dstack([rgb, rgb[..., :1]])):  # RGB, L, RGBA
        data = encode(arr, "PNG")
        np.testing.assert_array_equal(run(vision.Decode(), data), pil_decode(data))
    buf = io.BytesIO()  # palette
    Image.fromarray(rgb).convert("P").save(buf, "PNG")
    data = np.frombuffer(buf.getvalue(), np.uint8)
    np.testing.assert_array_equal(run(vision.Decode(), data), pil_decode(data))
    buf = io.BytesIO()  # interlaced, 16-bit gray
    Image.fromarray((rgb[..., 0].astype(np.uint16) * 257)).save(buf, "PNG")
    out = run(vision.Decode(), np.frombuffer(buf.getvalue(), np.uint8))
    np.testing.assert_array_equal(out, np.repeat(rgb[..., :1], 3, axis=2))


def test_decode_jpeg_close_to_pillow():
    pytest.importorskip("PIL")
    rgb = image(24, 31)
    rgb = np.clip(ref_resize_linear(image(6, 8), 24, 31), 0, 255).astype(np.uint8)  # smooth
    for arr in (rgb, rgb[..., 1]):
        data = encode(arr, "JPEG", quality=90)
        got = run(vision.Decode(), data)
        want = pil_decode(data)
        assert got.shape == want.shape == (24, 31, 3) and got.dtype == np.uint8
        assert np.abs(got.astype(int) - want).max() <= 2
    eager = vision.Decode()(data.tobytes())
    assert isinstance(eager, np.ndarray) and eager.shape == (24, 31, 3)


def png_chunk(png, kind):
    """(offset, length) of the first chunk of `kind` in PNG bytes."""
    pos = 8
    while pos < len(png):
        n, t = struct.unpack(">I4s", png[pos:pos + 8])
        if t == kind:
            return pos, n
        pos += 12 + n
    raise AssertionError(f"no {kind} chunk")


def fix_crc(png, pos):
    """Rewrites the CRC of the chunk at `pos` to match its (changed) type and data."""
    n = struct.unpack(">I", png[pos:pos + 4])[0]
    png[pos + 8 + n:pos + 12 + n] = struct.pack(">I", zlib.crc32(bytes(png[pos + 4:pos + 8 + n])))


def test_decode_png_checks_adler32_and_every_crc():
    pytest.importorskip("PIL")
    good = bytearray(encode(image(20, 20), "PNG").tobytes())
    pos, n = png_chunk(good, b"IDAT")
    stream = bytes(good[pos + 8:pos + 8 + n])
    # The zlib stream's Adler-32 (its last 4 bytes) is wrong, every chunk CRC right; the stream is
    # split so the checksum sits in an IDAT of its own, as encoders may do. Only zlib's check sees
    # the damage, once the last row is decoded: libpng calls that a "benign" error and, by
    # default, only warns.
    bad_stream = stream[:-1] + bytes([stream[-1] ^ 1])
    with pytest.raises(zlib.error, match="incorrect data check"):  # the reference agrees
        zlib.decompress(bad_stream)

    def idat(data):
        c = bytearray(struct.pack(">I4s", len(data), b"IDAT") + data + bytes(4))
        fix_crc(c, 0)
        return bytes(c)
    for s, ok in ((stream, True), (bad_stream, False)):
        split = bytes(good[:pos]) + idat(s[:-4]) + idat(s[-4:]) + bytes(good[pos + 12 + n:])
        if ok:
            got = run(vision.Decode(), np.frombuffer(split, np.uint8))
            np.testing.assert_array_equal(got, image(20, 20))
        else:
            with pytest.raises(RuntimeError, match="Decode.*incorrect data check"):
                run(vision.Decode(), np.frombuffer(split, np.uint8))
    # A wrong CRC on the image data, and on an ancillary chunk (a tEXt inserted after IHDR).
    bad = bytearray(good)
    bad[pos + 8 + n] ^= 1
    with pytest.raises(RuntimeError, match="Decode.*CRC"):
        run(vision.Decode(), np.frombuffer(bytes(bad), np.uint8))
    text = b"Comment\0hello"
    chunk = bytearray(struct.pack(">I4s", len(text), b"tEXt") + text + bytes(4))
    fix_crc(chunk, 0)
    chunk[-1] ^= 1
    ihdr_end = 8 + 12 + 13
    bad = good[:ihdr_end] + chunk + good[ihdr_end:]
    assert zlib.crc32(bytes(chunk[4:-4])) != struct.unpack(">I", chunk[-4:])[0]
    with pytest.raises(RuntimeError, match="Decode.*CRC"):
        run(vision.Decode(), np.frombuffer(bytes(bad), np.uint8))
    got = run(vision.Decode(), np.frombuffer(bytes(good), np.uint8))
    np.testing.assert_array_equal(got, image(20, 20))


def test_decode_corrupt_data_raises_cleanly():
    pytest.importorskip("PIL")
    rgb = image(20, 20)
    for fmt in ("JPEG", "PNG"):
        data = encode(rgb, fmt)
        bad = data.copy()  # JPEG has no checksum: break its markers; PNG's CRC catches any byte
        if fmt == "JPEG":
            bad[2:42] = 7
        else:
            bad[len(bad) // 3: len(bad) // 3 + 40] = 7
        cases = [data[: len(data) // 2], data[:12], bad]
        for case in cases:
            with pytest.raises(RuntimeError, match="Decode"):
                run(vision.Decode(), case)
    with pytest.raises(RuntimeError, match="Decode.*unsupported"):
        run(vision.Decode(), np.frombuffer(b"GIF89a" + bytes(30), np.uint8))
    with pytest.raises(ValueError, match="Decode.*1-d uint8"):
        run(vision.Decode(), rgb)


# ---------------------------------------------------------------- composites and generic

def test_compose_randomapply_randomchoice():
    img = image(4, 5, dtype=np.float32)
    comp = transforms.Compose([vision.HorizontalFlip(), lambda x: x * 2, vision.Rescale(1.0, 1.0)])
    np.testing.assert_allclose(run(comp, img), img[:, ::-1] * 2 + 1, rtol=1e-6)
    flip = [vision.HorizontalFlip(), vision.VerticalFlip()]
    np.testing.assert_array_equal(run(transforms.RandomApply(flip, prob=0.0), img), img)
    np.testing.assert_array_equal(run(transforms.RandomApply(flip, prob=1.0), img), img[::-1, ::-1])
    choice = transforms.RandomChoice([vision.Rescale(0.0, float(k)) for k in range(3)])
    picks = [int(run(choice, img, row=r)[0, 0, 0]) for r in range(90)]
    counts = np.bincount(picks, minlength=3)
    assert (counts > 15).all(), counts
    assert choice.is_random and not transforms.Compose([vision.HWC2CHW()]).is_random


def test_typecast_onehot():
    x = np.array([1, 2, 3], np.int32)
    out = run(transforms.TypeCast(mycel.float32), x)
    assert out.dtype == np.float32 and np.array_equal(out, x)
    assert run(transforms.TypeCast(np.int64), x).dtype == np.int64
    np.testing.assert_array_equal(run(transforms.OneHot(4), np.array(2, np.int64)), [0, 0, 1, 0])
    np.testing.assert_array_equal(run(transforms.OneHot(4), x), np.eye(4, dtype=np.int32)[x])
    sm = run(transforms.OneHot(4, smoothing_rate=0.2), np.array(1))
    np.testing.assert_allclose(sm, [0.05, 0.85, 0.05, 0.05], rtol=1e-6)
    with pytest.raises(ValueError, match="OneHot"):
        run(transforms.OneHot(4), np.array(4))


RANDOM_OPS = [
    lambda: vision.RandomCrop(6, padding=2),
    lambda: vision.RandomResizedCrop(8),
    lambda: vision.RandomHorizontalFlip(),
    lambda: vision.RandomRotation(40),
    lambda: vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1),
    lambda: vision.RandAugment(),
    lambda: vision.RandAugment(num_ops=3, magnitude=20, interpolation=Inter.LINEAR, fill_value=(9, 9, 9)),
    lambda: vision.UniformAugment([vision.RandomCrop(10), vision.Invert(), vision.Equalize(),
                                   vision.RandomRotation(20)], num_ops=3),
    lambda: transforms.RandomChoice([vision.Invert(), vision.HorizontalFlip(), vision.Posterize(2)]),
]


@pytest.mark.parametrize("make", RANDOM_OPS)
def test_random_ops_deterministic_per_seed_and_row(make):
    op = make()
    img = image(10, 10)
    assert op.is_random
    a = run(op, img, seed=3, row=11)
    np.testing.assert_array_equal(a, run(op, img, seed=3, row=11))
    np.testing.assert_array_equal(a, run(make(), img, seed=3, row=11))
    outs = {run(op, img, seed=3, row=r).tobytes() for r in range(12)}
    assert len(outs) > 1
    assert any(run(op, img, seed=4, row=r).tobytes() != run(op, img, seed=3, row=r).tobytes()
               for r in range(12))


@pytest.mark.parametrize("make", RANDOM_OPS[5:8])
def test_augment_valid_images(make):
    op = make()
    img = image(16, 16)
    for r in range(30):
        out = run(op, img, row=r)
        assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
        if "RandAugment" in repr(op):
            assert out.shape == img.shape


def test_randaugment_rejects_float():
    with pytest.raises(ValueError, match="RandAugment.*uint8"):
        run(vision.RandAugment(), image(8, 8, dtype=np.float32))


def test_results_independent_of_threads():
    op = transforms.Compose([vision.RandomResizedCrop(12), vision.RandAugment(), vision.RandomHorizontalFlip()])
    img = image(32, 32)
    serial = [run(op, img, seed=1, row=r) for r in range(24)]
    with ThreadPoolExecutor(4) as ex:
        threaded = list(ex.map(lambda r: run(op, img, seed=1, row=r), range(24)))
    for s, t in zip(serial, threaded):
        np.testing.assert_array_equal(s, t)


def test_same_draws_for_every_column():
    img = image(12, 12)
    mask = img[..., 0].copy()
    a, b = run(vision.RandomResizedCrop(6, interpolation=Inter.NEAREST), img, mask, row=2)
    np.testing.assert_array_equal(a[..., 0], b)


def test_errors_name_transform_and_shape():
    with pytest.raises(ValueError, match=r"Resize.*<H, W> or <H, W, C>.*\(7,\)"):
        run(vision.Resize(4), np.zeros(7, np.uint8))
    with pytest.raises(ValueError, match="Resize"):
        vision.Resize((0, 3))
    with pytest.raises(ValueError, match="interpolation"):
        vision.Resize(3, Inter.PILCUBIC)
    with pytest.raises(TypeError, match="Resize.*uint8 or float32"):
        run(vision.Resize(4), np.zeros((5, 5), np.int32))
    with pytest.raises(ValueError, match="UniformAugment"):
        vision.UniformAugment([vision.Invert()], num_ops=2)


def test_eager_calls_return_numpy_or_tensor():
    img = image(8, 8)
    out = vision.Resize((4, 4))(img)
    assert isinstance(out, np.ndarray) and out.shape == (4, 4, 3)
    t = vision.HWC2CHW()(mycel.Tensor(img))
    assert isinstance(t, _mycel.Tensor) and tuple(t.shape) == (3, 8, 8)
    assert isinstance(vision.RandomCrop(4)(img), np.ndarray)
    assert hasattr(vision.Resize(4), "_handle") and hasattr(transforms.Compose([vision.Invert()]), "_handle")


def test_decode_fuzzed_bytes_never_crash():
    pytest.importorskip("PIL")
    rng = np.random.default_rng(1)
    sources = [encode(image(16, 16), "JPEG"), encode(image(16, 16), "PNG"),
               encode(image(16, 16), "JPEG", progressive=True)]
    ok = failed = 0
    for data in sources:
        for _ in range(150):
            bad = data.copy()
            pos = rng.integers(0, len(bad), rng.integers(1, 6))
            bad[pos] = rng.integers(0, 256, len(pos))
            bad = bad[: rng.integers(len(bad) // 2, len(bad) + 1)]
            try:
                out = run(vision.Decode(), bad)
                assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
                ok += 1
            except RuntimeError as e:
                assert "Decode" in str(e)
                failed += 1
    assert failed > 0
