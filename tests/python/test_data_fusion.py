"""Fused image transforms and map-and-batch (src/mycel/data/vision/pixel_chain.h, engine/map_op.h):
every pipeline gives the same batches, bit for bit, and the same errors, with fusion on and off
(MYCEL_DATA_FUSE=0); the fused arithmetic also matches numpy references."""
import numpy as np
import pytest

import mycel.dataset as ds
from mycel.dataset import transforms, vision
import mycel


def _run(monkeypatch, make, fuse, epochs=1):
    if fuse:
        monkeypatch.delenv("MYCEL_DATA_FUSE", raising=False)
    else:
        monkeypatch.setenv("MYCEL_DATA_FUSE", "0")
    it = make().create_tuple_iterator(num_epochs=epochs, output_numpy=True)
    out = []
    for _ in range(epochs):
        out.extend([c.copy() for c in row] for row in it)
    return out


def _same(monkeypatch, make, epochs=1):
    """The pipeline's rows with fusion on, after checking they equal the unfused rows exactly."""
    fused, plain = _run(monkeypatch, make, True, epochs), _run(monkeypatch, make, False, epochs)
    assert len(fused) == len(plain) and fused
    for a, b in zip(fused, plain):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    return fused


def _images(n, shape, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, (n,) + shape).astype(np.uint8)
    return rng.random((n,) + shape).astype(dtype)


def _fma32(x, scale, shift):
    """float32 fma(x, scale, shift): the product is exact in float64, one rounding after the add
    (a double rounding, so within one float32 ulp of the exact fma)."""
    return (x.astype(np.float64) * np.float32(scale) + np.float32(shift)).astype(np.float32)


def test_mnist_chain_matches_unfused_and_numpy(monkeypatch):
    imgs = _images(40, (28, 28, 1))
    labels = np.arange(40, dtype=np.int32)
    ops = [vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0),
           vision.Rescale(1 / 0.3530, -0.2860 / 0.3530), vision.HWC2CHW()]

    def make():
        d = ds.NumpySlicesDataset({"image": imgs, "label": labels}, shuffle=False)
        return d.map(ops, input_columns="image").batch(16)  # 16, 16, then a partial 8

    rows = _same(monkeypatch, make)
    assert [r[0].shape for r in rows] == [(16, 1, 32, 32), (16, 1, 32, 32), (8, 1, 32, 32)]
    np.testing.assert_array_equal(np.concatenate([r[1] for r in rows]), labels)
    # the reference: the Resize transform alone (tested against OpenCV's conventions elsewhere),
    # then the two affine maps and the transpose in numpy
    resized = np.stack([vision.Resize((32, 32))(im) for im in imgs])
    ref = _fma32(_fma32(resized.astype(np.float32), 1.0 / 255.0, 0.0), 1 / 0.3530, -0.2860 / 0.3530)
    got = np.concatenate([r[0] for r in rows])
    np.testing.assert_allclose(got, ref.transpose(0, 3, 1, 2), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("interp", [vision.Inter.LINEAR, vision.Inter.CUBIC, vision.Inter.AREA])
def test_rgb_normalize_chains(monkeypatch, interp):
    imgs = _images(12, (20, 24, 3))
    mean, std = [120.0, 110.0, 100.0], [60.0, 55.0, 50.0]
    ops = [vision.Resize((16, 12), interp), vision.Normalize(mean, std), vision.HWC2CHW()]

    def make():
        return ds.NumpySlicesDataset({"image": imgs}, shuffle=False).map(ops).batch(5)

    rows = _same(monkeypatch, make)
    resized = np.stack([vision.Resize((16, 12), interp)(im) for im in imgs]).astype(np.float32)
    inv = (1.0 / np.array(std)).astype(np.float32)
    ref = ((resized - np.array(mean, np.float32)) * inv).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(np.concatenate([r[0] for r in rows]), ref)


def test_normalize_after_transpose_and_typecast(monkeypatch):
    imgs = _images(9, (6, 5, 3), np.float32, seed=1)
    ops = [transforms.TypeCast(mycel.float32), vision.HWC2CHW(),
           vision.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3], is_hwc=False), vision.Rescale(2.0, -1.0)]

    def make():
        return ds.NumpySlicesDataset({"image": imgs}, shuffle=False).map(ops).batch(4, drop_remainder=True)

    rows = _same(monkeypatch, make)
    x = imgs.transpose(0, 3, 1, 2)
    inv = (1.0 / np.array([0.2, 0.25, 0.3])).astype(np.float32)
    ref = _fma32((x - np.array([0.5, 0.4, 0.3], np.float32)[:, None, None]) * inv[:, None, None], 2.0, -1.0)
    np.testing.assert_allclose(np.concatenate([r[0] for r in rows]), ref[:8], rtol=1e-6, atol=1e-6)


def test_uint8_chain_without_float_stage_and_gray_images(monkeypatch):
    imgs = _images(6, (10, 14, 3))
    gray = _images(6, (10, 14), seed=2)

    def make():
        d = ds.NumpySlicesDataset({"a": imgs, "b": gray}, shuffle=False)
        d = d.map([vision.Resize(7), vision.HWC2CHW()], input_columns="a")
        return d.map([vision.Resize((5, 5)), vision.Rescale(0.5, 1.0)], input_columns="b").batch(3)

    rows = _same(monkeypatch, make)
    assert rows[0][0].dtype == np.uint8 and rows[0][0].shape == (3, 3, 7, 9)
    assert rows[0][1].dtype == np.float32 and rows[0][1].shape == (3, 5, 5)


def test_map_alone_multi_column_and_epochs(monkeypatch):
    a, b = _images(7, (8, 8, 2)), _images(7, (8, 8, 2), seed=3)
    ops = [vision.Rescale(1 / 255.0, 0.0), vision.HWC2CHW()]

    def make():  # no batch: the map's own workers run the fused chain, both columns alike
        return ds.NumpySlicesDataset({"a": a, "b": b}, shuffle=False).map(ops, input_columns=["a", "b"])

    rows = _same(monkeypatch, make, epochs=2)
    assert len(rows) == 14
    np.testing.assert_allclose(rows[3][1], _fma32(b[3], 1 / 255.0, 0.0).transpose(2, 0, 1), rtol=1e-6)


def test_random_and_python_transforms_keep_their_draws(monkeypatch):
    """A map with random and Python transforms under a batch runs on the batch's workers: the
    same seeds per row as the map's own workers, whatever the worker count."""
    imgs = _images(30, (12, 12, 3))

    def noise(img):
        rng = np.random.default_rng(ds.get_row_seed())
        return (img + rng.random(img.shape, dtype=np.float32)).astype(np.float32)

    def make(workers=3):
        d = ds.NumpySlicesDataset({"image": imgs}, shuffle=True)
        d = d.map([vision.RandomHorizontalFlip(0.5), vision.Resize(10), vision.Rescale(1 / 255.0, 0.0),
                   noise, vision.HWC2CHW()], num_parallel_workers=workers)
        return d.batch(8, num_parallel_workers=1)

    mycel.set_seed(7)
    rows = _same(monkeypatch, make, epochs=2)
    one = _run(monkeypatch, lambda: make(1), True, epochs=2)
    for a, b in zip(rows, one):
        np.testing.assert_array_equal(a[0], b[0])


def test_ragged_images_fall_back(monkeypatch):
    imgs = [_images(1, (h, 9, 1), seed=h)[0] for h in (5, 6, 7, 8)]

    def gen():
        for im in imgs:
            yield (im,)

    def resized():  # Resize makes every image 4x4: the batch is fine, via per-row chains
        return ds.GeneratorDataset(gen, ["image"]).map([vision.Resize((4, 4)), vision.Rescale(2.0, 0.0)]).batch(4)

    assert _same(monkeypatch, resized)[0][0].shape == (4, 4, 4, 1)

    def ragged():
        return ds.GeneratorDataset(gen, ["image"]).map([vision.Rescale(2.0, 0.0), vision.HWC2CHW()]).batch(4)

    msgs = []
    for fuse in (True, False):
        with pytest.raises(ValueError) as e:
            _run(monkeypatch, ragged, fuse)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "equal shapes" in msgs[0]


@pytest.mark.parametrize("case", ["hwc2chw_on_gray", "normalize_channels", "int_image"])
def test_errors_are_the_unfused_errors(monkeypatch, case):
    if case == "hwc2chw_on_gray":
        data, ops = _images(4, (5, 5)), [vision.Resize(4), vision.Rescale(1.0, 0.0), vision.HWC2CHW()]
    elif case == "normalize_channels":
        data, ops = _images(4, (5, 5, 1)), [vision.Resize(4), vision.Normalize([1.0, 2.0], [1.0, 1.0])]
    else:  # int32 pixels: Resize refuses them
        data, ops = _images(4, (5, 5, 1)).astype(np.int32), [vision.Resize(4), vision.Rescale(1.0, 0.0)]

    msgs = []
    for fuse in (True, False):
        def make():
            return ds.NumpySlicesDataset({"image": data}, shuffle=False).map(ops).batch(2)
        with pytest.raises((ValueError, TypeError)) as e:
            _run(monkeypatch, make, fuse)
        msgs.append((type(e.value), str(e.value)))
    assert msgs[0] == msgs[1]
    assert "map: operation" in msgs[0][1]


def test_padded_batch_column(monkeypatch):
    imgs = _images(6, (5, 5, 1))

    def make():
        d = ds.NumpySlicesDataset({"image": imgs}, shuffle=False)
        return d.map([vision.Rescale(1.0, 0.5), vision.HWC2CHW()]).batch(3, pad_info={"image": ([1, 6, 7], -1)})

    rows = _same(monkeypatch, make)
    assert rows[0][0].shape == (3, 1, 6, 7) and rows[0][0][0, 0, 5, 6] == -1
