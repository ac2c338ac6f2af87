"""Datasets: a lazily built tree of Python nodes, compiled into a C++ pipeline when iterated.

`ds.map(...).batch(...)` only records nodes. Creating an iterator builds one C++ op per node
(src/mycel/data/engine): sources, map and batch run on their own worker threads, joined by bounded
queues that keep order, and a prefetch thread fills a queue at the root (Model.train's compiled
loop instead runs a tree that allows it on its own thread: _create_sink_iterator). Every random choice
(samplers, shuffle buffers, random transforms) is seeded from `mycel.set_seed` (a fixed default
when unset), the op's position in the tree, the epoch and the row's position, so the output does
not depend on the number of workers.
"""
import builtins
import copy
import numbers
import os

import numpy as np

from mycel import _mycel
from mycel.common import seed as _seed
from mycel.common.string_tensor import string_tensor_row
from mycel.dataset.samplers import (Sampler, SequentialSampler, RandomSampler,
                                    DistributedSampler, SubsetSampler, SubsetRandomSampler)

__all__ = ["Dataset", "SourceDataset", "MapDataset", "BatchDataset", "ShuffleDataset",
           "RepeatDataset", "TakeDataset", "SkipDataset", "ProjectDataset", "RenameDataset",
           "ZipDataset", "ConcatDataset", "NumpySlicesDataset", "GeneratorDataset", "BatchInfo",
           "TupleIterator", "DictIterator", "config", "zip", "get_row_seed"]

_E = _mycel.data.engine
DEFAULT_SEED = 5489  # pipeline seed when mycel.set_seed was never called


class _Config:
    """Global pipeline settings (MindSpore's `mindspore.dataset.config`)."""

    def __init__(self):
        # Half the cores (at most 8) per op: training runs the kernels' OpenMP pool on every core
        # at the same time, and on 2 cores one worker per op cost the LeNet5 Fashion-MNIST epoch
        # 3-5 core-us per image over the bare step against 10-16 with two (docs/dataset.md,
        # "Input pipeline cost"); set_num_parallel_workers or an op's num_parallel_workers
        # overrides it.
        self._workers = max(1, min(8, (os.cpu_count() or 1) // 2))
        self._prefetch = 16

    def set_seed(self, seed):
        """Same as mycel.set_seed: fixes every shuffle, sampler and random transform."""
        _seed.set_seed(seed)

    def get_seed(self):
        s = _seed.get_seed()
        return DEFAULT_SEED if s is None else s

    def set_num_parallel_workers(self, num):
        self._workers = _check_workers("config", num)

    def get_num_parallel_workers(self):
        return self._workers

    def set_prefetch_size(self, size):
        if not isinstance(size, numbers.Integral) or size < 1:
            raise ValueError(f"config: prefetch_size must be an int >= 1, got {size!r}")
        self._prefetch = int(size)

    def get_prefetch_size(self):
        return self._prefetch


config = _Config()


def get_row_seed():
    """Inside a Python map operation: a seed for this row (from the pipeline seed, the epoch and
    the row's position), e.g. np.random.default_rng(get_row_seed()); None elsewhere."""
    r = _E.current_row()
    return None if r is None else (r[0] ^ (r[1] * 0x9E3779B97F4A7C15)) % 2**63


def _check_workers(owner, n):
    if n is None:
        return None
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{owner}: num_parallel_workers must be an int >= 1, got {n!r}")
    return int(n)


def _as_list(owner, arg, cols):
    if cols is None:
        return None
    if isinstance(cols, str):
        return [cols]
    if isinstance(cols, (list, tuple)) and all(isinstance(c, str) for c in cols):
        return list(cols)
    raise TypeError(f"{owner}: {arg} must be a str or a list of str, got {cols!r}")


def _check_exist(owner, arg, names, have):
    for n in names:
        if n not in have:
            raise ValueError(f"{owner}: {arg} names column '{n}', which is not among {have}")
    if len(set(names)) != len(names):
        raise ValueError(f"{owner}: {arg} has duplicate names {names}")


def _replace_columns(owner, cols, ins, outs):
    """New column list when `ins` are replaced by `outs` (at the first input's position), and the
    layout the engine uses: index >= 0 an input column, -k-1 the k-th output."""
    kept = [c for c in cols if c not in ins]
    for o in outs:
        if o in kept:
            raise ValueError(f"{owner}: output column '{o}' clashes with an existing column {cols}")
    if len(set(outs)) != len(outs):
        raise ValueError(f"{owner}: output_columns has duplicate names {outs}")
    first = min(cols.index(c) for c in ins) if ins else len(cols)
    pos = sum(1 for c in cols[:first] if c not in ins)
    new = kept[:pos] + outs + kept[pos:]
    layout = [-(outs.index(n) + 1) if n in outs else cols.index(n) for n in new]
    return new, layout


def _transform_handle(op):
    if isinstance(op, _mycel.data.Transform):
        return op
    h = getattr(op, "_handle", None)
    if isinstance(h, _mycel.data.Transform):
        return h
    if callable(op):
        return _mycel.data.py_transform(op)
    raise TypeError(f"map: operations must be transforms or Python callables, got {type(op).__name__}")


class Dataset:
    """Base of every dataset node: chained calls build the tree, iterators run it."""

    def __init__(self, children=(), num_parallel_workers=None):
        self.children = list(children)
        self.num_parallel_workers = _check_workers(type(self).__name__, num_parallel_workers)

    # -- what each node defines -----------------------------------------------------------
    def _columns(self):
        raise NotImplementedError

    def _op(self, kids):
        """The C++ op of this node over the children's ops."""
        raise NotImplementedError

    def _size(self):
        """Rows per epoch, or None when only a run can tell."""
        raise NotImplementedError

    def _workers(self):
        return self.num_parallel_workers or config.get_num_parallel_workers()

    def _build(self):
        return self._op([c._build() for c in self.children])

    # -- pipeline operations ----------------------------------------------------------------
    def map(self, operations, input_columns=None, output_columns=None, column_order=None,
            num_parallel_workers=None, python_multiprocessing=False, cache=None, callbacks=None,
            max_rowsize=16, offload=None):
        """Applies operations (transforms or Python callables, in order) to input_columns."""
        ds = MapDataset(self, operations, input_columns, output_columns, num_parallel_workers)
        return ds.project(column_order) if column_order is not None else ds

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None, per_batch_map=None,
              input_columns=None, output_columns=None, column_order=None, pad_info=None,
              python_multiprocessing=False, max_rowsize=16):
        """Stacks batch_size rows into (batch_size, ...) tensors."""
        ds = BatchDataset(self, batch_size, drop_remainder, num_parallel_workers, per_batch_map,
                          input_columns, output_columns, pad_info)
        return ds.project(column_order) if column_order is not None else ds

    def sync_wait(self, condition_name, num_batch=1, callback=None):
        """Blocks the pipeline here after num_batch batches until sync_update(condition_name)
        releases more (python_ops.py)."""
        from mycel.dataset.python_ops import SyncWaitDataset
        return SyncWaitDataset(self, condition_name, num_batch, callback)

    def sync_update(self, condition_name, num_batch=None, data=None):
        """Releases num_batch more batches (sync_wait's num_batch by default) of the sync_wait
        point condition_name in this dataset's tree, first calling its callback(data)."""
        from mycel.dataset.python_ops import find_sync_wait
        node = find_sync_wait(self, condition_name)
        if node is None:
            raise ValueError(f"sync_update: no sync_wait named '{condition_name}' in this dataset")
        if num_batch is not None and (not isinstance(num_batch, int) or num_batch < 1):
            raise ValueError(f"sync_update: num_batch must be an int >= 1, got {num_batch!r}")
        node._release(num_batch, data)

    def filter(self, predicate, input_columns=None, num_parallel_workers=None):
        """The rows for which predicate(*input_columns) is true (python_ops.py)."""
        from mycel.dataset.python_ops import FilterDataset
        return FilterDataset(self, predicate, input_columns, num_parallel_workers)

    def bucket_batch_by_length(self, column_names, bucket_boundaries, bucket_batch_sizes,
                               element_length_function=None, pad_info=None,
                               pad_to_bucket_boundary=False, drop_remainder=False):
        """Batches rows of similar length together, one batch size per length bucket, padding
        the pad_info columns {name: (shape or None, value)} (python_ops.py)."""
        from mycel.dataset.python_ops import BucketBatchByLengthDataset
        return BucketBatchByLengthDataset(self, column_names, bucket_boundaries, bucket_batch_sizes,
                                          element_length_function, pad_info, pad_to_bucket_boundary,
                                          drop_remainder)

    def shuffle(self, buffer_size):
        return ShuffleDataset(self, buffer_size)

    def repeat(self, count=None):
        return RepeatDataset(self, -1 if count is None else count)

    def zip(self, datasets):
        if isinstance(datasets, Dataset):
            datasets = (datasets,)
        return ZipDataset((self,) + tuple(datasets))

    def concat(self, datasets):
        if isinstance(datasets, Dataset):
            datasets = [datasets]
        return ConcatDataset([self] + list(datasets))

    def __add__(self, other):
        return self.concat(other)

    def take(self, count=-1):
        return TakeDataset(self, count)

    def skip(self, count):
        return SkipDataset(self, count)

    def project(self, columns):
        return ProjectDataset(self, columns)

    def rename(self, input_columns, output_columns):
        return RenameDataset(self, input_columns, output_columns)

    def split(self, sizes, randomize=True):
        """Splits into datasets of the given sizes (ints summing to the size, or fractions
        summing to 1). randomize=True needs a source dataset: rows go to splits at random."""
        n = self.get_dataset_size()
        abs_sizes = _split_sizes(sizes, n)
        if randomize and not isinstance(self, SourceDataset):
            raise NotImplementedError("split: randomize=True needs a source dataset (a mappable "
                                      "one, with no operations applied); use randomize=False")
        if isinstance(self, SourceDataset) and not isinstance(self.sampler, DistributedSampler):
            order = (np.random.default_rng(config.get_seed()).permutation(n) if randomize
                     else np.arange(n))
            out, start = [], 0
            for s in abs_sizes:
                part = copy.copy(self)
                idx = order[start:start + s]
                part.sampler = SubsetRandomSampler(idx) if randomize else SubsetSampler(idx)
                out.append(part)
                start += s
            return out
        out, start = [], 0
        for s in abs_sizes:
            out.append(self.skip(start).take(s))
            start += s
        return out

    # -- iteration ------------------------------------------------------------------------
    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False, do_copy=True):
        """Iterator over rows as lists of Tensors (numpy arrays with output_numpy); each pass of a
        for-loop over it is one epoch."""
        return TupleIterator(self, columns, num_epochs, output_numpy)

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True, columns=None):
        """Iterator over rows as {column name: Tensor}."""
        return DictIterator(self, columns, num_epochs, output_numpy)

    def __iter__(self):
        return iter(self.create_tuple_iterator(num_epochs=1))

    def _create_sink_iterator(self, num_epochs=-1):
        """A tuple iterator for a compiled training loop (Model.train's CompiledGraph.run_sink):
        when the tree can, its pipeline runs on the loop's thread, each batch built between two
        steps on the OpenMP pool, instead of on threads that compete with the step for the
        cores (docs/dataset.md, "Input pipeline cost"). MYCEL_DATA_ON_CONSUMER=0 keeps the
        threads."""
        on_consumer = os.environ.get("MYCEL_DATA_ON_CONSUMER", "1") != "0"
        return TupleIterator(self, None, num_epochs, False, on_consumer=on_consumer)

    # -- metadata --------------------------------------------------------------------------
    def get_col_names(self):
        return list(self._columns())

    def get_dataset_size(self):
        """Rows (or batches) per epoch."""
        n = self._size()
        if n is None:  # e.g. a generator over a plain iterable: count one pass
            it = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
            n = builtins.sum(1 for _ in it)
            it.stop()
        return int(n)

    def _first_row(self):
        if not hasattr(self, "_first_row_cache"):
            it = self.create_tuple_iterator(num_epochs=1)
            try:
                row = next(iter(it))
            except StopIteration:
                raise RuntimeError(f"{type(self).__name__}: the dataset is empty") from None
            finally:
                it.stop()
            self._first_row_cache = [(list(t.shape), t.dtype) for t in row]
        return self._first_row_cache

    def output_shapes(self):
        """Shape of each column in the first row (runs the pipeline for one row)."""
        return [s for s, _ in self._first_row()]

    def output_types(self):
        """mycel dtype of each column in the first row."""
        return [t for _, t in self._first_row()]

    def get_batch_size(self):
        node = self
        while node is not None:
            if isinstance(node, BatchDataset):
                return node.batch_size
            node = node.children[0] if node.children else None
        return 1

    def get_repeat_count(self):
        node = self
        while node is not None:
            if isinstance(node, RepeatDataset):
                return node.count
            node = node.children[0] if node.children else None
        return 1


def _split_sizes(sizes, n):
    if not sizes:
        raise ValueError("split: sizes must not be empty")
    if all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in sizes):
        if any(s < 1 for s in sizes) or builtins.sum(sizes) != n:
            raise ValueError(f"split: int sizes must be >= 1 and sum to the dataset size {n}, "
                             f"got {list(sizes)}")
        return [int(s) for s in sizes]
    if all(isinstance(s, float) for s in sizes):
        if any(not 0 < s <= 1 for s in sizes) or abs(builtins.sum(sizes) - 1) > 1e-6:
            raise ValueError(f"split: float sizes must be in (0, 1] and sum to 1, got {list(sizes)}")
        out = [int(round(s * n)) for s in sizes]
        out[-1] += n - builtins.sum(out)  # rounding leftovers go to the last split
        if any(s < 1 for s in out):
            raise ValueError(f"split: sizes {list(sizes)} give an empty split of {n} rows")
        return out
    raise TypeError(f"split: sizes must be all ints or all floats, got {list(sizes)}")


def _select_sampler(owner, num_samples, shuffle, sampler, num_shards, shard_id):
    """MindSpore's rules: a sampler excludes shuffle and shards; shards give a
    DistributedSampler; shuffle (default on) a RandomSampler; else a SequentialSampler."""
    if num_samples is not None and (not isinstance(num_samples, numbers.Integral) or num_samples < 0):
        raise ValueError(f"{owner}: num_samples must be an int >= 0, got {num_samples!r}")
    if sampler is not None:
        if shuffle is not None or num_shards is not None or shard_id is not None:
            raise ValueError(f"{owner}: sampler cannot be combined with shuffle or "
                             f"num_shards/shard_id (conflicting arguments)")
        if not isinstance(sampler, Sampler):
            try:
                sampler = SubsetSampler(list(sampler))
            except TypeError:
                raise TypeError(f"{owner}: sampler must be a Sampler or a list of indices, "
                                f"got {type(sampler).__name__}") from None
        if num_samples is not None:
            sampler = copy.copy(sampler)
            sampler.num_samples = num_samples if sampler.num_samples is None else \
                min(num_samples, sampler.num_samples)
        return sampler
    if num_shards is None and shard_id is None:  # data parallel: this rank's shard by default
        from mycel.parallel.context import _shard_defaults
        num_shards, shard_id = _shard_defaults()
    if (num_shards is None) != (shard_id is None):
        raise ValueError(f"{owner}: num_shards and shard_id must be given together")
    if num_shards is not None:
        return DistributedSampler(num_shards, shard_id, True if shuffle is None else bool(shuffle),
                                  num_samples)
    if shuffle is not None and not shuffle:
        return SequentialSampler(num_samples=num_samples)
    return RandomSampler(num_samples=num_samples)


class SourceDataset(Dataset):
    """A dataset read from a C++ source: a registered name (see src/mycel/data/source.h) or a
    ready `_mycel.data.Source`. Subclasses call super().__init__(source_name, source_kwargs,
    num_parallel_workers=..., shuffle=..., num_samples=..., num_shards=..., shard_id=...,
    sampler=...)."""

    def __init__(self, source_name, source_kwargs, *, num_parallel_workers=None, shuffle=None,
                 num_samples=None, num_shards=None, shard_id=None, sampler=None):
        owner = type(self).__name__
        Dataset.__init__(self, (), num_parallel_workers)
        if isinstance(source_name, _mycel.data.Source):
            self.source = source_name
        else:
            self.source = _mycel.data.make_source(source_name, **(source_kwargs or {}))
        self.num_samples = num_samples
        self.sampler = _select_sampler(owner, num_samples, shuffle, sampler, num_shards, shard_id)
        _E.check_sampler(self.sampler._spec(), len(self.source))

    def _columns(self):
        return list(self.source.column_names)

    def _op(self, kids):
        return _E.source_op(self.source, self.sampler._spec(), self._workers())

    def _size(self):
        return self.sampler._size(len(self.source))


class NumpySlicesDataset(SourceDataset):
    """Rows are slices along the first axis of arrays: an array or list (one column), a tuple of
    arrays (one column each), or a dict {column name: array}."""

    def __init__(self, data, column_names=None, num_samples=None, num_parallel_workers=1,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        if isinstance(data, dict):
            names, cols = list(data.keys()), list(data.values())
            if column_names is not None and list(_as_list("NumpySlicesDataset", "column_names",
                                                          column_names)) != names:
                raise ValueError("NumpySlicesDataset: column_names must match the keys of a dict")
        else:
            cols = list(data) if isinstance(data, tuple) else [data]
            names = _as_list("NumpySlicesDataset", "column_names", column_names) or \
                [f"column_{i}" for i in range(len(cols))]
        if len(names) != len(cols):
            raise ValueError(f"NumpySlicesDataset: {len(cols)} columns but column_names has "
                             f"{len(names)} names {names}")
        tensors = []
        for name, col in builtins.zip(names, cols):
            arr = np.ascontiguousarray(np.asarray(col))
            if arr.dtype.kind not in "biufUS":
                raise TypeError(f"NumpySlicesDataset: column '{name}' has dtype {arr.dtype}; "
                                "numeric, bool, str or bytes arrays are supported")
            if arr.ndim == 0:
                raise ValueError(f"NumpySlicesDataset: column '{name}' is a scalar; give an array "
                                 "with one row per sample")
            # str/bytes become a string tensor (src/mycel/data/string_tensor.h); rows are views
            tensors.append(_mycel.data.to_row_value(arr) if arr.dtype.kind in "US" else _mycel.Tensor(arr))
        super().__init__(_E.tensor_source(tensors, names), None,
                         num_parallel_workers=num_parallel_workers, shuffle=shuffle,
                         num_samples=num_samples, num_shards=num_shards, shard_id=shard_id,
                         sampler=sampler)


class GeneratorDataset(SourceDataset):
    """Rows from Python: a random-accessible object (__getitem__ and __len__; samplers, shuffle
    and shards apply), a callable returning an iterable, or an iterable (read in order, once per
    epoch). Each item is a tuple of arrays (one per column) or a single array."""

    def __init__(self, source, column_names=None, column_types=None, schema=None, num_samples=None,
                 num_parallel_workers=1, shuffle=None, sampler=None, num_shards=None,
                 shard_id=None, python_multiprocessing=True, max_rowsize=6):
        names = _as_list("GeneratorDataset", "column_names", column_names)
        if not names:
            raise ValueError("GeneratorDataset: column_names is required")
        self.column_names = names
        self.random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if self.random_access:
            super().__init__(_E.py_source(source, names), None,
                             num_parallel_workers=num_parallel_workers, shuffle=shuffle,
                             num_samples=num_samples, num_shards=num_shards, shard_id=shard_id,
                             sampler=sampler)
            return
        if not callable(source) and not hasattr(source, "__iter__"):
            raise TypeError("GeneratorDataset: source must be callable, iterable or random-"
                            f"accessible, got {type(source).__name__}")
        if shuffle or sampler is not None or num_shards is not None or shard_id is not None:
            raise ValueError("GeneratorDataset: shuffle, sampler and num_shards/shard_id need a "
                             "random-accessible source (with __getitem__ and __len__)")
        if num_samples is not None and (not isinstance(num_samples, numbers.Integral) or num_samples < 0):
            raise ValueError(f"GeneratorDataset: num_samples must be an int >= 0, got {num_samples!r}")
        Dataset.__init__(self, (), num_parallel_workers)
        self.source, self.sampler, self.num_samples = source, None, num_samples

    def _columns(self):
        return list(self.column_names)

    def _op(self, kids):
        if self.random_access:
            return super()._op(kids)
        n = -1 if self.num_samples is None else self.num_samples
        return _E.stream_op(self.source, len(self.column_names), n)

    def _size(self):
        return super()._size() if self.random_access else None


class MapDataset(Dataset):
    def __init__(self, child, operations, input_columns=None, output_columns=None,
                 num_parallel_workers=None):
        super().__init__([child], num_parallel_workers)
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops:
            raise ValueError("map: operations must not be empty")
        self.operations = ops
        self._handles = [_transform_handle(op) for op in ops]
        cols = child.get_col_names()
        ins = _as_list("map", "input_columns", input_columns) or cols[:1]
        _check_exist("map", "input_columns", ins, cols)
        outs = _as_list("map", "output_columns", output_columns) or list(ins)
        self.input_columns, self.output_columns = ins, outs
        self._cols, self._layout = _replace_columns("map", cols, ins, outs)
        self._in_idx = [cols.index(c) for c in ins]

    def _columns(self):
        return self._cols

    def _op(self, kids):
        return _E.map_op(kids[0], self._handles, self._in_idx, self._layout, self._workers())

    def _size(self):
        return self.children[0]._size()


class BatchInfo:
    """Passed to per_batch_map: the batch's number within its epoch, and the epoch's number."""

    def __init__(self, batch_num, epoch_num):
        self._batch, self._epoch = batch_num, epoch_num

    def get_batch_num(self):
        return self._batch

    def get_epoch_num(self):
        return self._epoch


class BatchDataset(Dataset):
    def __init__(self, child, batch_size, drop_remainder=False, num_parallel_workers=None,
                 per_batch_map=None, input_columns=None, output_columns=None, pad_info=None):
        super().__init__([child], num_parallel_workers)
        if callable(batch_size):
            raise NotImplementedError("batch: a callable batch_size is not supported")
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch: batch_size must be an int >= 1, got {batch_size!r}")
        if not isinstance(drop_remainder, bool):
            raise TypeError(f"batch: drop_remainder must be a bool, got {drop_remainder!r}")
        if per_batch_map is not None and not callable(per_batch_map):
            raise TypeError("batch: per_batch_map must be callable")
        self.batch_size, self.drop_remainder = int(batch_size), drop_remainder
        self.per_batch_map = per_batch_map
        # A sync_wait below (before any other batch) counts in this batch's batches.
        stack = [child]
        while stack:
            node = stack.pop()
            if hasattr(node, "_set_batch_size"):
                node._set_batch_size(self.batch_size)
            elif not isinstance(node, BatchDataset):
                stack.extend(getattr(node, "children", []))
        cols = child.get_col_names()
        ins = _as_list("batch", "input_columns", input_columns)
        outs = _as_list("batch", "output_columns", output_columns)
        if per_batch_map is None:
            if ins is not None or outs is not None:
                raise ValueError("batch: input_columns/output_columns need a per_batch_map")
            self._cols, self._layout, self._map_in = cols, list(range(len(cols))), []
        else:
            ins = ins or list(cols)
            _check_exist("batch", "input_columns", ins, cols)
            outs = outs or list(ins)
            self._cols, self._layout = _replace_columns("batch", cols, ins, outs)
            self._map_in = [cols.index(c) for c in ins]
        self._pads = []
        pad_info = pad_info or {}
        if not isinstance(pad_info, dict):
            raise TypeError(f"batch: pad_info must be a dict {{column: (shape, value)}}, got {pad_info!r}")
        for name in pad_info:
            if name not in self._cols:
                raise ValueError(f"batch: pad_info names column '{name}', which is not among {self._cols}")
        for name in self._cols:
            if name not in pad_info:
                self._pads.append((False, [], 0.0, ""))
                continue
            spec = pad_info[name]
            shape, value = (spec if spec is not None else (None, 0))
            dims = [] if shape is None else [-1 if d is None else int(d) for d in shape]
            if isinstance(value, (str, bytes)):  # a string column's pad string
                text = value.decode("utf-8") if isinstance(value, bytes) else value
                if "\0" in text:
                    raise ValueError(f"batch: pad_info for column '{name}': the pad string must "
                                     f"not hold NUL characters, got {value!r}")
                self._pads.append((True, dims, 0.0, text))
                continue
            self._pads.append((True, dims, float(value or 0), ""))

    def _columns(self):
        return self._cols

    def _op(self, kids):
        return _E.batch_op(kids[0], self.batch_size, self.drop_remainder, self.per_batch_map,
                           BatchInfo, self._map_in, self._layout, self._pads, self._cols,
                           self._workers())

    def _size(self):
        n = self.children[0]._size()
        if n is None:
            return None
        return n // self.batch_size if self.drop_remainder else -(-n // self.batch_size)


class _Unary(Dataset):
    """A node with one child and the child's columns and size."""

    def __init__(self, child):
        super().__init__([child])

    def _columns(self):
        return self.children[0]._columns()

    def _size(self):
        return self.children[0]._size()


def _check_count(owner, value, lo):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise ValueError(f"{owner}: count must be an int >= {lo}, got {value!r}")
    return int(value)


class ShuffleDataset(_Unary):
    def __init__(self, child, buffer_size):
        super().__init__(child)
        if not isinstance(buffer_size, numbers.Integral) or buffer_size < 2:
            raise ValueError(f"shuffle: buffer_size must be an int >= 2, got {buffer_size!r}")
        self.buffer_size = int(buffer_size)

    def _op(self, kids):
        return _E.shuffle_op(kids[0], self.buffer_size)


class RepeatDataset(_Unary):
    def __init__(self, child, count):
        super().__init__(child)
        if count != -1:
            _check_count("repeat", count, 1)
        self.count = int(count)

    def _op(self, kids):
        return _E.repeat_op(kids[0], self.count)

    def _size(self):
        n = self.children[0]._size()
        return n if n is None or self.count == -1 else n * self.count  # -1: size of one pass


class TakeDataset(_Unary):
    def __init__(self, child, count):
        super().__init__(child)
        if count != -1:
            _check_count("take", count, 0)
        self.count = int(count)

    def _op(self, kids):
        return _E.take_op(kids[0], self.count)

    def _size(self):
        n = self.children[0]._size()
        return n if n is None or self.count < 0 else min(n, self.count)


class SkipDataset(_Unary):
    def __init__(self, child, count):
        super().__init__(child)
        self.count = _check_count("skip", count, 0)

    def _op(self, kids):
        return _E.skip_op(kids[0], self.count)

    def _size(self):
        n = self.children[0]._size()
        return None if n is None else max(0, n - self.count)


class ProjectDataset(_Unary):
    def __init__(self, child, columns):
        super().__init__(child)
        cols = _as_list("project", "columns", columns)
        if not cols:
            raise ValueError("project: columns must not be empty")
        have = child.get_col_names()
        _check_exist("project", "columns", cols, have)
        self.columns, self._idx = cols, [have.index(c) for c in cols]

    def _columns(self):
        return list(self.columns)

    def _op(self, kids):
        return _E.project_op(kids[0], self._idx)


class RenameDataset(_Unary):
    def __init__(self, child, input_columns, output_columns):
        super().__init__(child)
        ins = _as_list("rename", "input_columns", input_columns)
        outs = _as_list("rename", "output_columns", output_columns)
        if not ins or len(ins) != len(outs or []):
            raise ValueError(f"rename: input_columns {ins} and output_columns {outs} must have "
                             "the same, nonzero length")
        have = child.get_col_names()
        _check_exist("rename", "input_columns", ins, have)
        mapping = dict(builtins.zip(ins, outs))
        new = [mapping.get(c, c) for c in have]
        if len(set(new)) != len(new):
            raise ValueError(f"rename: the new names {new} are not unique")
        self._cols = new

    def _columns(self):
        return self._cols

    def _op(self, kids):
        return kids[0]  # names live in Python: nothing to do at run time


class ZipDataset(Dataset):
    def __init__(self, datasets):
        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError("zip: datasets must be a non-empty tuple of Dataset")
        super().__init__(datasets)
        cols = []
        for d in datasets:
            for c in d.get_col_names():
                if c in cols:
                    raise ValueError(f"zip: column name '{c}' appears in more than one dataset; "
                                     "rename it first")
                cols.append(c)
        self._cols = cols

    def _columns(self):
        return self._cols

    def _op(self, kids):
        return _E.zip_op(kids)

    def _size(self):
        sizes = [d._size() for d in self.children]
        return None if None in sizes else min(sizes)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError("concat: datasets must be a non-empty list of Dataset")
        super().__init__(datasets)
        cols = datasets[0].get_col_names()
        for d in datasets[1:]:
            if d.get_col_names() != cols:
                raise ValueError(f"concat: column names differ: {cols} vs {d.get_col_names()}")
        self._cols = cols

    def _columns(self):
        return self._cols

    def _op(self, kids):
        return _E.concat_op(kids)

    def _size(self):
        sizes = [d._size() for d in self.children]
        return None if None in sizes else builtins.sum(sizes)


def zip(datasets):  # noqa: A001  MindSpore's mindspore.dataset.zip
    """Zips a tuple of datasets column-wise."""
    return ZipDataset(datasets)


def _walk(root):
    """Every node of the dataset tree under root."""
    stack, out = [root], []
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(getattr(node, "children", []))
    return out


class _Iterator:
    """Runs a pipeline; each for-loop over the iterator consumes one epoch."""

    def __init__(self, dataset, columns, num_epochs, output_numpy, on_consumer=False):
        if not isinstance(num_epochs, numbers.Integral) or (num_epochs < 1 and num_epochs != -1):
            raise ValueError(f"iterator: num_epochs must be -1 or >= 1, got {num_epochs!r}")
        self._pipe = None
        # sync_wait points in the tree: stop() releases them first, so that a pipeline stopped
        # while one blocks can join its threads.
        self._sync_points = [n for n in _walk(dataset) if hasattr(n, "_abort")]
        names = dataset.get_col_names()
        root = dataset._build()
        cols = _as_list("iterator", "columns", columns)
        if cols is None and any(n.startswith("_meta-") for n in names):
            # extra_metadata's '_meta-' columns stay hidden until a rename drops the prefix (MindSpore)
            cols = [n for n in names if not n.startswith("_meta-")]
        if cols is not None:
            _check_exist("iterator", "columns", cols, names)
            root = _E.project_op(root, [names.index(c) for c in cols])
            names = cols
        self._names, self._numpy = names, bool(output_numpy)
        self._epochs_left = int(num_epochs)
        self._pipe = _E.Pipeline(root, int(num_epochs), config.get_seed(), config.get_prefetch_size(),
                                 on_consumer)

    def __iter__(self):
        return self

    def __next__(self):
        if self._pipe is None:
            raise StopIteration
        try:
            row = self._pipe.next(self._numpy)
        except StopIteration:
            self.stop()
            raise
        if row is None:  # end of an epoch
            if self._epochs_left > 0:
                self._epochs_left -= 1
                if self._epochs_left == 0:
                    self.stop()
            raise StopIteration
        if not self._numpy:  # string columns as MindSpore hands them over: Tensors of dtype String
            row = string_tensor_row(row)
        return self._convert(row)

    def stop(self):
        """Stops and joins every pipeline thread (also done on garbage collection)."""
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            for node in getattr(self, "_sync_points", ()):
                node._abort()
            pipe.stop()

    def __del__(self):
        self.stop()

    def get_col_names(self):
        return list(self._names)


class TupleIterator(_Iterator):
    def _convert(self, row):
        return row


class DictIterator(_Iterator):
    def _convert(self, row):
        return dict(builtins.zip(self._names, row))
