"""The one-pass row kernel of a fused image chain (resize_u8c1_float, src/mycel/data/vision/
resize.cc): a one-channel uint8 image resized bilinearly, rounded to uint8, converted to float and
rescaled/normalized in one pass per output row. Every batch must equal, bit for bit, the same
pipeline with the row pass off (MYCEL_DATA_ROWPASS=0: the fused chain's separate passes) and with
fusion off (MYCEL_DATA_FUSE=0: the transforms one by one). Run this file under both
OMP_WAIT_POLICY settings (the batch fills its rows over the OpenMP pool)."""
import numpy as np
import pytest

import mycel.dataset as ds
from mycel.dataset import vision

MODES = {"row pass": {}, "fused, no row pass": {"MYCEL_DATA_ROWPASS": "0"},
         "unfused": {"MYCEL_DATA_FUSE": "0"}}


def _rows(monkeypatch, make, env):
    for k in ("MYCEL_DATA_ROWPASS", "MYCEL_DATA_FUSE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return [[c.copy() for c in row] for row in make().create_tuple_iterator(num_epochs=1, output_numpy=True)]


def _all_equal(monkeypatch, make):
    out = {name: _rows(monkeypatch, make, env) for name, env in MODES.items()}
    ref = out["unfused"]
    assert ref
    for name, rows in out.items():
        assert len(rows) == len(ref), name
        for a, b in zip(rows, ref):
            for x, y in zip(a, b):
                assert x.dtype == y.dtype and x.shape == y.shape, name
                # bit for bit: compare the bytes (assert_array_equal would let -0.0 == 0.0 pass)
                assert x.tobytes() == y.tobytes(), name
    return ref


def _images(n, shape, seed=0, extremes=True):
    rng = np.random.default_rng(seed)
    imgs = rng.integers(0, 256, (n,) + shape).astype(np.uint8)
    if extremes and n >= 3:  # all-black, all-white and a 0/255 checkerboard
        imgs[0] = 0
        imgs[1] = 255
        cb = (np.indices(shape[:2]).sum(0) % 2 * 255).astype(np.uint8)
        imgs[2] = np.broadcast_to(cb.reshape(shape[:2] + (1,) * (len(shape) - 2)), shape)
    return imgs


HARNESS = [vision.Rescale(1.0 / 255.0, 0.0), vision.Rescale(1 / 0.3530, -0.2860 / 0.3530), vision.HWC2CHW()]


@pytest.mark.parametrize("in_shape,size", [
    ((28, 28, 1), (32, 32)),   # the harness's Fashion-MNIST chain
    ((28, 28, 1), (56, 40)),   # a larger enlargement, width not a multiple of 8 after a block
    ((17, 23, 1), (32, 29)),   # odd sizes both ways
    ((28, 28, 1), (14, 13)),   # a reduction: the horizontal taps take the gather path
    ((31, 9, 1), (5, 70)),     # shrink one axis, stretch the other
    ((28, 28, 1), 30),         # the shorter side (aspect kept)
    ((1, 1, 1), (3, 7)),       # one pixel
    ((28, 28, 1), (28, 28)),   # same size
])
def test_harness_chain_bit_exact(monkeypatch, in_shape, size):
    imgs = _images(21, in_shape)
    labels = np.arange(21, dtype=np.int32)

    def make():
        d = ds.NumpySlicesDataset({"image": imgs, "label": labels}, shuffle=False)
        return d.map([vision.Resize(size)] + HARNESS, input_columns="image").batch(8)  # 8, 8, 5

    rows = _all_equal(monkeypatch, make)
    np.testing.assert_array_equal(np.concatenate([r[1] for r in rows]), labels)
    # independent reference: Resize alone (checked against OpenCV's conventions in test_vision*),
    # then the two fmas in float64 (exact product, one rounding of the sum: within an ulp)
    resized = np.stack([vision.Resize(size)(im) for im in imgs]).astype(np.float64)
    ref = resized * np.float32(1.0 / 255.0)
    ref = (ref.astype(np.float32).astype(np.float64) * np.float32(1 / 0.3530) +
           np.float32(-0.2860 / 0.3530)).astype(np.float32)
    got = np.concatenate([r[0] for r in rows])
    np.testing.assert_allclose(got, ref.transpose(0, 3, 1, 2), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("interp", [vision.Inter.LINEAR, vision.Inter.AREA, vision.Inter.CUBIC,
                                    vision.Inter.NEAREST])
@pytest.mark.parametrize("size", [(32, 32), (12, 20)])
def test_interpolations(monkeypatch, interp, size):
    # AREA enlarging is bilinear (row pass); AREA shrinking, CUBIC and NEAREST keep their kernels
    imgs = _images(9, (28, 28, 1), seed=1)

    def make():
        return ds.NumpySlicesDataset({"image": imgs}, shuffle=False).map(
            [vision.Resize(size, interp)] + HARNESS).batch(4)

    _all_equal(monkeypatch, make)


@pytest.mark.parametrize("tail", [
    [vision.Rescale(1.0 / 255.0, 0.0)],
    [vision.Normalize([33.3], [77.7])],
    [vision.Normalize([33.3], [77.7], is_hwc=True), vision.Rescale(0.5, -1.0), vision.HWC2CHW()],
    [vision.HWC2CHW(), vision.Normalize([12.0], [3.0], is_hwc=False)],
    [vision.TypeCast(np.float32) if hasattr(vision, "TypeCast") else vision.Rescale(1.0, 0.0)],
    [vision.Rescale(-1.0, 0.0), vision.Rescale(1.0, 0.0)],  # negative results and -0.0
])
def test_other_float_stages(monkeypatch, tail):
    imgs = _images(10, (19, 26, 1), seed=2)

    def make():
        return ds.NumpySlicesDataset({"image": imgs}, shuffle=False).map(
            [vision.Resize((24, 33))] + tail).batch(3)

    _all_equal(monkeypatch, make)


def test_gray_2d_map_alone_and_float_input(monkeypatch):
    gray = _images(7, (15, 22), seed=3)  # (h, w) images: one channel, no channel axis
    flt = np.random.default_rng(4).random((7, 15, 22, 1)).astype(np.float32) * 255  # not uint8
    rgb = _images(7, (15, 22, 3), seed=5)  # three channels: not the row pass
    for imgs in (gray, flt, rgb):
        def make(imgs=imgs):  # map alone (no batch): the chain's own per-image output
            return ds.NumpySlicesDataset({"image": imgs}, shuffle=False).map(
                [vision.Resize((31, 17)), vision.Rescale(1.0 / 255.0, 0.0)])

        _all_equal(monkeypatch, make)

        def make_b(imgs=imgs):
            return ds.NumpySlicesDataset({"image": imgs}, shuffle=False).map(
                [vision.Resize((31, 17)), vision.Rescale(1.0 / 255.0, 0.1)]).batch(7)

        _all_equal(monkeypatch, make_b)


def _write_idx(path, array, magic):
    import struct
    head = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    path.write_bytes(head + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("rows,cols", [(28, 28), (13, 7)])
def test_shuffled_mnist_on_consumer_every_switch(monkeypatch, tmp_path, rows, cols):
    """The harness's pipeline over a shuffled MnistDataset, read as Model.train's loop reads it
    (on the consumer: the row pass and the source's row prefetch) and through the plain
    iterator: every switch gives the unfused pipeline's batches, in the same order."""
    import mycel
    rng = np.random.default_rng(7)
    imgs = rng.integers(0, 256, (150, rows, cols)).astype(np.uint8)
    labels = rng.integers(0, 10, 150).astype(np.uint8)
    _write_idx(tmp_path / "train-images-idx3-ubyte", imgs, 0x803)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", labels, 0x801)

    def make():
        d = ds.MnistDataset(str(tmp_path), usage="train", shuffle=True)
        return d.map([vision.Resize((32, 32))] + HARNESS, input_columns="image").batch(
            16, drop_remainder=True)

    def consumer_rows(env):
        for k in ("MYCEL_DATA_ROWPASS", "MYCEL_DATA_FUSE", "MYCEL_DATA_PREFETCH_ROWS"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        it = make()._create_sink_iterator(num_epochs=2)
        out = []
        while True:
            try:
                row = it._pipe.next(True)
            except StopIteration:
                break
            if row is not None:
                out.append([np.array(c, copy=True) for c in row])
        return out, it._pipe.on_consumer

    mycel.set_seed(3)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    ref, on = consumer_rows({"MYCEL_DATA_FUSE": "0"})
    assert len(ref) == 2 * (150 // 16) and not on
    for env in ({}, {"MYCEL_DATA_PREFETCH_ROWS": "0"}, {"MYCEL_DATA_PREFETCH_ROWS": "1"},
                {"MYCEL_DATA_ROWPASS": "0"}):
        got, on = consumer_rows(env)
        assert on, env
        assert len(got) == len(ref), env
        for a, b in zip(got, ref):
            for x, y in zip(a, b):
                assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), env
