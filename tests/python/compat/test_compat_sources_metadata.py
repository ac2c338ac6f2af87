"""extra_metadata and decrypt as a MindSpore user passes them to VOCDataset and CocoDataset, on small
trees written here (images by Pillow, XML by hand, JSON by json): the hidden '_meta-filename' column
against the written file names, and images read through a user's decrypt callable against the
plain pixels."""
import json

import numpy as np
import pytest
from PIL import Image

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _jpg(path, seed):
    """A file named .jpg holding a PNG of random (4, 5, 3) pixels (decode sniffs the format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = np.random.default_rng(seed).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    Image.fromarray(arr).save(path, format="PNG")
    return arr


def _voc_tree(root):
    ids = ["2008_000001", "2008_000002"]
    (root / "ImageSets" / "Main").mkdir(parents=True)
    (root / "ImageSets" / "Main" / "train.txt").write_text("\n".join(ids) + "\n")
    (root / "Annotations").mkdir()
    for k, i in enumerate(ids):
        _jpg(root / "JPEGImages" / f"{i}.jpg", k)
        (root / "Annotations" / f"{i}.xml").write_text(
            "<annotation><object><name>dog</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>3</xmax>"
            "<ymax>4</ymax></bndbox></object></annotation>")
    return ids


def test_extra_metadata_voc_and_coco(tmp_path):
    ids = _voc_tree(tmp_path)
    d = ds.VOCDataset(str(tmp_path), task="Detection", usage="train", extra_metadata=True, shuffle=False)
    assert d.get_col_names()[-1] == "_meta-filename"
    # hidden from the iterators, as MindSpore's '_meta-' columns are, until renamed
    assert len(_rows(d)[0]) == 5
    named = d.rename("_meta-filename", "filename")
    got = list(named.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [str(r["filename"]) for r in got] == ids
    np.testing.assert_allclose(got[0]["bbox"], [[1, 1, 2, 3]])

    coco = tmp_path / "coco"
    coco.mkdir()
    for k, name in enumerate(("a.jpg", "b.jpg")):
        _jpg(coco / name, k)
    ann = {"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}],
           "annotations": [{"id": 5, "image_id": i, "bbox": [0, 0, 1, 1], "category_id": 1, "iscrowd": 0}
                           for i in (1, 2)],
           "categories": [{"id": 1, "name": "x"}]}
    (coco / "ann.json").write_text(json.dumps(ann))
    d = ds.CocoDataset(str(coco), str(coco / "ann.json"), extra_metadata=True, shuffle=False)
    rows = list(d.rename(["_meta-filename"], ["filename"]).create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [str(r["filename"]) for r in rows] == ["a.jpg", "b.jpg"]
    with pytest.raises(TypeError, match="extra_metadata"):
        ds.CocoDataset(str(coco), str(coco / "ann.json"), extra_metadata="yes")


def test_decrypt_hook(tmp_path):
    ids = _voc_tree(tmp_path)
    key = 0x5A
    for i in ids:  # 'encrypt' each image by XOR; decrypt undoes it
        p = tmp_path / "JPEGImages" / f"{i}.jpg"
        p.write_bytes(bytes(b ^ key for b in p.read_bytes()))
    seen = []

    def decrypt(path):
        seen.append(path)
        with open(path, "rb") as f:
            return bytes(b ^ key for b in f.read())

    got = _rows(ds.VOCDataset(str(tmp_path), task="Detection", decode=True, decrypt=decrypt, shuffle=False))
    np.testing.assert_array_equal(got[1][0], np.random.default_rng(1).integers(0, 256, (4, 5, 3), dtype=np.uint8))
    assert len(seen) == 2 and seen[0].endswith(f"{ids[0]}.jpg")
    with pytest.raises(TypeError, match="decrypt .* is not callable"):
        ds.VOCDataset(str(tmp_path), task="Detection", decrypt="key")

    def bad(path):
        return 42

    with pytest.raises(Exception, match="decrypt must return the image's bytes"):
        _rows(ds.VOCDataset(str(tmp_path), task="Detection", decrypt=bad))
