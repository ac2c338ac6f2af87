"""The remaining MindSpore image sources (Caltech101/256, Cityscapes, DIV2K, FakeImage, Food101, KITTI,
LFW, LSUN, Manifest, Omniglot, PhotoTour, QMnist, RandomDataset, RenderedSST2, Semeion, SUN397,
USPS, WIDERFace) as a MindSpore user calls them, on small trees written here in each set's on-disk
layout (images by Pillow, .mat by scipy.io.savemat, IDX by struct, text files by hand): every column
against what was written, sharding, and a clear error naming the missing file of a broken layout."""
import json
import struct

import numpy as np
import pytest
import scipy.io
from PIL import Image

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _png(path, seed, size=(5, 4), mode="RGB"):
    """Writes a random PNG; returns its pixels."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    arr = rng.integers(0, 256, shape, dtype=np.uint8)
    Image.fromarray(arr, mode).save(path, format="PNG")
    return arr


def _jpg(path, seed):
    """A file named .jpg; its bytes are a PNG (the sources pass bytes through, and decode sniffs)."""
    return _png(path, seed)


def _check_shards(make, n):
    """Two shards split the rows, each row in exactly one, and a shard holds ceil(n / 2) rows."""
    a = make(num_shards=2, shard_id=0, shuffle=False)
    b = make(num_shards=2, shard_id=1, shuffle=False)
    assert a.get_dataset_size() == b.get_dataset_size() == (n + 1) // 2


# ---- folder sources -------------------------------------------------------------------------

def test_caltech101(tmp_path):
    imgs, contours = {}, {}
    for cls, n in (("Faces", 2), ("BACKGROUND_Google", 1), ("ant", 1)):
        for k in range(1, n + 1):
            imgs[(cls, k)] = _jpg(tmp_path / "101_ObjectCategories" / cls / f"image_{k:04d}.jpg", hash((cls, k)) % 97)
            ann = {"Faces": "Faces_2"}.get(cls, cls)
            contours[(cls, k)] = np.arange(6.0).reshape(2, 3) + k
            (tmp_path / "Annotations" / ann).mkdir(parents=True, exist_ok=True)
            scipy.io.savemat(tmp_path / "Annotations" / ann / f"annotation_{k:04d}.mat",
                             {"obj_contour": contours[(cls, k)]})
    got = _rows(ds.Caltech101Dataset(str(tmp_path), shuffle=False))
    assert [int(r[1]) for r in got] == [0, 0, 1]  # BACKGROUND_Google is left out
    raw = (tmp_path / "101_ObjectCategories" / "ant" / "image_0001.jpg").read_bytes()
    assert got[2][0].tobytes() == raw and got[2][1].dtype == np.uint32
    got = _rows(ds.Caltech101Dataset(str(tmp_path), target_type="all", decode=True, shuffle=False))
    np.testing.assert_array_equal(got[1][0], imgs[("Faces", 2)])
    np.testing.assert_array_equal(got[1][2], contours[("Faces", 2)])
    d = ds.Caltech101Dataset(str(tmp_path), target_type="annotation")
    assert d.get_col_names() == ["image", "annotation"]
    assert ds.Caltech101Dataset(str(tmp_path)).get_class_indexing() == {"Faces": 0, "ant": 1}
    _check_shards(lambda **k: ds.Caltech101Dataset(str(tmp_path), **k), 3)
    (tmp_path / "Annotations" / "ant" / "annotation_0001.mat").unlink()
    with pytest.raises(ValueError, match="Annotations/ant/annotation_0001.mat does not exist"):
        ds.Caltech101Dataset(str(tmp_path), target_type="all")
    with pytest.raises(ValueError, match="Input target_type is not within"):
        ds.Caltech101Dataset(str(tmp_path), target_type="box")


def test_caltech256_and_sun397_and_omniglot(tmp_path):
    c256 = tmp_path / "c256"
    for i, cls in enumerate(("001.ak47", "002.american-flag", "257.clutter")):
        for k in range(2):
            _jpg(c256 / cls / f"{cls[:3]}_{k + 1:04d}.jpg", i * 10 + k)
    _png(c256 / "001.ak47" / "readme.png", 9)  # not .jpg/.JPEG: not read, as in MindSpore
    got = _rows(ds.Caltech256Dataset(str(c256), shuffle=False))
    assert [int(r[1]) for r in got] == [0, 0, 1, 1, 2, 2]
    assert got[3][0].tobytes() == (c256 / "002.american-flag" / "002_0002.jpg").read_bytes()
    _check_shards(lambda **k: ds.Caltech256Dataset(str(c256), **k), 6)

    sun = tmp_path / "sun"
    sun.mkdir()
    (sun / "ClassName.txt").write_text("/a/abbey\n/b/bakery/shop\n")
    a = _jpg(sun / "a" / "abbey" / "sun_aaa.jpg", 1)
    _jpg(sun / "a" / "abbey" / "other.jpg", 5)  # not sun_*.jpg: not read, as in MindSpore
    _jpg(sun / "b" / "bakery" / "shop" / "sun_bbb.jpg", 2)
    got = _rows(ds.SUN397Dataset(str(sun), decode=True, shuffle=False))
    np.testing.assert_array_equal(got[0][0], a)
    assert [int(r[1]) for r in got] == [0, 1]
    (sun / "ClassName.txt").write_text("/a/abbey\n/c/castle\n")
    with pytest.raises(ValueError, match="c/castle does not exist"):
        ds.SUN397Dataset(str(sun))

    om = tmp_path / "omniglot"
    for root in ("images_background", "images_evaluation"):
        for alpha in ("Greek", "Latin"):
            for ch in ("character01", "character02"):
                _png(om / root / alpha / ch / f"{root[7]}{alpha}{ch}.png", 3, mode="L")
    got = _rows(ds.OmniglotDataset(str(om), shuffle=False))  # None reads images_background, as MindSpore
    assert [int(r[1]) for r in got] == [0, 1, 2, 3] and got[0][1].dtype == np.int32
    assert got[3][0].tobytes() == (om / "images_background/Latin/character02/bLatincharacter02.png").read_bytes()
    ev = _rows(ds.OmniglotDataset(str(om), background=False, shuffle=False))
    assert ev[0][0].tobytes() == (om / "images_evaluation/Greek/character01/eGreekcharacter01.png").read_bytes()
    with pytest.raises(ValueError, match="images_evaluation does not exist"):
        ds.OmniglotDataset(str(tmp_path), background=False)


def test_food101_rendered_sst2_lsun(tmp_path):
    food = tmp_path / "food"
    (food / "meta").mkdir(parents=True)
    (food / "meta" / "train.txt").write_text("apple_pie/11\nbeignets/22\n")
    (food / "meta" / "test.txt").write_text("beignets/33\n")
    for cls, name in (("apple_pie", "11"), ("beignets", "22"), ("beignets", "33")):
        _jpg(food / "images" / cls / f"{name}.jpg", int(name))
    got = _rows(ds.Food101Dataset(str(food), shuffle=False))
    assert [str(r[1]) for r in got] == ["apple_pie", "beignets", "beignets"]
    assert got[2][0].tobytes() == (food / "images" / "beignets" / "33.jpg").read_bytes()
    assert ds.Food101Dataset(str(food), usage="test").get_dataset_size() == 1
    (food / "meta" / "test.txt").write_text("beignets/44\n")
    with pytest.raises(ValueError, match="images/beignets/44.jpg does not exist"):
        ds.Food101Dataset(str(food), usage="test")

    sst = tmp_path / "sst"
    for part in ("train", "valid", "test"):
        for k, lab in enumerate(("negative", "positive")):
            _png(sst / part / lab / f"{part}{k}.png", k)
    got = _rows(ds.RenderedSST2Dataset(str(sst), usage="val", shuffle=False))
    assert [int(r[1]) for r in got] == [0, 1]
    assert got[1][0].tobytes() == (sst / "valid" / "positive" / "valid1.png").read_bytes()
    every = _rows(ds.RenderedSST2Dataset(str(sst), shuffle=False))  # path order: test, train, valid
    assert [r[0].tobytes() for r in every[::2]] == [(sst / p / "negative" / f"{p}0.png").read_bytes()
                                                   for p in ("test", "train", "valid")]

    lsun = tmp_path / "lsun"
    for folder, n in (("bedroom_train", 2), ("tower_train", 1), ("tower_val", 1), ("test", 1)):
        for k in range(n):
            _jpg(lsun / folder / f"{k}.jpg", k)
    # labels number the chosen folders in name order, as MindSpore's image-folder reader does
    got = _rows(ds.LSUNDataset(str(lsun), usage="train", classes=["tower", "bedroom"], shuffle=False))
    assert [int(r[1]) for r in got] == [0, 0, 1]
    assert got[2][0].tobytes() == (lsun / "tower_train" / "0.jpg").read_bytes()
    every = _rows(ds.LSUNDataset(str(lsun), shuffle=False))  # 'all': train and valid folders
    assert [int(r[1]) for r in every] == [0, 0, 1, 2]
    assert [int(r[1]) for r in _rows(ds.LSUNDataset(str(lsun), usage="valid", classes="tower"))] == [0]
    assert ds.LSUNDataset(str(lsun), usage="test").get_dataset_size() == 1
    with pytest.raises(ValueError, match="no folder named like bridge_train"):
        ds.LSUNDataset(str(lsun), usage="train", classes="bridge")
    with pytest.raises(ValueError, match="Input classes is not within"):
        ds.LSUNDataset(str(lsun), classes="garage")


def test_lfw_people_and_pairs(tmp_path):
    imgs = tmp_path / "lfw_funneled"
    for name, n in (("Ann_Lee", 2), ("Bo_Chen", 1)):
        for k in range(1, n + 1):
            _jpg(imgs / name / f"{name}_{k:04d}.jpg", k)
    (tmp_path / "peopleDevTrain.txt").write_text("2\nAnn_Lee\t2\nBo_Chen\t1\n")
    (tmp_path / "peopleDevTest.txt").write_text("1\nBo_Chen\t1\n")
    (tmp_path / "pairsDevTrain.txt").write_text("1\nAnn_Lee\t1\t2\nAnn_Lee\t2\tBo_Chen\t1\n")
    got = _rows(ds.LFWDataset(str(tmp_path), usage="train", shuffle=False))
    assert [int(r[1]) for r in got] == [0, 0, 1]  # without lfw-names.txt: the folders' order
    (tmp_path / "lfw-names.txt").write_text("Zed_Zero\t1\nBo_Chen\t1\nAnn_Lee\t2\n")  # a person's line is the label
    assert [int(r[1]) for r in _rows(ds.LFWDataset(str(tmp_path), usage="train", shuffle=False))] == [2, 2, 1]
    assert got[1][0].tobytes() == (imgs / "Ann_Lee" / "Ann_Lee_0002.jpg").read_bytes()
    assert ds.LFWDataset(str(tmp_path)).get_dataset_size() == 4  # train + test
    pairs = _rows(ds.LFWDataset(str(tmp_path), task="pairs", usage="train", shuffle=False))
    assert [int(r[2]) for r in pairs] == [1, 0]
    assert pairs[1][1].tobytes() == (imgs / "Bo_Chen" / "Bo_Chen_0001.jpg").read_bytes()
    (tmp_path / "peopleDevTest.txt").write_text("1\nBo_Chen\t2\n")
    with pytest.raises(ValueError, match="Bo_Chen_0002.jpg does not exist"):
        ds.LFWDataset(str(tmp_path), usage="test")
    with pytest.raises(ValueError, match="lfw-deepfunneled does not exist"):
        ds.LFWDataset(str(tmp_path), image_set="deepfunneled")


# ---- task sources ---------------------------------------------------------------------------

def test_cityscapes(tmp_path):
    for part in ("train", "val"):
        for city, stem in (("aachen", "aachen_000000_000019"), ("bonn", "bonn_000001_000019")):
            _png(tmp_path / "leftImg8bit" / part / city / f"{stem}_leftImg8bit.png", 1)
            gt = tmp_path / "gtFine" / part / city
            _png(gt / f"{stem}_gtFine_instanceIds.png", 2, mode="L")
            _png(gt / f"{stem}_gtFine_labelIds.png", 3, mode="L")
            _png(gt / f"{stem}_gtFine_color.png", 4)
            (gt / f"{stem}_gtFine_polygons.json").write_text(json.dumps({"objects": [{"label": city}], "imgWidth": 5}))
    got = _rows(ds.CityscapesDataset(str(tmp_path), task="semantic", shuffle=False))
    assert len(got) == 2
    assert got[1][1].tobytes() == (tmp_path / "gtFine/train/bonn/bonn_000001_000019_gtFine_labelIds.png").read_bytes()
    poly = _rows(ds.CityscapesDataset(str(tmp_path), usage="val", task="polygon", shuffle=False))
    assert json.loads(str(poly[0][1])) == {"objects": [{"label": "aachen"}], "imgWidth": 5}
    dec = _rows(ds.CityscapesDataset(str(tmp_path), task="color", decode=True, shuffle=False))
    np.testing.assert_array_equal(dec[0][1], np.asarray(Image.open(
        tmp_path / "gtFine/train/aachen/aachen_000000_000019_gtFine_color.png")))
    (tmp_path / "gtFine/train/bonn/bonn_000001_000019_gtFine_instanceIds.png").unlink()
    with pytest.raises(ValueError, match="bonn_000001_000019_gtFine_instanceIds.png does not exist"):
        ds.CityscapesDataset(str(tmp_path))
    with pytest.raises(ValueError, match="Input usage is not within"):
        ds.CityscapesDataset(str(tmp_path), usage="train_extra")  # a coarse-only split


def test_div2k(tmp_path):
    for k in (1, 2):
        _png(tmp_path / "DIV2K_train_HR" / f"{k:04d}.png", k, size=(8, 8))
        _png(tmp_path / "DIV2K_train_LR_bicubic" / "X2" / f"{k:04d}x2.png", 10 + k, size=(4, 4))
        _png(tmp_path / "DIV2K_train_LR_x8" / f"{k:04d}x8.png", 20 + k, size=(1, 1))
        _png(tmp_path / "DIV2K_train_LR_mild" / f"{k:04d}x4m.png", 30 + k, size=(2, 2))
    got = _rows(ds.DIV2KDataset(str(tmp_path), shuffle=False))
    assert got[1][0].tobytes() == (tmp_path / "DIV2K_train_HR/0002.png").read_bytes()
    assert got[1][1].tobytes() == (tmp_path / "DIV2K_train_LR_bicubic/X2/0002x2.png").read_bytes()
    assert _rows(ds.DIV2KDataset(str(tmp_path), scale=8, decode=True, shuffle=False))[0][1].shape == (1, 1, 3)
    assert _rows(ds.DIV2KDataset(str(tmp_path), downgrade="mild", scale=4, decode=True,
                                 shuffle=False))[0][1].shape == (2, 2, 3)
    with pytest.raises(ValueError, match="X3/0001x3.png does not exist"):
        ds.DIV2KDataset(str(tmp_path), scale=3)
    with pytest.raises(ValueError, match="scale 8 exists only"):
        ds.DIV2KDataset(str(tmp_path), downgrade="unknown", scale=8)


def test_kitti(tmp_path):
    img_dir = tmp_path / "data_object_image_2" / "training" / "image_2"
    lab_dir = tmp_path / "data_object_label_2" / "training" / "label_2"
    lab_dir.mkdir(parents=True)
    _png(img_dir / "000000.png", 0)
    _png(img_dir / "000001.png", 1)
    _png(tmp_path / "data_object_image_2" / "testing" / "image_2" / "000000.png", 2)
    (lab_dir / "000000.txt").write_text(
        "Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01\n"
        "DontCare -1 -1 -10 503.89 169.71 590.61 190.13 -1 -1 -1 -1000 -1000 -1000 -10\n")
    (lab_dir / "000001.txt").write_text("Car 0.50 2 1.5 1 2 3 4 5 6 7 8 9 10 0.25\n")
    _png(img_dir / "000002.png", 3)
    (lab_dir / "000002.txt").write_text("")  # no object: the image is left out, as MindSpore does
    d = ds.KITTIDataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["image", "label", "truncated", "occluded", "alpha", "bbox", "dimensions",
                                 "location", "rotation_y"]
    # labels number the class names found, in name order
    assert d.get_class_indexing() == {"Car": 0, "DontCare": 1, "Pedestrian": 2}
    r0, r1 = _rows(d)
    np.testing.assert_array_equal(r0[1], [[2], [1]])
    np.testing.assert_array_equal(r0[3], [[0], [0xFFFFFFFF]])  # DontCare's occluded -1 as uint32
    np.testing.assert_allclose(r0[5], [[712.40, 143.00, 810.73, 307.92], [503.89, 169.71, 590.61, 190.13]], rtol=1e-6)
    np.testing.assert_allclose(r0[6][0], [1.89, 0.48, 1.20], rtol=1e-6)
    np.testing.assert_allclose(r1[2:5], [[[0.5]], [[2]], [[1.5]]])
    assert r1[1].tolist() == [[0]] and r1[3].dtype == np.uint32 and r1[8].dtype == np.float32
    assert float(r1[8][0, 0]) == 0.25
    np.testing.assert_allclose(r1[7], [[8, 9, 10]])
    assert ds.KITTIDataset(str(tmp_path), usage="test").get_col_names() == ["image"]
    (lab_dir / "000001.txt").unlink()
    with pytest.raises(ValueError, match="label_2/000001.txt does not exist"):
        ds.KITTIDataset(str(tmp_path))
    (lab_dir / "000001.txt").write_text("Boat 0 0 0 1 2 3 4 5 6 7 8 9 10\n")
    with pytest.raises(ValueError, match="000001.txt':1: expected '<class> <14 numbers>'"):
        ds.KITTIDataset(str(tmp_path))


def test_wider_face(tmp_path):
    for part, names in (("train", ["0--Parade/a.jpg", "1--Handshaking/b.jpg", "1--Handshaking/c.jpg"]),
                        ("val", ["0--Parade/c.jpg"]), ("test", ["0--Parade/d.jpg"])):
        for k, n in enumerate(names):
            _jpg(tmp_path / f"WIDER_{part}" / "images" / n, k)
    split = tmp_path / "wider_face_split"
    split.mkdir()
    (split / "wider_face_train_bbx_gt.txt").write_text(
        "0--Parade/a.jpg\n2\n78 221 7 8 2 0 0 0 0 0 \n78 238 14 17 0 1 2 3 4 5 \n"
        "1--Handshaking/b.jpg\n0\n0 0 0 0 0 0 0 0 0 0 \n")  # c.jpg is not annotated
    (split / "wider_face_val_bbx_gt.txt").write_text("0--Parade/c.jpg\n1\n1 2 3 4 1 1 1 1 1 1\n")
    d = ds.WIDERFaceDataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "bbox", "blur", "expression", "illumination", "occlusion", "pose",
                                 "invalid"]
    a, b, c = _rows(d)
    np.testing.assert_array_equal(a[1], [[78, 221, 7, 8], [78, 238, 14, 17]])
    # fields 4..9 in MindSpore's column order: blur, expression, illumination, occlusion, pose, invalid
    np.testing.assert_array_equal(np.stack(a[2:], axis=1), [[2, 0, 0, 0, 0, 0], [0, 1, 2, 3, 4, 5]])
    assert a[1].dtype == np.uint32 and a[2].shape == (2,)
    np.testing.assert_array_equal(b[1], [[0, 0, 0, 0]])  # a count of 0: its all-zero line, as MindSpore reads it
    assert c[1].shape == (0, 4) and c[7].shape == (0,)
    assert c[0].tobytes() == (tmp_path / "WIDER_train/images/1--Handshaking/c.jpg").read_bytes()
    assert ds.WIDERFaceDataset(str(tmp_path)).get_dataset_size() == 4
    test = _rows(ds.WIDERFaceDataset(str(tmp_path), usage="test"))
    assert len(test) == 1 and test[0][0].tobytes() == (tmp_path / "WIDER_test/images/0--Parade/d.jpg").read_bytes()
    (split / "wider_face_val_bbx_gt.txt").write_text("0--Parade/zz.jpg\n1\n1 2 3 4 1 1 1 1 1 1\n")
    with pytest.raises(ValueError, match="WIDER_val/images/0--Parade/zz.jpg does not exist"):
        ds.WIDERFaceDataset(str(tmp_path), usage="valid")
    (split / "wider_face_val_bbx_gt.txt").write_text("0--Parade/c.jpg\n2\n1 2 3 4 1 1 1 1 1 1\n")
    with pytest.raises(ValueError, match="expected 10 integers"):
        ds.WIDERFaceDataset(str(tmp_path), usage="valid")
    (split / "wider_face_val_bbx_gt.txt").unlink()
    with pytest.raises(ValueError, match="wider_face_val_bbx_gt.txt does not exist"):
        ds.WIDERFaceDataset(str(tmp_path), usage="valid")


def test_manifest(tmp_path):
    for k in range(3):
        _jpg(tmp_path / "img" / f"{k}.jpg", k)
    lines = [{"source": "img/0.jpg", "usage": "train", "annotation": [{"type": "modelarts/image_classification",
                                                                      "name": "dog"}]},
             {"source": "img/1.jpg", "usage": "EVAL", "annotation": [{"name": "cat"}]},
             {"source": "img/2.jpg", "usage": "train", "annotation": [{"name": "cat"}, {"name": "dog"}]}]
    (tmp_path / "img" / "notes.txt").write_text("not an image")  # skipped, as MindSpore does
    lines.append({"source": "img/notes.txt", "usage": "train", "annotation": [{"name": "dog"}]})
    (tmp_path / "m.manifest").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    d = ds.ManifestDataset(str(tmp_path / "m.manifest"), shuffle=False)
    got = _rows(d)
    assert d.get_class_indexing() == {"cat": 0, "dog": 1}
    assert [r[1].tolist() for r in got] == [[1], [0, 1]] and got[0][1].dtype == np.uint32
    assert got[1][0].tobytes() == (tmp_path / "img/2.jpg").read_bytes()
    ev = _rows(ds.ManifestDataset(str(tmp_path / "m.manifest"), usage="eval", class_indexing={"cat": 7, "dog": 3}))
    assert ev[0][1].tolist() == [7]
    with pytest.raises(ValueError, match="'cat', not in class_indexing"):
        ds.ManifestDataset(str(tmp_path / "m.manifest"), usage="eval", class_indexing={"dog": 0})
    (tmp_path / "img/2.jpg").unlink()
    with pytest.raises(ValueError, match=r"m.manifest':3: the image img/2.jpg does not exist"):
        ds.ManifestDataset(str(tmp_path / "m.manifest"))


# ---- binary sources -------------------------------------------------------------------------

def _idx_u8(path, arr):
    arr = np.asarray(arr, np.uint8)
    path.write_bytes(bytes([0, 0, 8, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.tobytes())


def _idx_i32(path, arr):
    arr = np.asarray(arr, ">i4")
    path.write_bytes(bytes([0, 0, 0x0C, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.tobytes())


def test_qmnist(tmp_path):
    rng = np.random.default_rng(5)
    data = {}
    for stem, n in (("qmnist-train", 3), ("qmnist-test", 4), ("xnist", 2)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 70000, (n, 8))
        y[:, 0] = rng.integers(0, 10, n)
        _idx_u8(tmp_path / f"{stem}-images-idx3-ubyte", x)
        _idx_i32(tmp_path / f"{stem}-labels-idx2-int", y)
        data[stem] = (x, y)
    got = _rows(ds.QMnistDataset(str(tmp_path), usage="test", shuffle=False))
    for (img, lab), x, y in zip(got, *data["qmnist-test"]):
        np.testing.assert_array_equal(img, x[:, :, None])
        assert lab.dtype == np.uint32 and lab.shape == () and int(lab) == y[0]
    full = _rows(ds.QMnistDataset(str(tmp_path), usage="nist", compat=False, shuffle=False))
    np.testing.assert_array_equal(np.stack([r[1] for r in full]), data["xnist"][1])
    assert ds.QMnistDataset(str(tmp_path)).get_dataset_size() == 9  # 'all': train, test and nist
    assert ds.QMnistDataset(str(tmp_path), usage="test10k").get_dataset_size() == 4
    _check_shards(lambda **k: ds.QMnistDataset(str(tmp_path), **k), 9)
    (tmp_path / "xnist-labels-idx2-int").unlink()
    with pytest.raises(ValueError, match="xnist-labels-idx2-int \\(or xnist-labels-idx2-int.gz\\) does not exist"):
        ds.QMnistDataset(str(tmp_path), usage="nist")
    raw = (tmp_path / "qmnist-test-labels-idx2-int").read_bytes()
    (tmp_path / "qmnist-test-labels-idx2-int").write_bytes(raw[:-3])
    with pytest.raises(ValueError, match="declares dimensions \\[4, 8\\]"):
        ds.QMnistDataset(str(tmp_path), usage="test")


def test_semeion(tmp_path):
    rng = np.random.default_rng(6)
    imgs = rng.integers(0, 2, (3, 16, 16))
    digits = [7, 0, 9]
    lines = [" ".join(f"{v:.4f}" for v in im.reshape(-1)) + " " + " ".join("1" if j == d else "0" for j in range(10))
             for im, d in zip(imgs, digits)]
    (tmp_path / "semeion.data").write_text("\n".join(lines) + "\n")
    got = _rows(ds.SemeionDataset(str(tmp_path), shuffle=False))
    for (img, lab), ref, d in zip(got, imgs, digits):
        np.testing.assert_array_equal(img, ref)  # 0 and 1, as MindSpore reads '1.0000' (stoi)
        assert img.dtype == np.uint8 and lab.dtype == np.uint32 and int(lab) == d
    _check_shards(lambda **k: ds.SemeionDataset(str(tmp_path), **k), 3)
    (tmp_path / "semeion.data").write_text(lines[0].rsplit(" ", 1)[0] + " 1\n")
    with pytest.raises(ValueError, match="semeion.data':1: the last 10 values must be one-hot"):
        ds.SemeionDataset(str(tmp_path))
    (tmp_path / "semeion.data").unlink()
    with pytest.raises(ValueError, match="semeion.data does not exist"):
        ds.SemeionDataset(str(tmp_path))


def test_usps(tmp_path):
    rng = np.random.default_rng(7)
    sets = {}
    for name, n in (("usps", 3), ("usps.t", 2)):
        vals = rng.uniform(-1, 1, (n, 256))
        vals[:, 5] = 0  # an index left out of the line reads as value 0
        labels = rng.integers(1, 11, n)
        text = "".join(f"{lab} " + " ".join(f"{i + 1}:{v:.17g}" for i, v in enumerate(row) if i != 5) + "\n"
                       for lab, row in zip(labels, vals))
        (tmp_path / name).write_text(text)
        sets[name] = (vals, labels)
    got = _rows(ds.USPSDataset(str(tmp_path), usage="train", shuffle=False))
    vals, labels = sets["usps"]
    for (img, lab), v, y in zip(got, vals, labels):
        assert img.shape == (16, 16, 1) and img.dtype == np.uint8
        # the documented rule: the value as a float32 (MindSpore's stof), then (v + 1) / 2 * 255 cut
        np.testing.assert_array_equal(img.reshape(-1), ((v.astype(np.float32) + 1.0) / 2.0 * 255.0).astype(np.uint8))
        assert int(lab) == y - 1
    assert ds.USPSDataset(str(tmp_path)).get_dataset_size() == 5
    (tmp_path / "usps.t").write_text("3 1:0.5 300:0.1\n")
    with pytest.raises(ValueError, match="usps.t':1: expected '<index 1..256>:<value in \\[-1, 1\\]>'"):
        ds.USPSDataset(str(tmp_path), usage="test")


def test_phototour(tmp_path):
    rng = np.random.default_rng(8)
    folder = tmp_path / "liberty"
    folder.mkdir()
    sheets = [rng.integers(0, 256, (1024, 1024), dtype=np.uint8) for _ in range(2)]
    for k, s in enumerate(sheets):
        Image.fromarray(s, "L").save(folder / f"patches{k:04d}.bmp")  # 8-bit, gray palette
    n = 260  # the second sheet is only partly used
    points = rng.integers(0, 50, n)
    (folder / "info.txt").write_text("".join(f"{p} 0\n" for p in points))
    pairs = [(0, 257), (3, 4), (259, 100)]
    (folder / "m50_100000_100000_0.txt").write_text(
        "".join(f"{a} {points[a]} 0 {b} {points[b]} 0 0\n" for a, b in pairs))

    def ref(p):
        s, cell = divmod(p, 256)
        r, c = divmod(cell, 16)
        return sheets[s][r * 64:(r + 1) * 64, c * 64:(c + 1) * 64, None]

    d = ds.PhotoTourDataset(str(tmp_path), "liberty", usage="train", shuffle=False)
    assert d.get_dataset_size() == n and d.get_col_names() == ["image"]
    got = _rows(ds.PhotoTourDataset(str(tmp_path), "liberty", num_samples=3, sampler=ds.SubsetSampler([0, 17, 258])))
    for (img,), p in zip(got, [0, 17, 258]):
        np.testing.assert_array_equal(img, ref(p))
    test = _rows(ds.PhotoTourDataset(str(tmp_path), "liberty", usage="test", shuffle=False))
    for (a, b, m), (pa, pb) in zip(test, pairs):
        np.testing.assert_array_equal(a, ref(pa))
        np.testing.assert_array_equal(b, ref(pb))
        assert m.dtype == np.uint32 and int(m) == int(points[pa] == points[pb])
    (folder / "info.txt").write_text("0 0\n" * 600)
    with pytest.raises(ValueError, match="lists 600 patches but .* holds 2 BMP files"):
        ds.PhotoTourDataset(str(tmp_path), "liberty")
    with pytest.raises(ValueError, match="yosemite does not exist"):
        ds.PhotoTourDataset(str(tmp_path), "yosemite")


def test_bmp_reader_against_pillow(tmp_path):
    from mycel.dataset.binary_sources import read_bmp
    rng = np.random.default_rng(9)
    gray = rng.integers(0, 256, (7, 5), dtype=np.uint8)
    Image.fromarray(gray, "L").save(tmp_path / "g.bmp")
    np.testing.assert_array_equal(read_bmp(str(tmp_path / "g.bmp")), gray)
    rgb = np.repeat(gray[:, :, None], 3, axis=2)
    Image.fromarray(rgb, "RGB").save(tmp_path / "c.bmp")  # 24-bit, rows padded to 4 bytes
    np.testing.assert_array_equal(read_bmp(str(tmp_path / "c.bmp")), gray)
    raw = (tmp_path / "c.bmp").read_bytes()
    (tmp_path / "c.bmp").write_bytes(raw[:-10])
    with pytest.raises(ValueError, match="runs past the end"):
        read_bmp(str(tmp_path / "c.bmp"))


# ---- generated sources ----------------------------------------------------------------------

def test_fake_image():
    d = ds.FakeImageDataset(num_images=6, image_size=(4, 3, 2), num_classes=3, base_seed=5, shuffle=False)
    got = _rows(d)
    assert len(got) == 6
    for k, (img, lab) in enumerate(got):
        rng = np.random.default_rng(5 + k)  # the documented per-row generator
        np.testing.assert_array_equal(img, rng.integers(0, 256, (4, 3, 2), dtype=np.uint8))
        assert lab.dtype == np.uint32 and int(lab) == rng.integers(0, 3)
    shard = _rows(ds.FakeImageDataset(num_images=6, image_size=(4, 3, 2), num_classes=3, base_seed=5,
                                      num_shards=3, shard_id=1, shuffle=False))
    assert len(shard) == 2 and any(np.array_equal(shard[0][0], r[0]) for r in got)
    with pytest.raises(ValueError, match="image_size must be"):
        ds.FakeImageDataset(image_size=(4, 4))


def test_random_dataset(tmp_path):
    schema = ds.Schema()
    schema.add_column("image", de_type="uint8", shape=[2, 3])
    schema.add_column("label", de_type="int32", shape=[1])
    schema.add_column("score", de_type="float32")
    got = _rows(ds.RandomDataset(total_rows=5, schema=schema))
    assert len(got) == 5
    for img, lab, score in got:
        assert img.shape == (2, 3) and img.dtype == np.uint8
        assert lab.shape == (1,) and lab.dtype == np.int32
        assert score.ndim == 1 and 1 <= score.size <= 8 and score.dtype == np.float32
        assert ((score >= 0) & (score < 1)).all()
    again = _rows(ds.RandomDataset(total_rows=5, schema=schema))
    for a, b in zip(got, again):  # each row comes from its own seeded generator
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    only = ds.RandomDataset(total_rows=4, schema=schema, columns_list=["label"], num_shards=2, shard_id=0)
    assert only.get_col_names() == ["label"] and only.get_dataset_size() == 2
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"x": {"type": "int64", "rank": 1, "shape": [4]}},
                                                 "numRows": 3}))
    got = _rows(ds.RandomDataset(schema=str(tmp_path / "s.json")))
    assert len(got) == 3 and all(r[0].shape == (4,) and r[0].dtype == np.int64 for r in got)
    free = ds.RandomDataset(total_rows=2)
    assert 1 <= len(free.get_col_names()) <= 4 and len(_rows(free)) == 2
    with pytest.raises(ValueError, match="column 'y' of columns_list is not in the schema"):
        ds.RandomDataset(total_rows=2, schema=schema, columns_list=["y"])
