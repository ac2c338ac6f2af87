"""KMnist, EMnist, SVHN, STL10, Places365, Flickr and SBU datasets as a MindSpore user calls them,
on small trees written here in the real on-disk formats (IDX by struct, .mat by scipy.io.savemat,
an independent writer, STL-10 bytes laid out by hand, images by Pillow): rows against what was
written."""
import struct

import numpy as np
import pytest
import scipy.io
from PIL import Image

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _idx(path, arr):
    arr = np.asarray(arr, np.uint8)
    path.write_bytes(bytes([0, 0, 8, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.tobytes())


@pytest.mark.parametrize("cls", [ds.KMnistDataset, ds.FashionMnistDataset])
def test_mnist_layout_sources(tmp_path, cls):
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, (4, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1], np.uint8)
    _idx(tmp_path / "train-images-idx3-ubyte", imgs)
    _idx(tmp_path / "train-labels-idx1-ubyte", labels)
    got = _rows(cls(str(tmp_path), usage="train", shuffle=False))
    assert len(got) == 4
    for (img, lab), ref, lr in zip(got, imgs, labels):
        np.testing.assert_array_equal(img, ref[:, :, None])
        assert int(lab) == lr


def test_emnist_name_and_usage(tmp_path):
    rng = np.random.default_rng(1)
    data = {}
    for part, n in (("train", 5), ("test", 3)):
        imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(1, 27, n, dtype=np.uint8)
        _idx(tmp_path / f"emnist-letters-{part}-images-idx3-ubyte", imgs)
        _idx(tmp_path / f"emnist-letters-{part}-labels-idx1-ubyte", labels)
        data[part] = (imgs, labels)
    got = _rows(ds.EMnistDataset(str(tmp_path), name="letters", usage="test", shuffle=False))
    assert len(got) == 3
    for (img, lab), ref, lr in zip(got, *data["test"]):
        assert img.shape == (28, 28, 1) and img.dtype == np.uint8
        np.testing.assert_array_equal(img[:, :, 0], ref)
        assert lab.dtype == np.uint32 and int(lab) == lr
    allrows = _rows(ds.EMnistDataset(str(tmp_path), "letters", shuffle=False))
    assert [int(r[1]) for r in allrows] == list(data["train"][1]) + list(data["test"][1])
    d = ds.EMnistDataset(str(tmp_path), "letters", num_shards=2, shard_id=1, shuffle=False)
    assert d.get_dataset_size() == 4
    with pytest.raises(ValueError, match="Input name is not within"):
        ds.EMnistDataset(str(tmp_path), "kanji")
    with pytest.raises(ValueError, match="emnist-digits-train-images-idx3-ubyte"):
        ds.EMnistDataset(str(tmp_path), "digits", usage="train")
    # a label file shorter than its header says
    raw = (tmp_path / "emnist-letters-test-labels-idx1-ubyte").read_bytes()
    (tmp_path / "emnist-letters-test-labels-idx1-ubyte").write_bytes(raw[:-1])
    with pytest.raises(ValueError, match=r"emnist-letters-test-labels-idx1-ubyte' declares dimensions \[3\]"):
        ds.EMnistDataset(str(tmp_path), "letters", usage="test")


@pytest.mark.parametrize("compress", [False, True])
def test_svhn_mat(tmp_path, compress):
    rng = np.random.default_rng(2)
    sets = {}
    for part, n in (("train", 4), ("test", 2), ("extra", 3)):
        x = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = rng.integers(1, 11, (n, 1)).astype(np.float64)  # the real files store y as doubles
        scipy.io.savemat(tmp_path / f"{part}_32x32.mat", {"X": x, "y": y}, do_compression=compress)
        sets[part] = (x, y)
    got = _rows(ds.SVHNDataset(str(tmp_path), usage="train", shuffle=False))
    x, y = sets["train"]
    assert len(got) == 4
    for k, (img, lab) in enumerate(got):
        np.testing.assert_array_equal(img, x[:, :, :, k])
        assert lab.dtype == np.uint32 and int(lab) == int(y[k, 0]) % 10
    every = _rows(ds.SVHNDataset(str(tmp_path), shuffle=False))
    assert len(every) == 9
    np.testing.assert_array_equal(every[-1][0], sets["extra"][0][:, :, :, 2])
    assert len(_rows(ds.SVHNDataset(str(tmp_path), "test", num_samples=1))) == 1


def test_svhn_bad_files(tmp_path):
    with pytest.raises(ValueError, match="train_32x32.mat does not exist"):
        ds.SVHNDataset(str(tmp_path), "train")
    scipy.io.savemat(tmp_path / "train_32x32.mat", {"X": np.zeros((32, 32, 3, 2), np.uint8),
                                                     "y": np.ones((2, 1))})
    raw = (tmp_path / "train_32x32.mat").read_bytes()
    (tmp_path / "train_32x32.mat").write_bytes(raw[:300])
    with pytest.raises(ValueError, match="train_32x32.mat' is not a MATLAB 5 file: a data element"):
        ds.SVHNDataset(str(tmp_path), "train")
    (tmp_path / "train_32x32.mat").write_bytes(b"\x89HDF\r\n" + bytes(600))
    with pytest.raises(ValueError, match="MATLAB 7.3"):
        ds.SVHNDataset(str(tmp_path), "train")
    scipy.io.savemat(tmp_path / "train_32x32.mat", {"X": np.zeros((32, 32, 2, 2), np.uint8),
                                                     "y": np.ones((2, 1))})
    with pytest.raises(ValueError, match=r"X must be \(32, 32, 3, N\)"):
        ds.SVHNDataset(str(tmp_path), "train")
    with pytest.raises(ValueError, match="Input usage is not within"):
        ds.SVHNDataset(str(tmp_path), "val")


def _stl_bytes(img):
    """An HWC image in STL-10's layout: channel by channel, each column by column."""
    return img.transpose(2, 1, 0).tobytes()


def test_stl10(tmp_path):
    rng = np.random.default_rng(3)
    imgs = {p: rng.integers(0, 256, (n, 96, 96, 3), dtype=np.uint8)
            for p, n in (("train", 3), ("test", 2), ("unlabeled", 2))}
    labels = {"train": np.array([1, 10, 5], np.uint8), "test": np.array([2, 7], np.uint8)}
    for p, a in imgs.items():
        (tmp_path / f"{p}_X.bin").write_bytes(b"".join(_stl_bytes(i) for i in a))
    for p, y in labels.items():
        (tmp_path / f"{p}_y.bin").write_bytes(y.tobytes())
    got = _rows(ds.STL10Dataset(str(tmp_path), usage="train", shuffle=False))
    for (img, lab), ref, y in zip(got, imgs["train"], labels["train"]):
        np.testing.assert_array_equal(img, ref)
        assert lab.dtype == np.int32 and int(lab) == y - 1
    got = _rows(ds.STL10Dataset(str(tmp_path), usage="train+unlabeled", shuffle=False))
    assert [int(r[1]) for r in got] == [0, 9, 4, -1, -1]
    np.testing.assert_array_equal(got[4][0], imgs["unlabeled"][1])
    assert ds.STL10Dataset(str(tmp_path)).get_dataset_size() == 7
    (tmp_path / "test_y.bin").write_bytes(b"\x02")
    with pytest.raises(ValueError, match="test_y.bin' holds 1 labels but .*test_X.bin' 2 images"):
        ds.STL10Dataset(str(tmp_path), usage="test")
    (tmp_path / "test_X.bin").write_bytes(bytes(100))
    with pytest.raises(ValueError, match="test_X.bin' holds 100 bytes"):
        ds.STL10Dataset(str(tmp_path), usage="test")


def _png(path, arr):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, format="PNG")
    return path.read_bytes()


def _img(seed):
    return np.random.default_rng(seed).integers(0, 256, (5, 4, 3), dtype=np.uint8)


def test_places365(tmp_path):
    (tmp_path / "categories_places365.txt").write_text("/a/airfield 0\n/b/bakery/shop 1\n")
    (tmp_path / "places365_train_standard.txt").write_text(
        "/a/airfield/00000001.jpg 0\n/b/bakery/shop/00000002.jpg 1\n")
    (tmp_path / "places365_val.txt").write_text("Places365_val_00000001.jpg 1\n")
    raw = {"a": _png(tmp_path / "data_256_standard/a/airfield/00000001.jpg", _img(0)),
           "b": _png(tmp_path / "data_256_standard/b/bakery/shop/00000002.jpg", _img(1))}
    val = _img(2)
    _png(tmp_path / "val_large/Places365_val_00000001.jpg", val)
    d = ds.Places365Dataset(str(tmp_path), shuffle=False)
    got = _rows(d)
    assert d.categories == {"/a/airfield": 0, "/b/bakery/shop": 1}
    assert [r[0].tobytes() for r in got] == [raw["a"], raw["b"]]
    assert [int(r[1]) for r in got] == [0, 1] and got[0][1].dtype == np.uint32
    got = _rows(ds.Places365Dataset(str(tmp_path), usage="val", small=False, decode=True))
    np.testing.assert_array_equal(got[0][0], val)
    with pytest.raises(ValueError, match="places365_train_challenge.txt does not exist"):
        ds.Places365Dataset(str(tmp_path), usage="train-challenge")
    (tmp_path / "places365_val.txt").write_text("Places365_val_00000001.jpg one\n")
    with pytest.raises(ValueError, match=r"places365_val.txt':1: expected '<image path> <label>'"):
        ds.Places365Dataset(str(tmp_path), usage="val")


def test_flickr(tmp_path):
    imgs = {"b.jpg": _img(3), "a.jpg": _img(4)}
    for name, a in imgs.items():
        _png(tmp_path / "images" / name, a)
    (tmp_path / "images" / "notes.jpg").write_text("not an image")
    ann = tmp_path / "captions.txt"
    ann.write_text("b.jpg#0\tA dog runs.\na.jpg#0\tTwo cats.\nb.jpg#1\tThe dog is brown.\n"
                   "notes.jpg#0\tskipped\n")
    got = _rows(ds.FlickrDataset(str(tmp_path / "images"), str(ann), decode=True, shuffle=False))
    assert len(got) == 2  # the text file is skipped, images come in name order
    np.testing.assert_array_equal(got[0][0], imgs["a.jpg"])
    assert list(got[0][1]) == ["Two cats."]
    np.testing.assert_array_equal(got[1][0], imgs["b.jpg"])
    assert list(got[1][1]) == ["A dog runs.", "The dog is brown."]
    ann.write_text("c.jpg#0\tmissing\n")
    with pytest.raises(ValueError, match=r"captions.txt':1: the image .*c.jpg does not exist"):
        ds.FlickrDataset(str(tmp_path / "images"), str(ann))
    ann.write_text("a.jpg no tab\n")
    with pytest.raises(ValueError, match="expected '<image>#<k>"):
        ds.FlickrDataset(str(tmp_path / "images"), str(ann))


def test_sbu(tmp_path):
    urls = ["http://x.org/1/p1.jpg", "http://x.org/2/p2.jpg", "http://x.org/3/p3.jpg"]
    caps = ["a red boat", "no file for this one", "snow on trees"]
    (tmp_path / "SBU_captioned_photo_dataset_urls.txt").write_text("\n".join(urls) + "\n")
    (tmp_path / "SBU_captioned_photo_dataset_captions.txt").write_text("\n".join(caps) + "\n")
    a, b = _img(5), _img(6)
    _png(tmp_path / "sbu_images/p1.jpg", a)
    _png(tmp_path / "sbu_images/p3.jpg", b)
    got = _rows(ds.SBUDataset(str(tmp_path), decode=True, shuffle=False))
    assert len(got) == 2
    np.testing.assert_array_equal(got[0][0], a)
    np.testing.assert_array_equal(got[1][0], b)
    assert [str(r[1]) for r in got] == ["a red boat", "snow on trees"]
    (tmp_path / "SBU_captioned_photo_dataset_captions.txt").write_text("one\n")
    with pytest.raises(ValueError, match="lists 3 URLs but .* 1 captions"):
        ds.SBUDataset(str(tmp_path))


def test_readers_raise_only_value_errors_on_corrupt_bytes(tmp_path):
    """Truncated, bit-flipped and forged-length .mat and IDX files give ValueError, never
    another exception (a quick mutation run; the fuzz jobs go further)."""
    import io
    from mycel.dataset.image_sources import read_idx
    from mycel.dataset.matlab import load_mat
    rng = np.random.default_rng(9)
    seeds = []
    for compress in (False, True):
        buf = io.BytesIO()
        scipy.io.savemat(buf, {"X": rng.integers(0, 256, (4, 4, 3, 2), dtype=np.uint8), "y": np.ones((2, 1)),
                               "s": "hi", "z": np.array([1 + 2j])}, do_compression=compress)
        seeds.append(buf.getvalue())
    seeds.append(bytes([0, 0, 8, 3]) + struct.pack(">III", 2, 3, 3) + bytes(range(18)))
    for it in range(300):
        data = bytearray(seeds[it % 3])
        for _ in range(int(rng.integers(1, 4))):
            k, p = int(rng.integers(3)), int(rng.integers(len(data)))
            if k == 0:
                del data[p:]
            elif k == 1:
                data[p] = int(rng.integers(256))
            else:
                data[p:p + 4] = struct.pack("<I", int(rng.integers(2 ** 32)))
            if len(data) < 2:
                break
        path = tmp_path / ("f.idx" if it % 3 == 2 else "f.mat")
        path.write_bytes(bytes(data))
        try:
            read_idx(str(path), "T", 3) if it % 3 == 2 else load_mat(str(path))
        except ValueError:
            pass
