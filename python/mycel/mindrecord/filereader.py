"""FileReader: reads MindRecord rows as dicts of numpy values (for tests and tools)."""
import os

import numpy as np

from mycel import _mycel

__all__ = ["FileReader"]


def _as_files(file_name, owner):
    """(list of paths, expand): a str is the first shard whose header names its siblings."""
    if isinstance(file_name, (str, os.PathLike)):
        files, expand = [os.fspath(file_name)], True
    elif isinstance(file_name, (list, tuple)) and file_name and all(
            isinstance(f, (str, os.PathLike)) for f in file_name):
        files, expand = [os.fspath(f) for f in file_name], False
    else:
        raise ValueError(f"[{owner}] expected a file name or a non-empty list of file names, "
                         f"got {file_name!r}")
    # A shard may still sit under its temporary name when a commit was cut short after its
    # commit point; the reader follows the commit record to it.
    missing = [f for f in files if not os.path.isfile(_mycel.mindrecord.committed_path(f))]
    if missing:
        raise ValueError(f"[{owner}] file(s) do not exist: {missing}")
    return files, expand


class FileReader:
    """Reads a MindRecord file set. get_next() yields one dict per row, in write order: numeric
    scalars as numpy scalars, arrays as numpy arrays, bytes fields as bytes, string fields as str.

    num_consumer is accepted for MindSpore compatibility; rows are read on the calling thread."""

    def __init__(self, file_name, num_consumer=4, columns=None, operator=None):
        if not isinstance(num_consumer, int) or isinstance(num_consumer, bool) or num_consumer < 1:
            raise ValueError(f"[FileReader] num_consumer must be a positive int, got {num_consumer!r}")
        if columns is not None and (not isinstance(columns, list) or not columns
                                    or not all(isinstance(c, str) for c in columns)):
            raise ValueError(f"[FileReader] columns must be a non-empty list of str, got {columns!r}")
        files, expand = _as_files(file_name, "FileReader")
        self._reader = _mycel.mindrecord.Reader(files, expand, columns or [])
        self._fields = list(self._reader.selected_fields)

    def __len__(self):
        return len(self._reader)

    def len(self):
        """Number of rows."""
        return len(self._reader)

    def schema(self):
        """The schema as given to FileWriter.add_schema."""
        out = {}
        for name, ftype, shape in self._reader.fields:
            out[name] = {"type": ftype} if shape is None else {"type": ftype, "shape": list(shape)}
        return out

    @property
    def file_names(self):
        return list(self._reader.file_names)

    @property
    def desc(self):
        return self._reader.desc

    @property
    def index_fields(self):
        return list(self._reader.index_fields)

    def read(self, index):
        """Row `index` as a dict."""
        values = self._reader.get(int(index))
        row = {}
        for (name, ftype, shape), t in zip(self._fields, values):
            a = t.asnumpy()
            if ftype == "bytes":
                row[name] = a.tobytes()
            elif ftype == "string":
                row[name] = a.tobytes().decode("utf-8")
            elif shape is None:
                row[name] = a[()]
            else:
                row[name] = a.copy()
        return row

    def get_next(self):
        """Yields every row as a dict, in write order."""
        for i in range(len(self._reader)):
            yield self.read(i)

    def find(self, field, value):
        """Row numbers whose index field `field` equals value (see FileWriter.add_index)."""
        types = {name: ftype for name, ftype, _ in self._reader.fields}
        if field not in types:
            raise ValueError(f"[FileReader] find: field '{field}' is not in the schema")
        if field not in self._reader.index_fields:
            raise ValueError(f"[FileReader] find: field '{field}' is not an index field "
                             "(add it with FileWriter.add_index)")
        if types[field] == "string":
            return list(self._reader.find_str(field, str(value)))
        if types[field] == "float32":  # keys are stored as the float32 value widened
            return list(self._reader.find_float(field, float(np.float32(value))))
        if types[field] == "float64":
            return list(self._reader.find_float(field, float(value)))
        if isinstance(value, float) and not value.is_integer():
            return []
        return list(self._reader.find_int(field, int(value)))

    def close(self):
        """Releases the files."""
        self._reader = None
