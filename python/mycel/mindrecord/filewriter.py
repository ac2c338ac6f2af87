"""FileWriter: writes rows (dicts) into MindRecord files, validated against a schema."""
import os

import numpy as np

from mycel import _mycel

__all__ = ["FileWriter", "SUCCESS", "FAILED"]

SUCCESS = 0
FAILED = 1

_NUMERIC = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}
_TYPES = tuple(_NUMERIC) + ("string", "bytes")
_BATCH = 1024  # rows handed to C++ per call


def _check_schema(content):
    if not isinstance(content, dict) or not content:
        raise ValueError(f"[FileWriter] add_schema: schema must be a non-empty dict, got {content!r}")
    fields = []
    for name, spec in content.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"[FileWriter] add_schema: field names must be non-empty str, got {name!r}")
        if not isinstance(spec, dict) or "type" not in spec:
            raise ValueError(f"[FileWriter] add_schema: field '{name}' must be a dict with a 'type', "
                             f"got {spec!r}")
        extra = set(spec) - {"type", "shape"}
        if extra:
            raise ValueError(f"[FileWriter] add_schema: field '{name}' has unknown keys {sorted(extra)}")
        ftype = spec["type"]
        if ftype not in _TYPES:
            raise ValueError(f"[FileWriter] add_schema: field '{name}' has type {ftype!r}; expected "
                             f"one of {', '.join(_TYPES)}")
        shape = spec.get("shape")
        if shape is not None:
            if ftype not in _NUMERIC:
                raise ValueError(f"[FileWriter] add_schema: field '{name}' of type {ftype} cannot "
                                 "have a shape (only int32/int64/float32/float64 can)")
            if (not isinstance(shape, (list, tuple)) or not shape
                    or not all(isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1)
                               for d in shape)):
                raise ValueError(f"[FileWriter] add_schema: field '{name}' has shape {shape!r}; "
                                 "expected a non-empty list of positive ints or -1")
            shape = [int(d) for d in shape]
        fields.append((name, ftype, shape))
    return fields


def _encode(field, row, value):
    """(bytes, shape) for one value, or ValueError naming the row and field."""
    name, ftype, shape = field
    where = f"[FileWriter] write_raw_data: row {row}, field '{name}'"
    if ftype == "bytes":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value), []
        if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 1:
            return value.tobytes(), []
        raise ValueError(f"{where}: expected bytes, got {type(value).__name__}")
    if ftype == "string":
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected str, got {type(value).__name__}")
        return value.encode("utf-8"), []
    dtype = np.dtype(_NUMERIC[ftype])
    if shape is None:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        if dtype.kind == "f":
            ok = ok or isinstance(value, (float, np.floating))
        if not ok:
            raise ValueError(f"{where}: expected a {ftype} scalar, got {type(value).__name__} {value!r}")
        if dtype.kind == "i":
            info = np.iinfo(dtype)
            if not info.min <= int(value) <= info.max:
                raise ValueError(f"{where}: {value} is out of range for {ftype}")
        return np.asarray(value, dtype=dtype).tobytes(), []
    if not isinstance(value, (np.ndarray, list, tuple)):
        raise ValueError(f"{where}: expected a numpy array of shape {shape}, got {type(value).__name__}")
    arr = np.asarray(value)
    if arr.dtype.kind not in ("iu" if dtype.kind == "i" else "iuf"):
        raise ValueError(f"{where}: expected {ftype} values, got an array of {arr.dtype}")
    if dtype.kind == "i" and arr.size and arr.dtype != dtype:
        info = np.iinfo(dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise ValueError(f"{where}: values out of range for {ftype}")
    if arr.ndim != len(shape) or any(d != -1 and d != s for d, s in zip(shape, arr.shape)):
        raise ValueError(f"{where}: expected shape {shape}, got {list(arr.shape)}")
    arr = np.ascontiguousarray(arr, dtype=dtype.newbyteorder("<"))
    return arr.tobytes(), list(arr.shape)


class FileWriter:
    """Writes a MindRecord file (or shard_num files named file_name + "0".."n-1"), atomically.

    Rows are written to temporary files of this writer's own ("<name>.tmp-<pid>-<random>") and
    published by commit(), all shards at once (a commit record makes a killed commit all or
    nothing; docs/dataset.md); a writer dropped before commit() leaves no file under the final
    names."""

    def __init__(self, file_name, shard_num=1, overwrite=False):
        if not isinstance(file_name, (str, os.PathLike)):
            raise TypeError(f"[FileWriter] file_name must be str, got {type(file_name).__name__}")
        if not isinstance(shard_num, int) or isinstance(shard_num, bool) or not 1 <= shard_num <= 1000:
            raise ValueError(f"[FileWriter] shard_num must be an int in [1, 1000], got {shard_num!r}")
        if not isinstance(overwrite, bool):
            raise TypeError(f"[FileWriter] overwrite must be bool, got {type(overwrite).__name__}")
        self._writer = _mycel.mindrecord.Writer(os.fspath(file_name), shard_num, overwrite)
        self._fields = None

    @property
    def file_names(self):
        """Final names of the shard files."""
        return list(self._writer.file_names)

    def add_schema(self, content, desc=None):
        """Sets the schema: {"name": {"type": "int32"|...|"bytes", "shape": [..]}}. Returns its id."""
        if desc is not None and not isinstance(desc, str):
            raise TypeError(f"[FileWriter] add_schema: desc must be str, got {type(desc).__name__}")
        fields = _check_schema(content)
        schema_id = self._writer.add_schema(fields, desc or "")
        self._fields = fields
        return schema_id

    def add_index(self, index_fields):
        """Makes scalar numeric or string fields searchable by value (FileReader.find)."""
        if not isinstance(index_fields, list) or not all(isinstance(f, str) for f in index_fields):
            raise ValueError(f"[FileWriter] add_index: index_fields must be a list of str, got {index_fields!r}")
        self._writer.add_index(index_fields)
        return SUCCESS

    def set_page_size(self, page_size):
        """Bytes per page (default 1 MiB; rows larger than a page get their own page run)."""
        self._writer.set_page_size(int(page_size))
        return SUCCESS

    def set_header_size(self, header_size):
        """Accepted for MindSpore compatibility; a Mycel header is as large as its schema needs."""
        return SUCCESS

    def write_raw_data(self, raw_data, parallel_writer=False):
        """Appends rows (a list of dicts holding every schema field); rows go round-robin to shards.

        All rows are validated before any is written: a bad row raises ValueError naming it."""
        if self._fields is None:
            raise ValueError("[FileWriter] write_raw_data needs a schema; call add_schema first")
        if not isinstance(raw_data, list):
            raise ValueError(f"[FileWriter] write_raw_data: raw_data must be a list of dicts, got "
                             f"{type(raw_data).__name__}")
        names = {f[0] for f in self._fields}
        base = self._writer.rows_written
        encoded = []
        for i, row in enumerate(raw_data):
            if not isinstance(row, dict):
                raise ValueError(f"[FileWriter] write_raw_data: row {base + i} must be a dict, got "
                                 f"{type(row).__name__}")
            missing = [n for n in names if n not in row]
            if missing:
                raise ValueError(f"[FileWriter] write_raw_data: row {base + i} lacks field(s) {sorted(missing)}")
            extra = [k for k in row if k not in names]
            if extra:
                raise ValueError(f"[FileWriter] write_raw_data: row {base + i} has field(s) "
                                 f"{sorted(map(str, extra))} that are not in the schema")
            encoded.append([_encode(f, base + i, row[f[0]]) for f in self._fields])
        for k in range(0, len(encoded), _BATCH):
            self._writer.write_rows(encoded[k:k + _BATCH])
        return SUCCESS

    def commit(self):
        """Finishes and publishes the files (fsync + rename). Returns SUCCESS."""
        self._writer.commit()
        return SUCCESS

    def abort(self):
        """Discards everything written (removes the temporary files)."""
        self._writer.abort()

    @staticmethod
    def open_for_append(file_name):
        raise NotImplementedError("[FileWriter] open_for_append is not supported: MindRecord files "
                                  "are immutable once committed; write a new file set instead")
