"""Bilinear Resize of one-channel images, whose horizontal pass runs 8 outputs at a time (lane
permutes where a block of outputs reads within 8 source values, gathers otherwise): equal bit
for bit to the scalar pass that three-channel images take, and to a float64 half-pixel reference
within rounding. Sizes cover enlargements (LeNet5's 28 -> 32), mild and strong reductions, and
widths that leave a partial block."""
import numpy as np
import pytest

from mycel.dataset import vision
from mycel.dataset.vision import Inter

from test_dataset_vision import assert_u8_close, ref_resize_linear, run, to_u8

SIZES = [((28, 28), (32, 32)), ((28, 28), (30, 45)), ((10, 12), (20, 40)), ((32, 32), (28, 28)),
         ((50, 60), (9, 17)), ((7, 9), (5, 8)), ((5, 3), (11, 23))]


@pytest.mark.parametrize("src,dst", SIZES)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_one_channel_equals_the_scalar_pass_and_the_reference(src, dst, dtype):
    rng = np.random.default_rng(sum(src) + sum(dst))
    if dtype == np.uint8:
        img = rng.integers(0, 256, src + (1,), dtype=np.uint8)
    else:
        img = (rng.random(src + (1,)) * 255).astype(np.float32)
    op = vision.Resize(dst, Inter.LINEAR)
    one = run(op, img)
    three = run(op, np.ascontiguousarray(np.repeat(img, 3, axis=2)))  # the scalar loop
    assert one.shape == dst + (1,) and one.dtype == dtype
    np.testing.assert_array_equal(one[..., 0], three[..., 0])
    np.testing.assert_array_equal(run(op, img[..., 0]), one[..., 0])  # (H, W) images alike
    want = ref_resize_linear(img.astype(np.float64), *dst)
    if dtype == np.uint8:
        assert_u8_close(one, to_u8(want))
    else:
        np.testing.assert_allclose(one, want, rtol=1e-5, atol=1e-3)


def test_alternating_geometries_on_one_thread():
    """The tap tables are cached per thread: a permute table must not outlive its geometry."""
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (28, 28, 1), dtype=np.uint8)
    b = rng.integers(0, 256, (64, 64, 1), dtype=np.uint8)
    up, down = vision.Resize((32, 32)), vision.Resize((20, 20))
    first = [run(up, a), run(down, b)]
    for _ in range(3):
        np.testing.assert_array_equal(run(up, a), first[0])
        np.testing.assert_array_equal(run(down, b), first[1])
    np.testing.assert_array_equal(first[0][..., 0], run(up, np.repeat(a, 3, axis=2))[..., 0])
    np.testing.assert_array_equal(first[1][..., 0], run(down, np.repeat(b, 3, axis=2))[..., 0])
