"""File sources with MindSpore's signatures: MnistDataset, Cifar10Dataset, Cifar100Dataset,
ImageFolderDataset and CSVDataset. Each class validates its arguments here (MindSpore's messages)
and reads its files in C++ (src/mycel/data/sources/); sampling, shuffling and sharding belong to
the engine (SourceDataset)."""
import glob
import os

from mycel.dataset.engine import SourceDataset

__all__ = ["MnistDataset", "Cifar10Dataset", "Cifar100Dataset", "ImageFolderDataset",
           "CSVDataset"]

_INT32_MAX = 2147483647


# ---- argument checks (MindSpore's wording) -------------------------------------------------

def _check_type(value, name, types):
    # bool is an int in Python, but never a valid count or id.
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        raise TypeError(f"Argument {name} with value {value!r} is not of type {list(_as_tuple(types))}, "
                        f"but got {type(value)}.")


def _as_tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _check_interval(value, name, lo, hi):
    _check_type(value, name, int)
    if not lo <= value <= hi:
        raise ValueError(f"Input {name} is not within the required interval of [{lo}, {hi}].")


def _check_dir(path, name="dataset_dir"):
    _check_type(path, name, (str, os.PathLike))
    path = os.fspath(path)
    if not os.path.isdir(path) or not os.access(path, os.R_OK):
        raise ValueError(f"The folder {path} does not exist or is not a directory or permission denied!")
    return path


def _check_usage(usage, valid=("train", "test", "all")):
    if usage is None:
        return "all"
    _check_type(usage, "usage", str)
    if usage not in valid:
        raise ValueError(f"Input usage is not within the valid set of {list(valid)}.")
    return usage


def _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id,
                  shuffle_types=(bool,)):
    if num_samples is not None:
        _check_interval(num_samples, "num_samples", 0, _INT32_MAX)
    if num_parallel_workers is not None:
        _check_type(num_parallel_workers, "num_parallel_workers", int)
        cores = os.cpu_count() or 1
        if not 1 <= num_parallel_workers <= cores:
            raise ValueError(f"Input num_parallel_workers exceeds the boundary between 1 and {cores}!")
    if shuffle is not None:
        _check_type(shuffle, "shuffle", shuffle_types)
    if num_shards is not None:
        _check_interval(num_shards, "num_shards", 1, _INT32_MAX)
    if shard_id is not None:
        _check_type(shard_id, "shard_id", int)
    # MindSpore raises RuntimeError for these combinations; so do we.
    if sampler is not None and shuffle is not None:
        raise RuntimeError("sampler and shuffle cannot be specified at the same time.")
    if sampler is not None and (num_shards is not None or shard_id is not None):
        raise RuntimeError("sampler and sharding cannot be specified at the same time.")
    if (num_shards is None) != (shard_id is None):
        raise RuntimeError("num_shards and shard_id need to be passed in together.")
    if num_shards is not None and not 0 <= shard_id < num_shards:
        raise ValueError(f"Input shard_id is not within the required interval of [0, {num_shards - 1}].")


def _engine_args(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id):
    return dict(num_samples=num_samples, num_parallel_workers=num_parallel_workers,
                shuffle=shuffle, sampler=sampler, num_shards=num_shards, shard_id=shard_id)


# ---- datasets ----------------------------------------------------------------------------

class MnistDataset(SourceDataset):
    """MNIST or Fashion-MNIST from the four IDX files (plain or .gz) in `dataset_dir`.

    Columns: image (28, 28, 1) uint8 and label, a 0-d int32 tensor (MindSpore's is uint32;
    Mycel has no uint32). usage: 'train' (60000 rows), 'test' (10000) or 'all' (the default:
    train then test, whichever of the two the folder holds, as MindSpore reads it)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _check_usage(usage)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        super().__init__("MnistDataset", dict(dataset_dir=self.dataset_dir, usage=self.usage),
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))


class Cifar10Dataset(SourceDataset):
    """CIFAR-10, binary version: data_batch_1..5.bin (train) and test_batch.bin (test).

    Columns: image (32, 32, 3) uint8 HWC and label, a 0-d int32 tensor (MindSpore: uint32)."""

    _source = "Cifar10Dataset"

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _check_usage(usage)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        super().__init__(self._source, dict(dataset_dir=self.dataset_dir, usage=self.usage),
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))


class Cifar100Dataset(Cifar10Dataset):
    """CIFAR-100, binary version: train.bin and test.bin.

    Columns: image (32, 32, 3) uint8 HWC, coarse_label and fine_label (0-d int32 tensors)."""

    _source = "Cifar100Dataset"


class ImageFolderDataset(SourceDataset):
    """Images in one sub-folder per class: dataset_dir/<class>/<file>.

    Classes are the sub-folders in name order, labelled 0..n-1, unless `class_indexing`
    ({folder name: label}) is given, in which case only those folders are read. Files are those
    whose extension is in `extensions` (default: .jpg, .jpeg, .png; matched ignoring case),
    in name order. Columns: image -- the raw file bytes as a 1-d uint8 tensor, or the decoded
    (H, W, 3) uint8 image when decode=True -- and label, a 0-d int32 tensor."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, extensions=None, class_indexing=None, decode=False,
                 num_shards=None, shard_id=None):
        self.dataset_dir = _check_dir(dataset_dir)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        kwargs = dict(dataset_dir=self.dataset_dir)
        if extensions is not None:
            _check_type(extensions, "extensions", (list, tuple))
            for e in extensions:
                _check_type(e, "extensions", str)
            kwargs["extensions"] = list(extensions)
        if class_indexing is not None:
            _check_type(class_indexing, "class_indexing", dict)
            for k, v in class_indexing.items():
                _check_type(k, "class_indexing", str)
                _check_type(v, "class_indexing", int)
                if not 0 <= v <= _INT32_MAX:
                    raise ValueError("Input class_indexing value is not within the required "
                                     f"interval of [0, {_INT32_MAX}].")
            if class_indexing:
                kwargs["class_names"] = list(class_indexing.keys())
                kwargs["class_ids"] = list(class_indexing.values())
        _check_type(decode, "decode", bool)
        kwargs["decode"] = decode
        self.extensions = extensions
        self.class_indexing = class_indexing
        self.decode = decode
        super().__init__("ImageFolderDataset", kwargs,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))

    def get_class_indexing(self):
        """{class folder name: label}."""
        if self.class_indexing:
            return dict(self.class_indexing)
        folders = sorted(d for d in os.listdir(self.dataset_dir)
                         if os.path.isdir(os.path.join(self.dataset_dir, d)))
        return {name: i for i, name in enumerate(folders)}


def _find_files(patterns):
    """A path or glob pattern (or a list of them) -> the sorted list of matching files."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    _check_type(patterns, "dataset_files", (list, tuple))
    files, missing = set(), []
    for p in patterns:
        _check_type(p, "dataset_files", (str, os.PathLike))
        p = os.fspath(p)
        matched = [p] if os.path.isfile(p) else [f for f in glob.glob(p) if os.path.isfile(f)]
        if not matched:
            missing.append(p)
        files.update(matched)
    if missing:
        raise ValueError(f"The following patterns did not match any files: {missing}")
    return sorted(files)


class CSVDataset(SourceDataset):
    """CSV files. Every field becomes a (1,)-shaped value, like MindSpore's.

    column_defaults: one value per column; its Python type sets the column type (int -> int64,
    float -> float32, str -> string) and it fills empty fields. Without it every column is a
    string column, as in MindSpore (convert with text.ToNumber or give numeric defaults). A
    field that does not parse as its column's number raises ValueError naming the file, line
    and column. column_names: None reads them from each file's first line (every file's header
    must match). shuffle: bool or Shuffle; every mode shuffles rows globally."""

    def __init__(self, dataset_files, field_delim=",", column_defaults=None, column_names=None,
                 num_samples=None, num_parallel_workers=None, shuffle=True, num_shards=None,
                 shard_id=None):
        self.dataset_files = _find_files(dataset_files)
        _check_type(field_delim, "field_delim", str)
        if field_delim in ('"', "\r", "\n") or len(field_delim) != 1:
            raise ValueError("field_delim is invalid.")
        kwargs = dict(dataset_files=self.dataset_files, field_delim=field_delim)
        if column_defaults is not None:
            _check_type(column_defaults, "column_defaults", (list, tuple))
            types, values = [], []
            for v in column_defaults:
                if isinstance(v, str):
                    types.append("string")
                    values.append(v)
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise TypeError("column type in column_defaults is invalid.")
                types.append("int64" if isinstance(v, int) else "float32")
                values.append(repr(v))
            if types:
                kwargs["column_types"] = types
                kwargs["column_defaults"] = values
        if column_names is not None:
            _check_type(column_names, "column_names", (list, tuple))
            for n in column_names:
                _check_type(n, "column_names", str)
            if len(set(column_names)) != len(column_names):
                raise ValueError("column_names should not have duplicate values.")
            if column_names:
                kwargs["column_names"] = list(column_names)
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        self.field_delim = field_delim
        self.column_defaults = column_defaults
        self.column_names = column_names
        super().__init__("CSVDataset", kwargs,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, None,
                                        num_shards, shard_id))


def _shuffle_flag(shuffle):
    """bool or a Shuffle member (GLOBAL / FILES / INFILE) -> bool (all modes shuffle globally)."""
    if shuffle is None or isinstance(shuffle, bool):
        return shuffle
    value = getattr(shuffle, "value", None)
    if value in ("global", "files", "infile"):
        return True
    raise TypeError(f"Argument shuffle with value {shuffle!r} is not of type [<class 'bool'>, "
                    f"<enum 'Shuffle'>], but got {type(shuffle)}.")
