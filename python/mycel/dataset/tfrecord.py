"""TFRecordDataset (MindSpore's signature) and its Schema: files of TFRecord frames, each a
tf.train.Example. A frame is an 8-byte little-endian length, the masked CRC-32C of those 8
bytes, the payload and the masked CRC-32C of the payload; both checksums are verified. The
Example protobuf is read with mycel.onnx.proto's wire-type-checked reader. Plain files are
indexed (only the frame headers are read) when the dataset is built, and a record is read with
pread and parsed when its row is drawn, so a dataset larger than memory works (a compressed file
is inflated into a temporary file first); a damaged frame fails naming its file and byte offset."""
import enum
import json
import os
import struct
import tempfile
import zlib

import numpy as np

from mycel import _mycel
from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_type, _engine_args, _find_files, _shuffle_flag

__all__ = ["TFRecordDataset", "Schema", "Shuffle", "write_tfrecord", "encode_example"]


class Shuffle(str, enum.Enum):
    """Shuffle modes of the file sources; Mycel shuffles rows globally in every mode."""
    GLOBAL = "global"
    FILES = "files"
    INFILE = "infile"


# ---- CRC-32C, masked as TFRecord stores it ------------------------------------------------

def masked_crc32c(data):
    """TFRecord's checksum: the CRC-32C rotated right by 15 bits plus 0xa282ead8 (mod 2^32)."""
    c = _mycel.data.crc32c(bytes(data))  # C++: the SSE4.2 instruction
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ---- framing ------------------------------------------------------------------------------

class _File:
    """One TFRecord file, read with pread: only the frame headers are read when indexing and a
    record when its row is drawn, so files larger than memory work. A compressed file is first
    inflated, in bounded steps, into an anonymous temporary file (a small file that inflates
    to gigabytes fills disk space, never memory)."""

    _STEP = 1 << 22  # inflated bytes per step

    def __init__(self, path, compression, owner):
        self.path, self.tmp = path, None
        try:
            if compression is None:
                self.size = os.path.getsize(path)
                return
            self.tmp = tempfile.TemporaryFile()
            with open(path, "rb") as f:
                self._inflate(f, compression)
            self.tmp.flush()  # pread reads the descriptor, under Python's buffer
        except OSError as e:
            raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None
        except zlib.error as e:
            raise ValueError(f"{owner}: '{path}' is not {compression}-compressed ({e})") from None
        self.size = self.tmp.tell()

    def _inflate(self, f, compression):
        wbits = 16 + zlib.MAX_WBITS if compression == "GZIP" else zlib.MAX_WBITS
        d, pending, started = zlib.decompressobj(wbits), b"", False
        while True:
            if not pending:
                pending = f.read(1 << 20)
                if not pending:
                    break
            if d.eof:  # more bytes after a finished stream: gzip's next member
                d = zlib.decompressobj(wbits)
            started = True
            self.tmp.write(d.decompress(pending, self._STEP))
            pending = d.unused_data if d.eof else d.unconsumed_tail
        if started and not d.eof:
            raise zlib.error("the compressed stream is truncated")

    def reader(self):
        """A function (offset, n) -> up to n bytes, and a function to release it."""
        if self.tmp is not None:
            fd = self.tmp.fileno()
            return (lambda off, n: os.pread(fd, n, off)), (lambda: None)
        fd = os.open(self.path, os.O_RDONLY)
        return (lambda off, n: os.pread(fd, n, off)), (lambda: os.close(fd))


def _index(file, owner):
    """[(payload offset, payload length)] of every frame; checks the length checksums and that
    each frame fits in the file."""
    frames, pos, n, path = [], 0, file.size, file.path
    read, release = file.reader()
    try:
        while pos < n:
            if n - pos < 12:
                raise ValueError(f"{owner}: '{path}': truncated record header at offset {pos} "
                                 f"({n - pos} of 12 bytes)")
            head = read(pos, 12)
            if len(head) != 12:
                raise ValueError(f"{owner}: '{path}' changed while being read (offset {pos})")
            (length,) = struct.unpack("<Q", head[:8])
            (crc,) = struct.unpack("<I", head[8:])
            if crc != masked_crc32c(head[:8]):
                raise ValueError(f"{owner}: '{path}': corrupt record at offset {pos}: the length's "
                                 f"checksum is {crc:#010x}, expected {masked_crc32c(head[:8]):#010x}")
            if length > n - pos - 16:
                raise ValueError(f"{owner}: '{path}': truncated record at offset {pos}: it claims "
                                 f"{length} bytes of data, {max(n - pos - 16, 0)} remain")
            frames.append((pos + 12, length))
            pos += 16 + length
    finally:
        release()
    return frames


def _payload(file, offset, length, owner):
    """The payload of the frame whose data starts at offset, its checksum verified."""
    read, release = file.reader()
    try:
        buf = read(offset, length + 4)
    finally:
        release()
    if len(buf) != length + 4:
        raise ValueError(f"{owner}: '{file.path}' changed while being read (offset {offset - 12})")
    body = buf[:length]
    (crc,) = struct.unpack("<I", buf[length:])
    if crc != masked_crc32c(body):
        raise ValueError(f"{owner}: '{file.path}': corrupt record at offset {offset - 12}: the data's "
                         f"checksum is {crc:#010x}, expected {masked_crc32c(body):#010x}")
    return body


def read_records(path, compression_type=None, owner="read_records"):
    """The payloads (bytes) of a TFRecord file, every checksum verified."""
    file = _File(os.fspath(path), _compression(compression_type), owner)
    return [_payload(file, o, n, owner) for o, n in _index(file, owner)]


# ---- tf.train.Example ---------------------------------------------------------------------
# Example{1: Features}; Features{1: map<string, Feature>} (entries {1: key, 2: value});
# Feature{1: BytesList, 2: FloatList, 3: Int64List}, each list's values in field 1.

_KINDS = {1: "bytes_list", 2: "float_list", 3: "int64_list"}


def parse_example(data, what="Example"):
    """{feature name: (kind, values)} of a serialized tf.train.Example; kind is 'bytes_list'
    (values: list of bytes), 'float_list' (floats) or 'int64_list' (ints)."""
    from mycel.onnx import proto as pb  # loaded on first use: the ONNX package is not small
    out = {}
    for features in pb.parse(data, what).get(1, []):
        for entry in pb.parse(pb.blob(features, f"{what}.features"), f"{what}.features").get(1, []):
            e = pb.parse(pb.blob(entry, f"{what}.feature"), f"{what}.feature")
            key = pb.text(e.get(1, [b""])[-1], f"{what}.feature key")
            kind, values = "bytes_list", []  # an empty Feature: no values
            for raw in e.get(2, []):
                feature = pb.parse(pb.blob(raw, f"{what}.feature['{key}']"), f"{what}.feature['{key}']")
                for field, lists in feature.items():
                    if field not in _KINDS:
                        continue  # an unknown field, skipped as protobuf readers do
                    kind = _KINDS[field]
                    where = f"{what}.feature['{key}'].{kind}"
                    for lst in lists:
                        vals = pb.parse(pb.blob(lst, where), where).get(1, [])
                        if field == 1:
                            values = values + [bytes(pb.blob(v, where)) for v in vals]
                        elif field == 2:
                            values = values + pb.unpack_floats(vals)
                        else:
                            values = values + pb.unpack_ints(vals)
            out[key] = (kind, values)
    return out


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _len_field(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def encode_example(features):
    """A serialized tf.train.Example of {name: value}: bytes/str or a list of them (bytes_list),
    floats (float_list, packed) or ints (int64_list, packed); numpy arrays by their dtype."""
    entries = b""
    for name, value in features.items():
        if isinstance(value, np.ndarray):
            value = value.ravel().tolist() if value.dtype.kind in "biuf" else list(value.ravel())
        if isinstance(value, (bytes, str, int, float)):
            value = [value]
        if all(isinstance(v, (bytes, str)) for v in value) and value:
            body = _len_field(1, b"".join(_len_field(1, v.encode() if isinstance(v, str) else v)
                                          for v in value))
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            packed = b"".join(_varint(int(v)) for v in value)
            body = _len_field(3, _len_field(1, packed))
        else:
            body = _len_field(2, _len_field(1, struct.pack(f"<{len(value)}f", *value)))
        entries += _len_field(1, _len_field(1, name.encode()) + _len_field(2, body))
    return _len_field(1, entries)


def write_tfrecord(path, records):
    """Writes payloads (bytes, or dicts for encode_example) as TFRecord frames, atomically."""
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        for r in records:
            data = encode_example(r) if isinstance(r, dict) else bytes(r)
            head = struct.pack("<Q", len(data))
            f.write(head + struct.pack("<I", masked_crc32c(head)) + data +
                    struct.pack("<I", masked_crc32c(data)))
    os.replace(tmp, path)


# ---- Schema -------------------------------------------------------------------------------

_TYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "string", "bytes")


def _type_name(de_type):
    name = de_type if isinstance(de_type, str) else str(de_type).lower()
    name = {"float": "float32", "double": "float64", "int": "int32"}.get(name, name)
    if name not in _TYPES:
        raise ValueError(f"Schema: unknown column type {de_type!r}; expected one of {list(_TYPES)}")
    return name


class Schema:
    """Column names, types and shapes of a TFRecordDataset, as MindSpore's Schema: built with
    add_column or read from a JSON file {"columns": {name: {"type", "rank", "shape"}},
    "numRows": n}."""

    def __init__(self, schema_file=None):
        self.columns, self.num_rows = [], 0
        if schema_file is not None:
            _check_type(schema_file, "schema_file", (str, os.PathLike))
            try:
                with open(schema_file, encoding="utf-8") as f:
                    self.from_json(json.load(f))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
                raise ValueError(f"Schema: cannot read '{schema_file}' ({e})") from None

    def add_column(self, name, de_type, shape=None):
        """Adds a column; shape None means 1-d of whatever length each record has."""
        _check_type(name, "name", str)
        col = {"name": name, "type": _type_name(de_type)}
        if shape is not None:
            _check_type(shape, "shape", (list, tuple))
            for s in shape:
                _check_type(s, "shape", int)
                if s < -1 or s == 0:
                    raise ValueError(f"Schema: shape {list(shape)} of column '{name}' must hold "
                                     "positive sizes (or -1)")
            col["shape"] = list(shape)
        self.columns.append(col)

    def parse_columns(self, columns):
        """Columns from a dict {name: {"type", "shape"}} or a list of {"name", "type", "shape"}."""
        self.columns = []
        items = columns.items() if isinstance(columns, dict) else \
            ((c.get("name"), c) if isinstance(c, dict) else (None, None) for c in columns)
        for name, spec in items:
            if not isinstance(name, str) or not isinstance(spec, dict) or "type" not in spec:
                raise ValueError(f"Schema: column {name!r} needs a name and a 'type', got {spec!r}")
            self.add_column(name, spec["type"], spec.get("shape"))

    def from_json(self, json_obj):
        if not isinstance(json_obj, dict) or "columns" not in json_obj:
            raise ValueError("Schema: the JSON needs a 'columns' entry")
        self.parse_columns(json_obj["columns"])
        rows = json_obj.get("numRows", 0)
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise ValueError(f"Schema: numRows must be an int >= 0, got {rows!r}")
        self.num_rows = rows

    def to_json(self):
        cols = {c["name"]: dict({"type": c["type"]}, **({"rank": len(c["shape"]), "shape": c["shape"]}
                                                         if "shape" in c else {"rank": 1}))
                for c in self.columns}
        return json.dumps({"columns": cols, "numRows": self.num_rows}, indent=2)

    def __str__(self):
        return self.to_json()


_KIND_TYPE = {"bytes_list": "uint8", "float_list": "float32", "int64_list": "int64"}


def _column_value(col, kind, values, where):
    """One feature as its column's array (MindSpore's rules: numbers cast to the column type;
    bytes as strings, or as uint8/int8 with every value padded to the longest)."""
    t, shape = col["type"], col.get("shape")
    if kind == "bytes_list":
        if t in ("string", "bytes"):
            arr = np.array([v.decode("utf-8", errors="replace") for v in values]) if t == "string" \
                else np.array(values, dtype=object).astype(np.bytes_)
            if shape is None and len(values) == 1:
                return arr.reshape(())  # one string: a scalar, as MindSpore's string columns
        elif t in ("uint8", "int8"):
            width = max((len(v) for v in values), default=0)
            arr = np.frombuffer(b"".join(v.ljust(width, b"\0") for v in values), np.dtype(t))
        else:
            raise ValueError(f"{where}: a bytes_list feature cannot fill a {t} column")
    elif t in ("string", "bytes"):
        raise ValueError(f"{where}: a {kind} feature cannot fill a {t} column")
    else:
        arr = np.asarray(values, np.float64 if kind == "float_list" else np.int64)
        arr = arr.astype(np.bool_ if t == "bool" else np.dtype(t))
    if shape is None:
        return arr.reshape(-1) if arr.ndim else arr
    try:
        return arr.reshape(shape)
    except ValueError:
        raise ValueError(f"{where}: {arr.size} values do not fill the column's shape {shape}") from None


def _compression(compression_type):
    if compression_type is None or compression_type == "":
        return None
    _check_type(compression_type, "compression_type", str)
    if compression_type not in ("GZIP", "ZLIB"):
        raise ValueError(f"Input compression_type can only be GZIP, ZLIB or '', got {compression_type!r}.")
    return compression_type


class _Records:
    """Random access to the rows: (file index, payload offset, length) -> parsed columns."""

    def __init__(self, owner, files, frames, columns):
        self.owner, self.files, self.frames, self.columns = owner, files, frames, columns

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, i):
        k, off, n = self.frames[i]
        path = self.files[k].path
        feats = parse_example(_payload(self.files[k], off, n, self.owner),
                              f"{self.owner}: '{path}' record at offset {off - 12}")
        row = []
        for col in self.columns:
            where = f"{self.owner}: '{path}' record at offset {off - 12}, column '{col['name']}'"
            if col["name"] not in feats:
                raise ValueError(f"{where}: the record has no such feature (it has {sorted(feats)})")
            row.append(_column_value(col, *feats[col["name"]], where))
        return tuple(row)


class TFRecordDataset(SourceDataset):
    """TFRecord files of tf.train.Example records. schema (a Schema or a JSON schema file) names
    the columns, their types and shapes (and numRows, a row limit); without it the columns are
    the features of the first record, in name order, typed by their lists (bytes -> uint8,
    float -> float32, int64 -> int64), 1-d. columns_list keeps those columns, in its order.
    compression_type: None/'' (plain), 'GZIP' or 'ZLIB' (the whole file compressed)."""

    def __init__(self, dataset_files, schema=None, columns_list=None, num_samples=None,
                 num_parallel_workers=None, shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None,
                 shard_equal_rows=False, cache=None, compression_type=None):
        owner = "TFRecordDataset"
        self.dataset_files = _find_files(dataset_files)
        compression = _compression(compression_type)
        _check_type(shard_equal_rows, "shard_equal_rows", bool)
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        if schema is not None and not isinstance(schema, Schema):
            schema = Schema(schema)
        if columns_list is not None:
            _check_type(columns_list, "columns_list", (list, tuple))
            for c in columns_list:
                _check_type(c, "columns_list", str)
        files, frames = [], []
        for k, path in enumerate(self.dataset_files):
            files.append(_File(path, compression, owner))
            frames += [(k, off, n) for off, n in _index(files[k], owner)]
        if schema is not None and schema.columns:
            columns = list(schema.columns)
        elif frames:
            k, off, n = frames[0]
            first = parse_example(_payload(files[k], off, n, owner),
                                  f"{owner}: '{self.dataset_files[k]}' record at offset {off - 12}")
            columns = [{"name": name, "type": _KIND_TYPE[kind]} for name, (kind, _) in sorted(first.items())]
        else:
            raise ValueError(f"{owner}: {self.dataset_files} hold no records and no schema names columns")
        if columns_list:
            by_name = {c["name"]: c for c in columns}
            missing = [c for c in columns_list if c not in by_name]
            if missing:
                raise ValueError(f"{owner}: columns_list names {missing}, not among the columns "
                                 f"{list(by_name)}")
            columns = [by_name[c] for c in columns_list]
        if schema is not None and schema.num_rows:
            frames = frames[:schema.num_rows]
        self.schema, self.columns_list = schema, columns_list
        super().__init__(_E.py_source(_Records(owner, files, frames, columns),
                                      [c["name"] for c in columns]), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, None, num_shards,
                                        shard_id))
