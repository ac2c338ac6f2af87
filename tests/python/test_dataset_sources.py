"""File sources (MNIST IDX, CIFAR binary, ImageFolder, CSV) against fixtures written with numpy,
and their errors on corrupt or truncated files."""
import gzip
import os
import struct

import numpy as np
import pytest

import mycel.dataset as ds
from mycel import _mycel

FASHION = "/usr/share/datasets/fashion-mnist"


def rows(dataset):
    """All rows of a dataset as lists of numpy arrays, in order (shuffle=False)."""
    if hasattr(dataset, "create_tuple_iterator"):
        return [[np.asarray(c) for c in r]
                for r in dataset.create_tuple_iterator(output_numpy=True, num_epochs=1)]
    return [[c.asnumpy() for c in r] for r in dataset]


def source_rows(name, **kw):
    src = _mycel.data.make_source(name, **kw)
    return src, [[c.asnumpy() for c in src.get(i)] for i in range(len(src))]


# ---- MNIST ---------------------------------------------------------------------------------

def write_idx(path, array, magic, gz=False):
    head = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    data = head + array.astype(np.uint8).tobytes()
    if gz:
        data = gzip.compress(data)
        path = str(path) + ".gz"
    with open(path, "wb") as f:
        f.write(data)
    return path


def write_mnist(d, prefix, n, rng, gz=False, rows_=28, cols=28):
    images = rng.integers(0, 256, size=(n, rows_, cols), dtype=np.uint8)
    labels = rng.integers(0, 10, size=(n,), dtype=np.uint8)
    write_idx(d / f"{prefix}-images-idx3-ubyte", images, 0x803, gz)
    write_idx(d / f"{prefix}-labels-idx1-ubyte", labels, 0x801, gz)
    return images, labels


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_matches_numpy(tmp_path, gz):
    rng = np.random.default_rng(0)
    tr_img, tr_lab = write_mnist(tmp_path, "train", 7, rng, gz)
    te_img, te_lab = write_mnist(tmp_path, "t10k", 3, rng, gz)
    for usage, img, lab in [("train", tr_img, tr_lab), ("test", te_img, te_lab),
                            ("all", np.concatenate([tr_img, te_img]), np.concatenate([tr_lab, te_lab]))]:
        src, got = source_rows("MnistDataset", dataset_dir=str(tmp_path), usage=usage)
        assert src.column_names == ["image", "label"]
        assert len(got) == len(lab)
        for (image, label), ei, el in zip(got, img, lab):
            assert image.dtype == np.uint8 and image.shape == (28, 28, 1)
            assert label.dtype == np.int32 and label.shape == ()
            np.testing.assert_array_equal(image[..., 0], ei)
            assert label == el
    data = ds.MnistDataset(str(tmp_path), usage="train", shuffle=False)
    assert data.get_dataset_size() == 7
    got = rows(data)
    np.testing.assert_array_equal(np.stack([r[0][..., 0] for r in got]), tr_img)
    np.testing.assert_array_equal([int(r[1]) for r in got], tr_lab)


def test_mnist_default_usage_is_all_and_odd_sizes(tmp_path):
    rng = np.random.default_rng(1)
    write_mnist(tmp_path, "train", 4, rng, rows_=5, cols=3)
    write_mnist(tmp_path, "t10k", 2, rng, rows_=5, cols=3)
    src = _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path))
    assert len(src) == 6
    assert src.get(5)[0].shape == (5, 3, 1)
    assert ds.MnistDataset(str(tmp_path), shuffle=False).get_dataset_size() == 6


@pytest.mark.skipif(not os.path.isdir(FASHION), reason="dataset-fashion-mnist not installed")
def test_real_fashion_mnist():
    with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    src = _mycel.data.make_source("MnistDataset", dataset_dir=FASHION, usage="train")
    assert len(src) == 60000 == len(labels)
    for i in (0, 1, 31337, 59999):
        image, label = src.get(i)
        np.testing.assert_array_equal(image.asnumpy()[..., 0], images[i])
        assert int(label.asnumpy()) == labels[i]
    assert len(_mycel.data.make_source("MnistDataset", dataset_dir=FASHION, usage="test")) == 10000
    assert ds.MnistDataset(FASHION, shuffle=False).get_dataset_size() == 70000


@pytest.mark.parametrize("value", [10, 255])
def test_mnist_label_out_of_range_names_file_and_record(tmp_path, value):
    _, labels = write_mnist(tmp_path, "train", 6, np.random.default_rng(16))
    labels[4] = value
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels, 0x801)
    with pytest.raises(ValueError, match=rf"\[MnistDataset\] file '.*train-labels-idx1-ubyte' "
                                         rf"record 4 has label {value}, expected 0\.\.9"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")


def test_mnist_truncated_images(tmp_path):
    rng = np.random.default_rng(2)
    write_mnist(tmp_path, "train", 100, rng)
    path = tmp_path / "train-images-idx3-ubyte"
    data = path.read_bytes()
    path.write_bytes(data[:16 + 50 * 784])  # header still says 100 images
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.*truncated.*78416 bytes.*39216"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    path.write_bytes(data + b"\0")
    with pytest.raises(ValueError, match="longer than its header"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    path.write_bytes(data[:10])  # not even a header
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.*truncated"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")


def test_mnist_header_overflow_is_rejected(tmp_path):
    # 2^32-1 images of 2^32-1 x 2^32-1 pixels: the product overflows 64 bits.
    (tmp_path / "train-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 0x803, *(3 * [0xFFFFFFFF])))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(1, np.uint8), 0x801)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")


def test_mnist_bad_magic_and_count_mismatch(tmp_path):
    rng = np.random.default_rng(3)
    write_mnist(tmp_path, "train", 5, rng)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(4, np.uint8), 0x801)
    with pytest.raises(ValueError, match=r"5 images but .*train-labels-idx1-ubyte.* 4 labels"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(5, np.uint8), 0x803)
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte.*magic number 0x00000803.*0x00000801"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")


def test_mnist_gzip_corruption(tmp_path):
    rng = np.random.default_rng(4)
    write_mnist(tmp_path, "train", 20, rng, gz=True)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # truncated stream
    with pytest.raises(ValueError, match=r"corrupt gzip file .*train-images-idx3-ubyte.gz.*truncated"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    bad = bytearray(good)
    for i in range(20, len(bad) - 8, 7):  # scramble the deflate data
        bad[i] ^= 0x5A
    path.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.gz"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    bad = bytearray(good)
    bad[-6] ^= 1  # CRC of the data
    path.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=r"corrupt gzip file .*train-images-idx3-ubyte.gz"):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")


def test_mnist_concatenated_gzip_members(tmp_path):
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    raw = struct.pack(">IIII", 0x803, 2, 28, 28) + images.tobytes()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(raw[:100]) + gzip.compress(raw[100:]))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.array([3, 4], np.uint8), 0x801, gz=True)
    src, got = source_rows("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    np.testing.assert_array_equal(got[1][0][..., 0], images[1])


def test_mnist_missing_files_and_dir(tmp_path):
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.*" + str(tmp_path)):
        _mycel.data.make_source("MnistDataset", dataset_dir=str(tmp_path), usage="train")
    missing = str(tmp_path / "nope")
    with pytest.raises(ValueError, match="nope"):
        _mycel.data.make_source("MnistDataset", dataset_dir=missing)
    with pytest.raises(ValueError, match="nope.*does not exist"):
        ds.MnistDataset(missing)


def test_mnist_argument_checks(tmp_path):
    write_mnist(tmp_path, "train", 2, np.random.default_rng(5))
    d = str(tmp_path)
    with pytest.raises(TypeError, match="dataset_dir"):
        ds.MnistDataset(3)
    with pytest.raises(ValueError, match="usage"):
        ds.MnistDataset(d, usage="valid")
    with pytest.raises(TypeError, match="usage"):
        ds.MnistDataset(d, usage=1)
    with pytest.raises(ValueError, match="num_samples"):
        ds.MnistDataset(d, usage="train", num_samples=-1)
    with pytest.raises(TypeError, match="num_samples"):
        ds.MnistDataset(d, usage="train", num_samples=1.5)
    with pytest.raises(TypeError, match="shuffle"):
        ds.MnistDataset(d, usage="train", shuffle=1)
    with pytest.raises(ValueError, match="num_parallel_workers"):
        ds.MnistDataset(d, usage="train", num_parallel_workers=0)
    with pytest.raises(RuntimeError, match="num_shards and shard_id"):
        ds.MnistDataset(d, usage="train", num_shards=2)
    with pytest.raises(ValueError, match="shard_id"):
        ds.MnistDataset(d, usage="train", num_shards=2, shard_id=2)
    with pytest.raises(ValueError, match="usage"):
        _mycel.data.make_source("MnistDataset", dataset_dir=d, usage="bad")


# ---- CIFAR ---------------------------------------------------------------------------------

def write_cifar(path, n, label_bytes, rng):
    classes = [10] if label_bytes == 1 else [20, 100]  # CIFAR-10; CIFAR-100 coarse, fine
    labels = np.stack([rng.integers(0, c, size=n, dtype=np.uint8) for c in classes], axis=1)
    chw = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
    path.write_bytes(np.concatenate([labels, chw.reshape(n, -1)], axis=1).tobytes())
    return chw.transpose(0, 2, 3, 1), labels


def test_cifar10_matches_numpy(tmp_path):
    rng = np.random.default_rng(10)
    parts = [write_cifar(tmp_path / f"data_batch_{i}.bin", n, 1, rng) for i, n in [(1, 3), (2, 2)]]
    test_img, test_lab = write_cifar(tmp_path / "test_batch.bin", 4, 1, rng)
    (tmp_path / "batches.meta.txt").write_text("airplane\n")
    train_img = np.concatenate([p[0] for p in parts])
    train_lab = np.concatenate([p[1] for p in parts])[:, 0]
    for usage, img, lab in [("train", train_img, train_lab), ("test", test_img, test_lab[:, 0]),
                            ("all", np.concatenate([train_img, test_img]),
                             np.concatenate([train_lab, test_lab[:, 0]]))]:
        src, got = source_rows("Cifar10Dataset", dataset_dir=str(tmp_path), usage=usage)
        assert src.column_names == ["image", "label"]
        assert len(got) == len(lab)
        np.testing.assert_array_equal(np.stack([r[0] for r in got]), img)
        assert all(r[0].shape == (32, 32, 3) and r[0].dtype == np.uint8 for r in got)
        assert all(r[1].dtype == np.int32 and r[1].shape == () for r in got)
        np.testing.assert_array_equal([int(r[1]) for r in got], lab)
    data = ds.Cifar10Dataset(str(tmp_path), usage="test", shuffle=False)
    assert data.get_dataset_size() == 4
    np.testing.assert_array_equal(np.stack([r[0] for r in rows(data)]), test_img)


def test_cifar100_matches_numpy(tmp_path):
    rng = np.random.default_rng(11)
    img, lab = write_cifar(tmp_path / "train.bin", 5, 2, rng)
    write_cifar(tmp_path / "test.bin", 2, 2, rng)
    src, got = source_rows("Cifar100Dataset", dataset_dir=str(tmp_path), usage="train")
    assert src.column_names == ["image", "coarse_label", "fine_label"]
    np.testing.assert_array_equal(np.stack([r[0] for r in got]), img)
    np.testing.assert_array_equal([[int(r[1]), int(r[2])] for r in got], lab)
    assert ds.Cifar100Dataset(str(tmp_path), shuffle=False).get_dataset_size() == 7


@pytest.mark.parametrize("kind,column,value", [("Cifar10Dataset", "label", 10),
                                                ("Cifar10Dataset", "label", 255),
                                                ("Cifar100Dataset", "coarse_label", 20),
                                                ("Cifar100Dataset", "fine_label", 100)])
def test_cifar_label_out_of_range_names_file_and_record(tmp_path, kind, column, value):
    ten = kind == "Cifar10Dataset"
    name = "data_batch_1.bin" if ten else "train.bin"
    write_cifar(tmp_path / name, 6, 1 if ten else 2, np.random.default_rng(14))
    raw = bytearray((tmp_path / name).read_bytes())
    record = 3073 if ten else 3074
    raw[4 * record + (1 if column == "fine_label" else 0)] = value  # record 4's label byte
    (tmp_path / name).write_bytes(bytes(raw))
    classes = {"label": 10, "coarse_label": 20, "fine_label": 100}[column]
    msg = rf"\[{kind}\] file '.*{name}' record 4 has {column} {value}, expected 0\.\.{classes - 1}"
    src = _mycel.data.make_source(kind, dataset_dir=str(tmp_path), usage="train")
    for i in range(4):
        src.get(i)
    with pytest.raises(ValueError, match=msg):
        src.get(4)
    # Through the pipeline the 4 good rows arrive first, then the error.
    got = []
    data = getattr(ds, kind)(str(tmp_path), usage="train", shuffle=False)
    with pytest.raises(ValueError, match=msg):
        for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
            got.append(r)
    assert len(got) == 4


def test_cifar_empty_batch_file(tmp_path):
    write_cifar(tmp_path / "data_batch_1.bin", 2, 1, np.random.default_rng(15))
    (tmp_path / "data_batch_2.bin").write_bytes(b"")
    with pytest.raises(ValueError, match=r"\[Cifar10Dataset\] file '.*data_batch_2.bin' is empty"):
        _mycel.data.make_source("Cifar10Dataset", dataset_dir=str(tmp_path), usage="train")


def test_cifar_wrong_size_and_missing_files(tmp_path):
    rng = np.random.default_rng(12)
    write_cifar(tmp_path / "data_batch_1.bin", 2, 1, rng)
    with open(tmp_path / "data_batch_1.bin", "ab") as f:
        f.write(b"\1\2\3")
    with pytest.raises(ValueError, match=r"data_batch_1.bin.* 6149 bytes, not a multiple of the 3073"):
        _mycel.data.make_source("Cifar10Dataset", dataset_dir=str(tmp_path), usage="train")
    with pytest.raises(ValueError, match="test_batch.bin"):
        _mycel.data.make_source("Cifar10Dataset", dataset_dir=str(tmp_path), usage="test")
    write_cifar(tmp_path / "train.bin", 2, 1, rng)  # CIFAR-10 records in a CIFAR-100 file
    with pytest.raises(ValueError, match=r"train.bin.*3074"):
        _mycel.data.make_source("Cifar100Dataset", dataset_dir=str(tmp_path), usage="train")
    with pytest.raises(ValueError, match="does not exist"):
        ds.Cifar10Dataset(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="usage"):
        ds.Cifar100Dataset(str(tmp_path), usage="eval")


# ---- ImageFolder ---------------------------------------------------------------------------

def make_tree(root):
    """bird/cat/dog folders with a few byte blobs; returns the expected (bytes, label) rows."""
    files = {"cat": ["b.PNG", "a.jpg", "notes.txt"], "dog": ["x.jpeg", "y.JPG"], "bird": ["z.png"]}
    expected = []
    for label, cls in enumerate(sorted(files)):
        os.makedirs(root / cls)
        os.makedirs(root / cls / "nested")  # sub-folders of a class are not read
        (root / cls / "nested" / "deep.jpg").write_bytes(b"deep")
        for name in files[cls]:
            blob = f"{cls}/{name}".encode() * (1 + len(name))
            (root / cls / name).write_bytes(blob)
        for name in sorted(files[cls]):
            if not name.endswith(".txt"):
                expected.append((f"{cls}/{name}".encode() * (1 + len(name)), label, cls))
    (root / "README").write_text("not a class")
    return expected


def test_image_folder_raw_bytes(tmp_path):
    expected = make_tree(tmp_path)
    src, got = source_rows("ImageFolderDataset", dataset_dir=str(tmp_path))
    assert src.column_names == ["image", "label"]
    assert len(got) == len(expected) == 5
    for (image, label), (blob, lab, _) in zip(got, expected):
        assert image.dtype == np.uint8 and image.ndim == 1
        assert image.tobytes() == blob
        assert label.dtype == np.int32 and int(label) == lab
    data = ds.ImageFolderDataset(str(tmp_path), shuffle=False)
    assert data.get_dataset_size() == 5
    assert [r[0].tobytes() for r in rows(data)] == [e[0] for e in expected]
    assert data.get_class_indexing() == {"bird": 0, "cat": 1, "dog": 2}


def test_image_folder_class_indexing_and_extensions(tmp_path):
    expected = make_tree(tmp_path)
    data = ds.ImageFolderDataset(str(tmp_path), class_indexing={"dog": 7, "cat": 3}, shuffle=False)
    got = rows(data)
    want = [(b, {"dog": 7, "cat": 3}[c]) for b, _, c in expected if c in ("dog", "cat")]
    assert [(r[0].tobytes(), int(r[1])) for r in got] == want
    assert data.get_class_indexing() == {"dog": 7, "cat": 3}
    data = ds.ImageFolderDataset(str(tmp_path), extensions=[".txt"], shuffle=False)
    assert [r[0].tobytes() for r in rows(data)] == [b"cat/notes.txt" * 10]


def test_image_folder_errors(tmp_path):
    with pytest.raises(ValueError, match="empty_dir"):
        os.makedirs(tmp_path / "empty_dir" / "cls")
        ds.ImageFolderDataset(str(tmp_path / "empty_dir"))
    with pytest.raises(ValueError, match="no images found"):
        _mycel.data.make_source("ImageFolderDataset", dataset_dir=str(tmp_path / "empty_dir"))
    with pytest.raises(ValueError, match="missing"):
        ds.ImageFolderDataset(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="missing"):
        _mycel.data.make_source("ImageFolderDataset", dataset_dir=str(tmp_path / "missing"))
    make_tree(tmp_path / "tree")
    with pytest.raises(TypeError, match="class_indexing"):
        ds.ImageFolderDataset(str(tmp_path / "tree"), class_indexing={"cat": "1"})
    with pytest.raises(TypeError, match="decode"):
        ds.ImageFolderDataset(str(tmp_path / "tree"), decode=1)
    with pytest.raises(TypeError, match="extensions"):
        ds.ImageFolderDataset(str(tmp_path / "tree"), extensions=".jpg")
    # A file that vanished after the scan fails when its row is read, naming the file.
    src = _mycel.data.make_source("ImageFolderDataset", dataset_dir=str(tmp_path / "tree"))
    os.remove(tmp_path / "tree" / "bird" / "z.png")
    with pytest.raises((ValueError, RuntimeError), match="z.png"):
        src.get(0)


def test_image_folder_decode(tmp_path):
    if "Decode" not in _mycel.data.transform_names():
        make_tree(tmp_path)
        with pytest.raises(NotImplementedError, match="Decode"):
            ds.ImageFolderDataset(str(tmp_path), decode=True)
        pytest.skip("the Decode transform is not registered in this build")
    PIL = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(20)
    os.makedirs(tmp_path / "a")
    img = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    PIL.fromarray(img).save(tmp_path / "a" / "p.png")
    (tmp_path / "a" / "q.jpg").write_bytes(b"not a jpeg")
    src = _mycel.data.make_source("ImageFolderDataset", dataset_dir=str(tmp_path), decode=True)
    np.testing.assert_array_equal(src.get(0)[0].asnumpy(), img)
    with pytest.raises((ValueError, RuntimeError), match="q.jpg"):
        src.get(1)


# ---- CSV -----------------------------------------------------------------------------------

def test_csv_header_and_types(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("x, y ,z\n1,2.5,-3\n\n4,+5e-1,6\r\n7,,9\n")
    data = ds.CSVDataset(str(f), column_defaults=[0, 1.25, 0], shuffle=False)
    got = rows(data)
    assert len(got) == 3
    assert [r[0].dtype for r in got[0]] == [np.int64, np.float32, np.int64]
    assert all(c.shape == (1,) for r in got for c in r)
    np.testing.assert_array_equal(np.array([[c[0] for c in r] for r in got], np.float64),
                                  [[1, 2.5, -3], [4, 0.5, 6], [7, 1.25, 9]])
    src = _mycel.data.make_source("CSVDataset", dataset_files=[str(f)], column_types=["float32"] * 3,
                                  column_defaults=["0", "0", "0"])
    assert src.column_names == ["x", "y", "z"]  # header fields are trimmed


def test_csv_multiple_files_names_delim_quotes(tmp_path):
    a, b = tmp_path / "p1.csv", tmp_path / "p2.csv"
    a.write_text('1;"2"\n3;4\n')
    b.write_text('5;"6"\n')
    data = ds.CSVDataset(str(tmp_path / "p*.csv"), field_delim=";", column_names=["u", "v"],
                         shuffle=False)
    got = rows(data)
    assert [r[0].dtype.kind for r in got[0]] == ["U", "U"]  # no defaults: strings, as MindSpore
    assert [[str(c[0]) for c in r] for r in got] == [["1", "2"], ["3", "4"], ["5", "6"]]
    data = ds.CSVDataset(str(tmp_path / "p*.csv"), field_delim=";", column_names=["u", "v"],
                         column_defaults=[0.0, "?"], shuffle=False)
    got = rows(data)
    assert got[0][0].dtype == np.float32 and [str(r[1][0]) for r in got] == ["2", "4", "6"]
    src = _mycel.data.make_source("CSVDataset", dataset_files=[str(a), str(b)], field_delim=";",
                                  column_names=["u", "v"])
    assert src.column_names == ["u", "v"] and len(src) == 3


def test_csv_reference_numpy(tmp_path):
    rng = np.random.default_rng(30)
    ints = rng.integers(-10**12, 10**12, size=(50, 2))
    floats = rng.standard_normal((50, 3)).astype(np.float32)
    f = tmp_path / "big.csv"
    with open(f, "w") as out:
        out.write("i0,i1,f0,f1,f2\n")
        for r in range(50):
            out.write(",".join([str(v) for v in ints[r]] + [repr(float(v)) for v in floats[r]]) + "\n")
    _, got = source_rows("CSVDataset", dataset_files=[str(f)],
                         column_types=["int64", "int64", "float32", "float32", "float32"],
                         column_defaults=["0", "0", "0.0", "0.0", "0.0"])
    np.testing.assert_array_equal(np.array([[r[0][0], r[1][0]] for r in got]), ints)
    np.testing.assert_array_equal(np.array([[c[0] for c in r[2:]] for r in got]), floats)


def test_csv_malformed(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("a,b\n1,2\n3,oops\n")
    with pytest.raises(ValueError, match=r"bad.csv.*line 3.*column 'b'.*'oops'.*str in column_defaults"):
        ds.CSVDataset(str(f), column_defaults=[0.0, 0.0], shuffle=False)
    f.write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match=r"bad.csv.*line 3.*1 fields, expected 2"):
        ds.CSVDataset(str(f))
    f.write_text("a,b\n1,2\n3,\n")
    with pytest.raises(ValueError, match=r"bad.csv.*line 3.*empty"):
        _mycel.data.make_source("CSVDataset", dataset_files=[str(f)], column_types=["float32"] * 2)
    # a string column: an empty field is '' or the str default
    assert [str(r[1][0]) for r in rows(ds.CSVDataset(str(f), shuffle=False))] == ["2", ""]
    got = rows(ds.CSVDataset(str(f), column_defaults=["", "none"], shuffle=False))
    assert [str(r[1][0]) for r in got] == ["2", "none"]
    f.write_text('a,b\n1,"2\n')
    with pytest.raises(ValueError, match=r"bad.csv.*line 2.*unterminated"):
        ds.CSVDataset(str(f))
    f.write_text("a,b\n1,2.5\n")
    with pytest.raises(ValueError, match=r"line 2.*'2.5' is not a valid int64"):
        ds.CSVDataset(str(f), column_defaults=[0, 0])
    with pytest.raises(ValueError, match="column_defaults has 3 entries"):
        ds.CSVDataset(str(f), column_defaults=[0, 0, 0])
    g = tmp_path / "other.csv"
    g.write_text("a,c\n1,2\n")
    with pytest.raises(ValueError, match=r"other.csv.*header"):
        ds.CSVDataset([str(f), str(g)])
    f.write_text("")
    with pytest.raises(ValueError, match="bad.csv"):
        ds.CSVDataset(str(f))


def test_csv_argument_checks(tmp_path):
    f = tmp_path / "ok.csv"
    f.write_text("a\n1\n")
    with pytest.raises(ValueError, match="did not match any files"):
        ds.CSVDataset(str(tmp_path / "none*.csv"))
    with pytest.raises(ValueError, match="field_delim"):
        ds.CSVDataset(str(f), field_delim="ab")
    with pytest.raises(TypeError, match="column_defaults"):
        ds.CSVDataset(str(f), column_defaults=[None])
    with pytest.raises(ValueError, match="duplicate"):
        ds.CSVDataset(str(f), column_names=["a", "a"])
    with pytest.raises(TypeError, match="dataset_files"):
        ds.CSVDataset(5)
    with pytest.raises(ValueError, match="missing.csv"):
        _mycel.data.make_source("CSVDataset", dataset_files=[str(tmp_path / "missing.csv")])
