"""VOCDataset, CocoDataset and CelebADataset as a MindSpore user calls them (imports renamed), on
small trees written here in the real on-disk formats (images written by Pillow, an independent
encoder; XML by hand, JSON by the json module): rows against what was written."""
import io
import json

import numpy as np
import pytest
from PIL import Image

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _png(path, arr):
    Image.fromarray(arr).save(path, format="PNG")
    return path.read_bytes()


def _img(seed, h=6, w=5):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _voc_xml(objects):
    objs = "".join(
        f"<object><name>{n}</name><difficult>{d}</difficult><truncated>{t}</truncated>"
        f"<bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax><ymax>{b[3]}</ymax></bndbox>"
        "</object>" for n, b, d, t in objects)
    return f"<annotation><filename>x.jpg</filename><size><width>5</width></size>{objs}</annotation>"


@pytest.fixture()
def voc(tmp_path):
    for sub in ("JPEGImages", "SegmentationClass", "Annotations", "ImageSets/Main",
                "ImageSets/Segmentation"):
        (tmp_path / sub).mkdir(parents=True)
    ids = ["2007_000001", "2007_000002", "2007_000003"]
    # PNG bytes under .jpg names: the reader passes bytes through, Decode reads either format
    images = {i: _img(k) for k, i in enumerate(ids)}
    raw = {i: _png(tmp_path / "JPEGImages" / f"{i}.jpg", a) for i, a in images.items()}
    masks = {i: _img(10 + k) for k, i in enumerate(ids)}
    for i, a in masks.items():
        _png(tmp_path / "SegmentationClass" / f"{i}.png", a)
    objects = {ids[0]: [("dog", (1, 2, 4, 5), 0, 1), ("cat", (0, 0, 3, 3), 1, 0)],
               ids[1]: [("person", (10.5, 20, 30, 41), 0, 0)],
               ids[2]: [("cat", (2, 2, 2, 2), 0, 0)]}
    for i, objs in objects.items():
        (tmp_path / "Annotations" / f"{i}.xml").write_text(_voc_xml(objs))
    (tmp_path / "ImageSets/Main/train.txt").write_text("\n".join(ids) + "\n")
    (tmp_path / "ImageSets/Segmentation/train.txt").write_text("\n".join(ids[:2]) + "\n")
    (tmp_path / "ImageSets/Segmentation/val.txt").write_text(ids[2] + "\n")
    return tmp_path, ids, images, raw, masks, objects


def test_voc_segmentation(voc):
    root, ids, images, raw, masks, _ = voc
    got = _rows(ds.VOCDataset(str(root), task="Segmentation", usage="train", shuffle=False))
    assert len(got) == 2
    for (img, target), i in zip(got, ids[:2]):
        assert img.dtype == np.uint8 and img.tobytes() == raw[i]
        assert target.tobytes() == (root / "SegmentationClass" / f"{i}.png").read_bytes()
    got = _rows(ds.VOCDataset(str(root), task="Segmentation", usage="val", decode=True, shuffle=False))
    np.testing.assert_array_equal(got[0][0], images[ids[2]])
    np.testing.assert_array_equal(got[0][1], masks[ids[2]])
    with pytest.raises(ValueError, match="class_indexing is not supported"):
        ds.VOCDataset(str(root), task="Segmentation", class_indexing={"cat": 0})
    with pytest.raises(ValueError, match="test.txt does not exist"):
        ds.VOCDataset(str(root), usage="test")


def test_voc_detection(voc):
    root, ids, images, raw, _, objects = voc
    d = ds.VOCDataset(str(root), task="Detection", usage="train", shuffle=False, decode=True)
    assert d.get_col_names() == ["image", "bbox", "label", "difficult", "truncate"]
    names = sorted({o[0] for objs in objects.values() for o in objs})
    assert d.get_class_indexing() == {n: k for k, n in enumerate(names)}
    got = _rows(d)
    for row, i in zip(got, ids):
        objs = objects[i]
        np.testing.assert_array_equal(row[0], images[i])
        assert row[1].dtype == np.float32 and row[2].dtype == np.uint32
        np.testing.assert_allclose(row[1], [[b[0], b[1], b[2] - b[0], b[3] - b[1]] for _, b, _, _ in objs])
        assert row[2].ravel().tolist() == [names.index(n) for n, _, _, _ in objs]
        assert row[3].ravel().tolist() == [o[2] for o in objs]
        assert row[4].ravel().tolist() == [o[3] for o in objs]
        assert row[2].shape == (len(objs), 1)
    mine = {"cat": 7, "dog": 3, "person": 0}
    got = _rows(ds.VOCDataset(str(root), task="Detection", class_indexing=mine, shuffle=False))
    assert got[0][2].ravel().tolist() == [3, 7]
    with pytest.raises(ValueError, match="'person' is not in class_indexing"):
        ds.VOCDataset(str(root), task="Detection", class_indexing={"cat": 0, "dog": 1})
    shards = [_rows(ds.VOCDataset(str(root), task="Detection", num_shards=2, shard_id=k, shuffle=False))
              for k in range(2)]
    # MindSpore's DistributedSampler pads the shards to equal sizes (3 rows -> 2 + 2)
    assert [len(s) for s in shards] == [2, 2]
    assert {r[0].tobytes() for s in shards for r in s} == set(raw.values())
    assert len(_rows(ds.VOCDataset(str(root), task="Detection", num_samples=2))) == 2
    sampler = ds.SequentialSampler(start_index=1, num_samples=1)
    (row,) = _rows(ds.VOCDataset(str(root), task="Detection", sampler=sampler))
    assert row[0].tobytes() == raw[ids[1]]
    with pytest.raises(NotImplementedError):
        ds.VOCDataset(str(root), task="Segmentation").get_class_indexing()


@pytest.mark.parametrize("hostile", [
    # billion laughs: entities defined in an internal DTD subset
    '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY l "lol"><!ENTITY l2 "&l;&l;&l;&l;">]>'
    "<annotation><object><name>&l2;</name></object></annotation>",
    # external entity (a local file's contents)
    '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    "<annotation><object><name>&x;</name></object></annotation>",
])
def test_voc_refuses_entities(voc, hostile):
    root, ids, *_ = voc
    (root / "Annotations" / f"{ids[1]}.xml").write_text(hostile)
    with pytest.raises(ValueError, match="document type declaration"):
        ds.VOCDataset(str(root), task="Detection")


def test_voc_bad_xml(voc):
    root, ids, *_ = voc
    (root / "Annotations" / f"{ids[0]}.xml").write_text("<annotation><object>")
    with pytest.raises(ValueError, match=f"{ids[0]}.xml' is not well-formed XML"):
        ds.VOCDataset(str(root), task="Detection")
    (root / "Annotations" / f"{ids[0]}.xml").write_text(_voc_xml([("cat", ("a", 0, 1, 1), 0, 0)]))
    with pytest.raises(ValueError, match="<xmin> must be a number"):
        ds.VOCDataset(str(root), task="Detection")
    (root / "Annotations" / f"{ids[0]}.xml").write_text(_voc_xml([("cat", (0, 0, 1, 1), -1, 0)]))
    with pytest.raises(ValueError, match=r"<difficult>/<truncated> \[-1, 0\], outside"):
        ds.VOCDataset(str(root), task="Detection")


def _coco_tree(tmp_path):
    images = {1: _img(1), 2: _img(2), 3: _img(3)}
    raw = {k: _png(tmp_path / f"{k:012d}.jpg", a) for k, a in images.items()}
    doc = {"images": [{"id": k, "file_name": f"{k:012d}.jpg", "height": 6, "width": 5} for k in images],
           "categories": [{"id": 1, "name": "person", "isthing": 1}, {"id": 18, "name": "dog", "isthing": 1},
                          {"id": 184, "name": "tree", "isthing": 0}]}
    return images, raw, doc


def test_coco_detection_and_captioning(tmp_path):
    images, raw, doc = _coco_tree(tmp_path)
    doc["annotations"] = [
        {"id": 10, "image_id": 3, "bbox": [1, 2, 3, 4], "category_id": 18, "iscrowd": 0,
         "caption": "a dog"},
        {"id": 11, "image_id": 1, "bbox": [0.5, 0, 2, 2.5], "category_id": 1, "iscrowd": 1,
         "caption": "a person"},
        {"id": 12, "image_id": 3, "bbox": [0, 0, 1, 1], "category_id": 1, "iscrowd": 0,
         "caption": "and a person"}]  # image 2 has no annotation: not a row
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps(doc))
    d = ds.CocoDataset(str(tmp_path), str(ann), task="Detection", shuffle=False, decode=True)
    assert d.get_col_names() == ["image", "bbox", "category_id", "iscrowd"]
    assert d.get_class_indexing() == {"person": [1], "dog": [18], "tree": [184]}
    got = _rows(d)
    assert len(got) == 2
    np.testing.assert_array_equal(got[0][0], images[1])
    np.testing.assert_allclose(got[0][1], [[0.5, 0, 2, 2.5]])
    assert got[0][2].tolist() == [[1]] and got[0][3].tolist() == [[1]] and got[0][2].dtype == np.uint32
    np.testing.assert_array_equal(got[1][0], images[3])
    np.testing.assert_allclose(got[1][1], [[1, 2, 3, 4], [0, 0, 1, 1]])
    assert got[1][2].ravel().tolist() == [18, 1] and got[1][3].ravel().tolist() == [0, 0]
    caps = _rows(ds.CocoDataset(str(tmp_path), str(ann), task="Captioning", shuffle=False))
    assert caps[0][0].tobytes() == raw[1]
    assert [str(c) for c in caps[1][1]] == ["a dog", "and a person"]
    with pytest.raises(NotImplementedError):
        ds.CocoDataset(str(tmp_path), str(ann), task="Captioning").get_class_indexing()


def test_coco_stuff_keypoint_panoptic(tmp_path):
    _, raw, doc = _coco_tree(tmp_path)
    kp = list(range(51))
    doc["annotations"] = [
        {"image_id": 2, "segmentation": [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10]], "iscrowd": 0,
         "keypoints": kp, "num_keypoints": 17},
        {"image_id": 2, "segmentation": {"counts": [3, 1, 2], "size": [6, 5]}, "iscrowd": 1,
         "keypoints": kp[::-1], "num_keypoints": 5}]
    ann = tmp_path / "stuff.json"
    ann.write_text(json.dumps(doc))
    ((img, seg, crowd),) = _rows(ds.CocoDataset(str(tmp_path), str(ann), task="Stuff"))
    assert img.tobytes() == raw[2] and seg.dtype == np.float32
    np.testing.assert_array_equal(seg, [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [3, 1, 2] + [-1] * 7])
    assert crowd.ravel().tolist() == [0, 1]
    ((_, kps, nkp),) = _rows(ds.CocoDataset(str(tmp_path), str(ann), task="Keypoint"))
    np.testing.assert_array_equal(kps, [kp, kp[::-1]])
    assert nkp.ravel().tolist() == [17, 5] and kps.shape == (2, 51)
    doc["annotations"] = [{"image_id": 1, "file_name": "1.png", "segments_info": [
        {"id": 5, "category_id": 184, "iscrowd": 0, "bbox": [1, 1, 2, 2], "area": 4},
        {"id": 6, "category_id": 1, "iscrowd": 1, "bbox": [0, 0, 5, 6], "area": 30}]}]
    ann.write_text(json.dumps(doc))
    d = ds.CocoDataset(str(tmp_path), str(ann), task="Panoptic")
    assert d.get_class_indexing()["tree"] == [184, 0]
    ((_, bbox, cat, crowd, area),) = _rows(d)
    np.testing.assert_array_equal(bbox, [[1, 1, 2, 2], [0, 0, 5, 6]])
    assert cat.ravel().tolist() == [184, 1] and crowd.ravel().tolist() == [0, 1]
    assert area.ravel().tolist() == [4, 30] and area.dtype == np.uint32


def test_coco_errors(tmp_path):
    _, _, doc = _coco_tree(tmp_path)
    ann = tmp_path / "a.json"
    doc["annotations"] = [{"image_id": 9, "bbox": [1, 2, 3, 4], "category_id": 1}]
    ann.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"annotations\[0\]: image_id 9 is not in 'images'"):
        ds.CocoDataset(str(tmp_path), str(ann))
    doc["annotations"] = [{"image_id": 1, "bbox": [1, 2, 3], "category_id": 1}]
    ann.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="'bbox' must be a list of 4 numbers"):
        ds.CocoDataset(str(tmp_path), str(ann))
    doc["annotations"] = [{"image_id": 1, "bbox": [1, 2, 3, 4], "category_id": -1}]
    ann.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"'category_id' must be in \[0, 2\^32\), got -1"):
        ds.CocoDataset(str(tmp_path), str(ann))
    ann.write_text("{not json")
    with pytest.raises(ValueError, match="is not a JSON document"):
        ds.CocoDataset(str(tmp_path), str(ann))
    with pytest.raises(ValueError, match="Invalid task type"):
        ds.CocoDataset(str(tmp_path), str(ann), task="Segmentation")


def test_celeba(tmp_path):
    names = ["5_o_Clock_Shadow", "Arched_Eyebrows", "Smiling"]
    rng = np.random.default_rng(0)
    files = [f"{k:06d}.jpg" for k in range(1, 6)] + ["000006.png"]
    attrs = rng.choice([-1, 1], (len(files), len(names)))
    parts = [0, 0, 1, 2, 0, 2]
    raw = {f: _png(tmp_path / f, _img(k)) for k, f in enumerate(files)}
    lines = [str(len(files)), " ".join(names)] + [f"{f}  " + " ".join(f"{v:2d}" for v in a)
                                                   for f, a in zip(files, attrs)]
    (tmp_path / "list_attr_celeba.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "list_eval_partition.txt").write_text("".join(f"{f} {p}\n" for f, p in zip(files, parts)))
    for usage, code in (("all", None), ("train", 0), ("valid", 1), ("test", 2)):
        got = _rows(ds.CelebADataset(str(tmp_path), usage=usage, shuffle=False))
        expect = [k for k, p in enumerate(parts) if code is None or p == code]
        assert len(got) == len(expect)
        for (img, attr), k in zip(got, expect):
            assert img.tobytes() == raw[files[k]]
            assert attr.dtype == np.uint32 and attr.tolist() == [(v + 1) // 2 for v in attrs[k]]
    got = _rows(ds.CelebADataset(str(tmp_path), extensions=[".PNG"], decode=True))
    assert len(got) == 1
    np.testing.assert_array_equal(got[0][0], _img(5))
    assert len(_rows(ds.CelebADataset(str(tmp_path), num_shards=3, shard_id=2))) == 2
    (tmp_path / "list_attr_celeba.txt").write_text("\n".join(lines[:3] + ["000002.jpg 1 x 1"]) + "\n")
    with pytest.raises(ValueError, match="declares 6 images but lists 2"):
        ds.CelebADataset(str(tmp_path))
    (tmp_path / "list_attr_celeba.txt").write_text("\n".join(["2"] + lines[1:3] + ["000002.jpg 1 x 1"]))
    with pytest.raises(ValueError, match=r"list_attr_celeba.txt':4: expected a file name and 3 values"):
        ds.CelebADataset(str(tmp_path))
    with pytest.raises(ValueError, match="valid set"):
        ds.CelebADataset(str(tmp_path), usage="val")
