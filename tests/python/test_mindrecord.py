"""MindRecord: writer/reader round trips, shards, index, atomicity, corrupt files, converters."""
import gzip
import os
import signal
import struct
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from crc32c_ref import crc32c

import mycel.dataset as ds
from mycel import _mycel
from mycel.mindrecord import (SUCCESS, Cifar10ToMR, FileReader, FileWriter, ImageFolderToMR,
                              MnistToMR)

SCHEMA = {
    "i32": {"type": "int32"}, "i64": {"type": "int64"},
    "f32": {"type": "float32"}, "f64": {"type": "float64"},
    "img": {"type": "float32", "shape": [2, 3]}, "vec": {"type": "int64", "shape": [-1]},
    "pts": {"type": "float64", "shape": [-1, 2]},
    "data": {"type": "bytes"}, "text": {"type": "string"},
}
TEXTS = ["", "plain", "héllo wörld", "日本語テキスト", "emoji 🍄🍄", "a\x00b"]


def make_row(i):
    rng = np.random.default_rng(i)
    return {
        "i32": np.int32(-i * 1000), "i64": 2**40 + i, "f32": np.float32(i / 3), "f64": i * 1e-300,
        "img": rng.standard_normal((2, 3)).astype(np.float32),
        "vec": np.arange(i % 5, dtype=np.int64) * i, "pts": rng.random((i % 4, 2)),
        "data": bytes(rng.integers(0, 256, i % 9, dtype=np.uint8)), "text": TEXTS[i % len(TEXTS)],
    }


def write(path, rows, schema=SCHEMA, shard_num=1, page_size=None, index=None, overwrite=False):
    w = FileWriter(str(path), shard_num, overwrite=overwrite)
    assert w.add_schema(schema, "test desc") == 0
    if index:
        w.add_index(index)
    if page_size:
        w.set_page_size(page_size)
    assert w.write_raw_data(rows) == SUCCESS
    assert w.commit() == SUCCESS
    return w.file_names


def assert_row_equal(got, want):
    assert set(got) == set(want)
    for k, v in want.items():
        if isinstance(v, (bytes, str)):
            assert got[k] == v, k
        else:
            np.testing.assert_array_equal(got[k], np.asarray(v), err_msg=k)
            if np.ndim(v) > 0:
                assert got[k].dtype == np.dtype(SCHEMA[k]["type"]), k


def test_round_trip_every_type(tmp_path):
    rows = [make_row(i) for i in range(24)]
    path = tmp_path / "all.mindrecord"
    write(path, rows)
    r = FileReader(str(path))
    assert len(r) == 24 and r.desc == "test desc" and r.schema() == SCHEMA
    got = list(r.get_next())
    for g, w in zip(got, rows):
        assert_row_equal(g, w)
    assert isinstance(got[0]["i32"], np.int32) and isinstance(got[0]["f64"], np.float64)


def _np(t):
    return t if isinstance(t, np.ndarray) else t.asnumpy()  # string fields come as numpy str


def test_source_tensors_dtypes_and_shapes(tmp_path):
    rows = [make_row(i) for i in range(7)]
    path = tmp_path / "t.mindrecord"
    write(path, rows)
    src = _mycel.data.make_source("MindDataset", dataset_files=str(path))
    assert list(src.column_names) == list(SCHEMA) and len(src) == 7
    for i, want in enumerate(rows):
        got = dict(zip(src.column_names, (_np(t) for t in src.get(i))))
        assert got["i32"].shape == () and got["i32"].dtype == np.int32 and got["i32"] == want["i32"]
        assert got["f32"].shape == () and got["f32"].dtype == np.float32
        assert got["img"].shape == (2, 3)
        np.testing.assert_array_equal(got["vec"], want["vec"])
        np.testing.assert_array_equal(got["pts"], want["pts"])
        assert got["pts"].shape == (i % 4, 2)
        assert got["data"].dtype == np.uint8 and got["data"].tobytes() == want["data"]
        # a string field is a str, as MindSpore returns it; bytes stay uint8
        assert got["text"].dtype.kind == "U" and got["text"].shape == () and str(got["text"]) == want["text"]


def test_mind_dataset_columns_and_samples(tmp_path):
    rows = [make_row(i) for i in range(9)]
    path = tmp_path / "c.mindrecord"
    write(path, rows)
    d = ds.MindDataset(str(path), columns_list=["text", "i64"], num_samples=5, shuffle=False)
    out = list(d)
    assert len(out) == 5 and d.get_dataset_size() == 5
    for i, (text, i64) in enumerate(out):
        assert str(text) == rows[i]["text"]
        assert int(i64.asnumpy()) == rows[i]["i64"]
    with pytest.raises(ValueError, match="column 'nope'"):
        ds.MindDataset(str(path), columns_list=["nope"])
    with pytest.raises(ValueError, match="do not exist"):
        ds.MindDataset(str(tmp_path / "missing.mindrecord"))


def test_many_pages_and_overflow_row(tmp_path):
    schema = {"id": {"type": "int64"}, "blob": {"type": "bytes"}}
    rows = [{"id": i, "blob": bytes([i % 251]) * (i % 300)} for i in range(600)]
    rows.insert(300, {"id": -1, "blob": os.urandom(20000)})  # five pages of 4096 bytes
    rows.insert(0, {"id": -2, "blob": os.urandom(9000)})
    path = tmp_path / "pages.mindrecord"
    write(path, rows, schema=schema, page_size=4096)
    assert os.path.getsize(path) > 20 * 4096
    r = FileReader(str(path))
    got = list(r.get_next())
    assert len(got) == len(rows)
    for g, w in zip(got, rows):
        assert g["id"] == w["id"] and g["blob"] == w["blob"]


def test_concurrent_reads(tmp_path):
    rows = [make_row(i) for i in range(200)]
    path = tmp_path / "mt.mindrecord"
    write(path, rows, page_size=2048)
    src = _mycel.data.make_source("MindDataset", dataset_files=str(path), columns_list=["img", "text"])
    order = np.random.default_rng(0).permutation(200).tolist() * 3
    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(lambda i: (i, src.get(i)), order))
    for i, (img, text) in results:
        np.testing.assert_array_equal(img.asnumpy(), rows[i]["img"])
        assert str(text) == rows[i]["text"]


def test_shards(tmp_path):
    schema = {"id": {"type": "int64"}, "name": {"type": "string"}}
    rows = [{"id": i, "name": f"row{i}"} for i in range(10)]
    base = tmp_path / "sh.mindrecord"
    names = write(base, rows, schema=schema, shard_num=3)
    assert names == [f"{base}{i}" for i in range(3)]
    assert not os.path.exists(base)
    seen = []
    for s, name in enumerate(names):
        ids = [row["id"] for row in FileReader([name]).get_next()]
        assert ids == list(range(s, 10, 3))  # round robin
        seen += ids
    assert sorted(seen) == list(range(10))
    for start in names:  # any shard finds its siblings; rows come back in write order
        assert [r["id"] for r in FileReader(start).get_next()] == list(range(10))
    assert [r["id"] for r in FileReader(names[::-1]).get_next()] == list(range(10))
    d = ds.MindDataset(names[0], shuffle=False)
    assert [int(row[0].asnumpy()) for row in d] == list(range(10))
    os.remove(names[2])
    with pytest.raises(RuntimeError, match="missing"):
        FileReader(names[0])


def test_add_index(tmp_path):
    schema = {"label": {"type": "int32"}, "name": {"type": "string"}, "w": {"type": "float32"},
              "data": {"type": "bytes"}}
    rows = [{"label": i % 4, "name": f"n{i % 3}", "w": np.float32(i % 2) + 0.1, "data": b"x"}
            for i in range(30)]
    for shards in (1, 3):
        names = write(tmp_path / f"ix{shards}.mindrecord", rows, schema=schema, shard_num=shards,
                      index=["label", "name", "w"])
        r = FileReader(names[0])
        assert r.index_fields == ["label", "name", "w"]
        assert r.find("label", 2) == [i for i in range(30) if i % 4 == 2]
        assert r.find("name", "n1") == [i for i in range(30) if i % 3 == 1]
        assert r.find("w", 1.1) == [i for i in range(30) if i % 2 == 1]
        assert r.find("label", 99) == []
        with pytest.raises(ValueError, match="not an index field"):
            r.find("data", b"x")
    w = FileWriter(str(tmp_path / "bad_ix.mindrecord"))
    w.add_schema(schema)
    with pytest.raises(ValueError, match="'data' cannot be an index field"):
        w.add_index(["data"])
    with pytest.raises(ValueError, match="'nope' is not in the schema"):
        w.add_index(["nope"])


@pytest.mark.parametrize("row,msg", [
    ({"label": 1.5, "img": np.zeros((2, 3), np.float32), "s": "a"}, "row 1, field 'label'.*int32"),
    ({"label": 2**31, "img": np.zeros((2, 3), np.float32), "s": "a"}, "row 1, field 'label'.*range"),
    ({"label": 1, "img": np.zeros((3, 2), np.float32), "s": "a"}, r"row 1, field 'img'.*shape \[2, 3\]"),
    ({"label": 1, "img": np.zeros(6, np.float32), "s": "a"}, "row 1, field 'img'"),
    ({"label": 1, "img": np.array([["a"] * 3] * 2), "s": "a"}, "row 1, field 'img'"),
    ({"label": 1, "img": np.zeros((2, 3), np.float32), "s": b"a"}, "row 1, field 's'.*str"),
    ({"label": 1, "img": np.zeros((2, 3), np.float32)}, r"row 1 lacks field\(s\) \['s'\]"),
    ({"label": 1, "img": np.zeros((2, 3)), "s": "a", "x": 1}, "row 1 has field.*'x'"),
])
def test_write_validation(tmp_path, row, msg):
    w = FileWriter(str(tmp_path / "v.mindrecord"))
    w.add_schema({"label": {"type": "int32"}, "img": {"type": "float32", "shape": [2, 3]},
                  "s": {"type": "string"}})
    good = {"label": 0, "img": np.zeros((2, 3)), "s": "ok"}
    with pytest.raises(ValueError, match=msg):
        w.write_raw_data([good, row])
    w.write_raw_data([good])  # the failed batch wrote nothing
    w.commit()
    assert len(FileReader(str(tmp_path / "v.mindrecord"))) == 1


def test_schema_validation(tmp_path):
    w = FileWriter(str(tmp_path / "s.mindrecord"))
    with pytest.raises(ValueError, match="'a' has type 'int8'"):
        w.add_schema({"a": {"type": "int8"}})
    with pytest.raises(ValueError, match="'b' of type bytes cannot have a shape"):
        w.add_schema({"b": {"type": "bytes", "shape": [2]}})
    with pytest.raises(ValueError, match="'c' has shape"):
        w.add_schema({"c": {"type": "int32", "shape": [0, 2]}})
    with pytest.raises(ValueError, match="call add_schema first"):
        w.write_raw_data([{"a": 1}])


def test_overwrite(tmp_path):
    path = tmp_path / "o.mindrecord"
    schema = {"id": {"type": "int64"}}
    write(path, [{"id": 1}], schema=schema)
    with pytest.raises(ValueError, match="already exists"):
        FileWriter(str(path))
    write(path, [{"id": 2}, {"id": 3}], schema=schema, overwrite=True)
    assert [r["id"] for r in FileReader(str(path)).get_next()] == [2, 3]


def test_uncommitted_writer_leaves_nothing(tmp_path):
    path = tmp_path / "u.mindrecord"
    w = FileWriter(str(path), 2)
    w.add_schema({"id": {"type": "int64"}})
    w.write_raw_data([{"id": i} for i in range(100)])
    assert [n for n in os.listdir(tmp_path) if n.startswith("u.mindrecord0.tmp-")]
    del w
    assert os.listdir(tmp_path) == []


KILLED_WRITER = r"""
import sys, numpy as np
from mycel.mindrecord import FileWriter
old, new = sys.argv[1], sys.argv[2]
writers = [FileWriter(old, overwrite=True), FileWriter(new)]
for w in writers:
    w.add_schema({"id": {"type": "int64"}, "blob": {"type": "bytes"}})
    w.set_page_size(4096)
rows = [{"id": i, "blob": b"z" * 3000} for i in range(50)]
for w in writers:
    w.write_raw_data(rows)
print("writing", flush=True)
while True:
    for w in writers:
        w.write_raw_data(rows)
"""


def test_sigkill_mid_write_leaves_old_file_intact(tmp_path):
    old, new = tmp_path / "old.mindrecord", tmp_path / "new.mindrecord"
    write(old, [{"id": 7}, {"id": 8}], schema={"id": {"type": "int64"}})
    before = old.read_bytes()
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(old), str(new)],
                            stdout=subprocess.PIPE, cwd=str(tmp_path))
    try:
        assert proc.stdout.readline().strip() == b"writing"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not new.exists()
    assert old.read_bytes() == before
    assert [r["id"] for r in FileReader(str(old)).get_next()] == [7, 8]


# ---- corrupt files ----------------------------------------------------------------------------

@pytest.fixture
def good_file(tmp_path):
    schema = {"id": {"type": "int64"}, "blob": {"type": "bytes"}}
    rows = [{"id": i, "blob": bytes([i % 256]) * 200} for i in range(100)]
    path = tmp_path / "good.mindrecord"
    write(path, rows, schema=schema, page_size=2048)
    return path


def footer(data):
    return dict(zip(["data_offset", "num_pages", "index_offset", "index_len", "num_rows"],
                    struct.unpack("<5Q", data[-64:-24])))


def read_all(path):
    return list(FileReader(str(path)).get_next())


def variant(tmp_path, data, name="bad.mindrecord"):
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


def test_crc32c_matches_reference():
    assert crc32c(b"123456789") == 0xE3069283  # the standard check value


def test_truncated_files(tmp_path, good_file):
    data = good_file.read_bytes()
    f = footer(data)
    cuts = [0, 4, 8, 15, 16, 40, f["data_offset"] + 10, f["index_offset"] - 1, f["index_offset"] + 30,
            len(data) - 64, len(data) - 1]
    for cut in cuts:
        p = variant(tmp_path, data[:cut])
        with pytest.raises(RuntimeError, match="bad.mindrecord") as e:
            read_all(p)
        assert "not a MindRecord" in str(e.value) or "truncated" in str(e.value), (cut, e.value)


def test_flipped_bit_in_page(tmp_path, good_file):
    data = bytearray(good_file.read_bytes())
    f = footer(data)
    page_size = 2048
    data[f["data_offset"] + 2 * page_size + 500] ^= 0x10
    p = variant(tmp_path, data)
    r = FileReader(str(p))  # pages are checked lazily
    assert r.read(0)["id"] == 0
    with pytest.raises(RuntimeError, match=r"bad.mindrecord: page 2 checksum mismatch"):
        read_all(p)
    src = _mycel.data.make_source("MindDataset", dataset_files=str(p))
    bad = [i for i in range(len(src)) if _raises(src, i)]
    assert bad and all(_raises(src, i) for i in bad)  # still an error on the second read


def _raises(src, i):
    try:
        src.get(i)
        return False
    except RuntimeError:
        return True


@pytest.mark.parametrize("where,msg", [("header", "header checksum mismatch"),
                                       ("index", "index checksum mismatch"),
                                       ("footer", "footer checksum mismatch")])
def test_flipped_bit_in_header_index_footer(tmp_path, good_file, where, msg):
    data = bytearray(good_file.read_bytes())
    f = footer(data)
    pos = {"header": 30, "index": f["index_offset"] + 50, "footer": len(data) - 60}[where]
    data[pos] ^= 0x01
    with pytest.raises(RuntimeError, match="bad.mindrecord: " + msg):
        read_all(variant(tmp_path, data))


def refooter(data, **fields):
    f = footer(data)
    f.update(fields)
    tail = bytearray(data[-64:])
    tail[0:40] = struct.pack("<5Q", *f.values())
    tail[48:52] = struct.pack("<I", crc32c(bytes(tail[:48])))
    return bytes(data[:-64]) + bytes(tail)


def test_absurd_sizes_rejected(tmp_path, good_file):
    data = good_file.read_bytes()
    f = footer(data)
    huge = 1 << 60
    cases = [refooter(data, index_len=huge), refooter(data, num_pages=huge),
             refooter(data, index_offset=huge), refooter(data, num_rows=huge),
             refooter(data, data_offset=len(data) + 8)]
    # An index claiming 2**60 rows, with a valid checksum.
    idx = bytearray(data[f["index_offset"]:f["index_offset"] + f["index_len"]])
    idx[0:8] = struct.pack("<Q", huge)
    body = data[:f["index_offset"]] + bytes(idx) + data[-64:]
    tail = bytearray(body[-64:])
    tail[44:48] = struct.pack("<I", crc32c(bytes(idx)))
    tail[48:52] = struct.pack("<I", crc32c(bytes(tail[:48])))
    cases.append(body[:-64] + bytes(tail))
    # A header claiming a 2 GiB body.
    cases.append(data[:12] + struct.pack("<I", 0x7FFFFFFF) + data[16:])
    for i, c in enumerate(cases):
        with pytest.raises(RuntimeError, match="bad.mindrecord: (index: )?(corrupt|header checksum)"):
            read_all(variant(tmp_path, c))


def test_not_a_mindrecord_file(tmp_path):
    for content in [b"", b"hello world, this is plainly text and not a record file" * 3,
                    b"\x89PNG\r\n\x1a\n" + bytes(200)]:
        p = variant(tmp_path, content, "other.bin")
        with pytest.raises(RuntimeError, match="other.bin: not a MindRecord file"):
            FileReader(str(p))
        with pytest.raises(RuntimeError, match="other.bin"):
            _mycel.data.make_source("MindDataset", dataset_files=[str(p)])


# ---- converters -------------------------------------------------------------------------------

def decode_png(data):
    """Minimal PNG reader for our encoder's output (8-bit grey/RGB, filter 0)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, tag = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if tag == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    ch = {0: 1, 2: 3}[color]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * ch)
    assert (raw[:, 0] == 0).all()
    img = raw[:, 1:].reshape(h, w, ch)
    return img[..., 0] if ch == 1 else img


def write_idx(path, arr, magic, gz):
    data = struct.pack(">I", magic) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.tobytes()
    (gzip.open if gz else open)(path, "wb").write(data)


def test_mnist_to_mr_fixture(tmp_path):
    rng = np.random.default_rng(1)
    src = tmp_path / "mnist"
    src.mkdir()
    train = rng.integers(0, 256, (37, 28, 28), dtype=np.uint8)
    test = rng.integers(0, 256, (11, 28, 28), dtype=np.uint8)
    ltrain, ltest = rng.integers(0, 10, 37, dtype=np.uint8), rng.integers(0, 10, 11, dtype=np.uint8)
    write_idx(src / "train-images-idx3-ubyte.gz", train, 0x803, True)
    write_idx(src / "train-labels-idx1-ubyte.gz", ltrain, 0x801, True)
    write_idx(src / "t10k-images-idx3-ubyte", test, 0x803, False)
    write_idx(src / "t10k-labels-idx1-ubyte", ltest, 0x801, False)
    dest = str(tmp_path / "out" / "mnist")
    os.mkdir(tmp_path / "out")
    assert MnistToMR(str(src), dest, 2).transform() == SUCCESS
    for split, imgs, labels in (("train", train, ltrain), ("test", test, ltest)):
        rows = list(FileReader(f"{dest}_{split}.mindrecord0").get_next())
        assert len(rows) == len(labels)
        for row, img, label in zip(rows, imgs, labels):
            assert row["label"] == label
            np.testing.assert_array_equal(decode_png(row["data"]), img)
    with pytest.raises(ValueError, match="already exists"):
        MnistToMR(str(src), dest, 2).run()
    (src / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01" + bytes(8))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte"):
        MnistToMR(str(src), str(tmp_path / "out" / "again")).run()


FASHION = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(FASHION), reason="fashion-mnist not installed")
def test_mnist_to_mr_fashion_test_split(tmp_path):
    src = tmp_path / "fm"
    src.mkdir()
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        os.symlink(os.path.join(FASHION, name), src / name)
    assert MnistToMR(str(src), str(tmp_path / "fm")).run() == SUCCESS
    with gzip.open(src / "t10k-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(src / "t10k-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    d = ds.MindDataset(str(tmp_path / "fm_test.mindrecord"), columns_list=["data", "label"], shuffle=False)
    assert d.get_dataset_size() == 10000
    for i, (data, label) in enumerate(d):
        assert int(label.asnumpy()) == labels[i]
        np.testing.assert_array_equal(decode_png(data.asnumpy().tobytes()), images[i])


def test_cifar10_to_mr(tmp_path):
    rng = np.random.default_rng(2)
    src = tmp_path / "cifar"
    src.mkdir()
    recs = {}
    for name, n in (("data_batch_1.bin", 5), ("data_batch_2.bin", 4), ("test_batch.bin", 3)):
        rec = rng.integers(0, 256, (n, 3073), dtype=np.uint8)
        rec[:, 0] %= 10
        rec.tofile(src / name)
        recs[name] = rec
    dest = str(tmp_path / "c10")
    assert Cifar10ToMR(str(src), dest).transform(["label"]) == SUCCESS
    train = np.concatenate([recs["data_batch_1.bin"], recs["data_batch_2.bin"]])
    for path, rec in ((dest, train), (dest + "_test", recs["test_batch.bin"])):
        rows = list(FileReader(path).get_next())
        assert [r["id"] for r in rows] == list(range(len(rec)))
        for row, r in zip(rows, rec):
            assert row["label"] == r[0]
            np.testing.assert_array_equal(decode_png(row["data"]), r[1:].reshape(3, 32, 32).transpose(1, 2, 0))
    assert FileReader(dest).find("label", int(train[0, 0]))[0] == 0
    (src / "test_batch.bin").write_bytes(bytes(100))
    with pytest.raises(ValueError, match="test_batch.bin.*multiple"):
        Cifar10ToMR(str(src), str(tmp_path / "c10b")).run()


def test_image_folder_to_mr(tmp_path):
    src = tmp_path / "folder"
    files = {"cat/a.jpg": b"\xff\xd8cat-a", "cat/b.png": b"\x89PNGcat-b", "dog/c.JPEG": b"dog-c",
             "dog/notes.txt": b"skip me"}
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    dest = str(tmp_path / "if.mindrecord")
    assert ImageFolderToMR(str(src), dest).run() == SUCCESS
    rows = list(FileReader(dest).get_next())
    assert [(r["file_name"], r["label"], r["image"]) for r in rows] == [
        ("cat/a.jpg", 0, files["cat/a.jpg"]), ("cat/b.png", 0, files["cat/b.png"]),
        ("dog/c.JPEG", 1, files["dog/c.JPEG"])]
