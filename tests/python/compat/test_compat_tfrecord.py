"""TFRecordDataset as a MindSpore user calls it (imports renamed). References: Examples encoded
by the protobuf library (message classes built here from TensorFlow's example.proto field
numbers) and framed by tensorboard's RecordWriter (its own CRC-32C), a file whose bytes are
written out by hand from the format's specification, and damaged files."""
import gzip
import io
import struct
import zlib

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from tensorboard.summary.writer.record_writer import RecordWriter

import mycel
import mycel.dataset as ds
from mycel.dataset import tfrecord
from crc32c_ref import crc32c as crc_ref


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _example_class():
    """tf.train.Example as a protobuf message class (TensorFlow's feature.proto/example.proto)."""
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="tfx_example.proto", package="tfx", syntax="proto3")
    for name, kind in (("BytesList", F.TYPE_BYTES), ("FloatList", F.TYPE_FLOAT), ("Int64List", F.TYPE_INT64)):
        fdp.message_type.add(name=name).field.add(name="value", number=1, type=kind, label=F.LABEL_REPEATED)
    feat = fdp.message_type.add(name="Feature")
    feat.oneof_decl.add(name="kind")
    for num, (name, typ) in enumerate((("bytes_list", "BytesList"), ("float_list", "FloatList"),
                                       ("int64_list", "Int64List")), 1):
        feat.field.add(name=name, number=num, type=F.TYPE_MESSAGE, type_name=f".tfx.{typ}",
                       label=F.LABEL_OPTIONAL, oneof_index=0)
    feats = fdp.message_type.add(name="Features")
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, type_name=".tfx.Feature", label=F.LABEL_OPTIONAL)
    feats.field.add(name="feature", number=1, type=F.TYPE_MESSAGE, type_name=".tfx.Features.FeatureEntry",
                    label=F.LABEL_REPEATED)
    fdp.message_type.add(name="Example").field.add(name="features", number=1, type=F.TYPE_MESSAGE,
                                                   type_name=".tfx.Features", label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tfx.Example"))


Example = _example_class()


def _pb_example(image, label, scores, name):
    ex = Example()
    ex.features.feature["image"].bytes_list.value.append(image)
    ex.features.feature["label"].int64_list.value.extend(label)
    ex.features.feature["scores"].float_list.value.extend(scores)
    ex.features.feature["name"].bytes_list.value.append(name.encode())
    return ex.SerializeToString()


def _write_tb(path, payloads):
    buf = io.BytesIO()
    w = RecordWriter(buf)
    for p in payloads:
        w.write(p)
    path.write_bytes(buf.getvalue())


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 256, 12, dtype=np.uint8).tobytes(), [int(rng.integers(-2**40, 2**40)), k],
             rng.standard_normal(3).astype(np.float32).tolist(), f"row{k}") for k in range(n)]


def test_crc32c_matches_reference():
    for data in (b"", b"123456789", bytes(range(256)) * 3):
        c = crc_ref(data)
        assert tfrecord.masked_crc32c(data) == ((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF)
    assert crc_ref(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_protobuf_written_files(tmp_path):
    rows = _data(5)
    _write_tb(tmp_path / "a.tfrecord", [_pb_example(*r) for r in rows[:3]])
    _write_tb(tmp_path / "b.tfrecord", [_pb_example(*r) for r in rows[3:]])
    d = ds.TFRecordDataset(str(tmp_path / "*.tfrecord"), shuffle=False)
    assert d.get_col_names() == ["image", "label", "name", "scores"]  # no schema: by name
    got = _rows(d)
    assert len(got) == 5
    for (image, label, name, scores), (img, lab, sc, nm) in zip(got, rows):
        assert image.dtype == np.uint8 and image.tobytes() == img
        assert label.dtype == np.int64 and label.tolist() == lab
        assert scores.dtype == np.float32 and scores.tolist() == sc
        assert name.tobytes() == nm.encode()
    schema = ds.Schema()
    schema.add_column("name", de_type="string")
    schema.add_column("label", de_type=mycel.int32, shape=[2])  # a dtype, as MindSpore users pass
    schema.add_column("scores", de_type="float64", shape=[1, 3])
    got = _rows(ds.TFRecordDataset([str(tmp_path / "a.tfrecord")], schema=schema, shuffle=False))
    assert [str(r[0]) for r in got] == ["row0", "row1", "row2"]
    assert got[1][1].dtype == np.int32 and got[1][1].tolist() == np.array(rows[1][1], np.int64).astype(np.int32).tolist()
    assert got[2][2].shape == (1, 3) and got[2][2].dtype == np.float64
    np.testing.assert_allclose(got[2][2][0], rows[2][2])
    got = _rows(ds.TFRecordDataset(str(tmp_path / "b.tfrecord"), columns_list=["scores", "image"], shuffle=False))
    assert len(got[0]) == 2 and got[1][1].tobytes() == rows[4][0]
    shards = [_rows(ds.TFRecordDataset(str(tmp_path / "*.tfrecord"), num_shards=2, shard_id=k)) for k in range(2)]
    assert {r[2].tobytes() for s in shards for r in s} == {f"row{k}".encode() for k in range(5)}
    assert len(_rows(ds.TFRecordDataset(str(tmp_path / "*.tfrecord"), num_samples=2))) == 2
    # schema files: MindSpore's JSON layout, numRows limits the rows
    (tmp_path / "schema.json").write_text('{"columns": {"label": {"type": "int64", "rank": 1, "shape": [2]}},'
                                          ' "numRows": 4}')
    got = _rows(ds.TFRecordDataset(str(tmp_path / "*.tfrecord"), schema=str(tmp_path / "schema.json"),
                                   shuffle=ds.Shuffle.FILES))
    assert len(got) == 4


def test_own_writer_round_trip_and_compression(tmp_path):
    feats = [{"x": np.arange(6, dtype=np.int64) - 3, "f": [0.5, -1.25], "s": [b"ab", b"cde"]},
             {"x": [7] * 6, "f": [2.0, 3.0], "s": [b"", b"z"]}]
    tfrecord.write_tfrecord(tmp_path / "r.tfrecord", feats)
    schema = ds.Schema()
    schema.add_column("x", "int64", [2, 3])
    schema.add_column("s", "uint8")
    schema.add_column("f", "float32")
    got = _rows(ds.TFRecordDataset(str(tmp_path / "r.tfrecord"), schema=schema, shuffle=False))
    np.testing.assert_array_equal(got[0][0], (np.arange(6) - 3).reshape(2, 3))
    # bytes into uint8: every value padded with zeros to the longest, then concatenated
    assert got[0][1].tobytes() == b"ab\0cde" and got[1][1].tobytes() == b"\0z"
    assert got[1][2].tolist() == [2.0, 3.0]
    raw = (tmp_path / "r.tfrecord").read_bytes()
    (tmp_path / "r.gz").write_bytes(gzip.compress(raw))
    gz = _rows(ds.TFRecordDataset(str(tmp_path / "r.gz"), schema=schema, compression_type="GZIP", shuffle=False))
    np.testing.assert_array_equal(gz[1][0], got[1][0])
    with pytest.raises(ValueError, match="not GZIP-compressed"):
        ds.TFRecordDataset(str(tmp_path / "r.tfrecord"), compression_type="GZIP")
    # two gzip members (as concatenated .gz files are), and zlib; the Python modules compress
    (tmp_path / "r2.gz").write_bytes(gzip.compress(raw[:30]) + gzip.compress(raw[30:]))
    two = _rows(ds.TFRecordDataset(str(tmp_path / "r2.gz"), schema=schema, compression_type="GZIP", shuffle=False))
    np.testing.assert_array_equal(two[1][0], got[1][0])
    (tmp_path / "r.z").write_bytes(zlib.compress(raw))
    z = _rows(ds.TFRecordDataset(str(tmp_path / "r.z"), schema=schema, compression_type="ZLIB", shuffle=False))
    assert z[0][1].tobytes() == b"ab\0cde"
    (tmp_path / "cut.z").write_bytes(zlib.compress(raw)[:-6])
    with pytest.raises(ValueError, match="not ZLIB-compressed .*truncated"):
        ds.TFRecordDataset(str(tmp_path / "cut.z"), compression_type="ZLIB")


def _hand_file():
    """One record, bytes laid out from the TFRecord and protobuf specifications:
    Example{features{feature{key: "a" value{int64_list{value: [1, -2]}}}}}."""
    int64_list = bytes([0x0A, 0x0B, 0x01]) + bytes([0xFE] + [0xFF] * 8 + [0x01])  # packed varints
    feature = bytes([0x1A, len(int64_list)]) + int64_list                      # field 3, LEN
    entry = bytes([0x0A, 0x01]) + b"a" + bytes([0x12, len(feature)]) + feature  # key 1, value 2
    features = bytes([0x0A, len(entry)]) + entry                                # map field 1
    example = bytes([0x0A, len(features)]) + features                           # Example.features
    assert example.hex() == "0a160a140a0161120f1a0d0a0b01feffffffffffffffff01"
    head = struct.pack("<Q", len(example))
    c1, c2 = crc_ref(head), crc_ref(example)
    mask = lambda c: (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF  # noqa: E731
    return head + struct.pack("<I", mask(c1)) + example + struct.pack("<I", mask(c2))


def test_hand_built_bytes(tmp_path):
    (tmp_path / "h.tfrecord").write_bytes(_hand_file())
    ((a,),) = _rows(ds.TFRecordDataset(str(tmp_path / "h.tfrecord")))
    assert a.dtype == np.int64 and a.tolist() == [1, -2]


def test_damaged_files(tmp_path):
    good = _hand_file()
    p = tmp_path / "bad.tfrecord"
    p.write_bytes(good + good[:10])  # a second record cut inside its header
    with pytest.raises(ValueError, match=rf"bad.tfrecord': truncated record header at offset {len(good)}"):
        ds.TFRecordDataset(str(p))
    p.write_bytes(good + good[:-3])  # cut inside its data
    with pytest.raises(ValueError, match=rf"truncated record at offset {len(good)}: it claims 24 bytes"):
        ds.TFRecordDataset(str(p))
    bad = bytearray(good)
    bad[2] ^= 1  # length bits flipped: the length's checksum catches it
    p.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="corrupt record at offset 0: the length's checksum"):
        ds.TFRecordDataset(str(p))
    bad = bytearray(good + good)
    bad[len(good) + 20] ^= 0x40  # data of the second record
    p.write_bytes(bytes(bad))
    d = ds.TFRecordDataset(str(p), schema=_int_schema(), shuffle=False)
    with pytest.raises(Exception, match=rf"corrupt record at offset {len(good)}: the data's checksum"):
        _rows(d)
    # a well-framed record whose payload is not a protobuf message
    tfrecord.write_tfrecord(p, [b"\x0a\x7f\x00"])
    with pytest.raises(ValueError, match="claims 127 bytes"):
        ds.TFRecordDataset(str(p))


def _int_schema():
    s = ds.Schema()
    s.add_column("a", "int64")
    return s


def test_argument_errors(tmp_path):
    (tmp_path / "h.tfrecord").write_bytes(_hand_file())
    f = str(tmp_path / "h.tfrecord")
    with pytest.raises(ValueError, match="columns_list names \\['b'\\]"):
        ds.TFRecordDataset(f, columns_list=["b"])
    with pytest.raises(ValueError, match="compression_type"):
        ds.TFRecordDataset(f, compression_type="LZ4")
    with pytest.raises(ValueError, match="unknown column type"):
        ds.Schema().add_column("a", "complex7")
    s = ds.Schema()
    s.add_column("a", "string")
    with pytest.raises(Exception, match="int64_list feature cannot fill a string column"):
        _rows(ds.TFRecordDataset(f, schema=s))
    s = ds.Schema()
    s.add_column("a", "int64", [3])
    with pytest.raises(Exception, match="2 values do not fill the column's shape \\[3\\]"):
        _rows(ds.TFRecordDataset(f, schema=s))
    with pytest.raises(ValueError, match="did not match any files"):
        ds.TFRecordDataset(str(tmp_path / "none*.tfrecord"))
