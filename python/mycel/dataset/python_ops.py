"""Dataset.filter, Dataset.bucket_batch_by_length and Dataset.sync_wait. Each decides per row in
Python (a user predicate, a user length function, a barrier that sync_update releases), so they
run as a Python stream over their child's rows: a
GeneratorDataset whose source iterates the child pipeline once per epoch. The child keeps its own
C++ pipeline (workers, prefetch); these nodes read its output."""
import numpy as np

from mycel.dataset.engine import GeneratorDataset, _as_list, _check_exist


def _column_indices(owner, child, columns):
    cols = child.get_col_names()
    names = _as_list(owner, "input_columns", columns) or list(cols)
    _check_exist(owner, "input_columns", names, cols)
    return [cols.index(c) for c in names]


class FilterDataset(GeneratorDataset):
    """Rows of `child` for which predicate(*input columns) is true."""

    def __init__(self, child, predicate, input_columns=None, num_parallel_workers=None):
        if not callable(predicate):
            raise TypeError(f"filter: predicate must be callable, got {type(predicate).__name__}")
        idx = _column_indices("filter", child, input_columns)

        def rows():
            for row in child.create_tuple_iterator(num_epochs=1, output_numpy=True):
                keep = predicate(*[row[i] for i in idx])
                if np.asarray(keep).size != 1:
                    raise ValueError(f"filter: predicate must return one bool per row, got {keep!r}")
                if bool(np.asarray(keep)):
                    yield tuple(row)
        super().__init__(rows, column_names=child.get_col_names(),
                         num_parallel_workers=num_parallel_workers or 1)


def _pad_to(a, shape, value, column):
    a = np.asarray(a)
    if a.ndim != len(shape):
        raise ValueError(f"bucket_batch_by_length: pad_info['{column}'] has rank {len(shape)}, the "
                         f"column's rows have rank {a.ndim} (shape {a.shape})")
    if any(s < d for s, d in zip(shape, a.shape)):
        raise ValueError(f"bucket_batch_by_length: column '{column}' row of shape {a.shape} is larger "
                         f"than its pad shape {tuple(shape)}")
    dtype = a.dtype
    if a.dtype.kind in "US":  # a pad string wider than the column's strings widens the batch
        dtype = np.result_type(a.dtype, np.asarray(value).dtype)
    out = np.full(shape, value, dtype=dtype)
    out[tuple(slice(0, d) for d in a.shape)] = a
    return out


class BucketBatchByLengthDataset(GeneratorDataset):
    """Rows grouped by length into buckets (bucket i: boundaries[i-1] <= length < boundaries[i])
    and batched per bucket with that bucket's batch size, padding the pad_info columns."""

    def __init__(self, child, column_names, bucket_boundaries, bucket_batch_sizes,
                 element_length_function=None, pad_info=None, pad_to_bucket_boundary=False,
                 drop_remainder=False):
        who = "bucket_batch_by_length"
        idx = _column_indices(who, child, column_names)
        bounds = list(bucket_boundaries)
        sizes = list(bucket_batch_sizes)
        if not bounds or any(not isinstance(b, int) or b <= 0 for b in bounds) or bounds != sorted(set(bounds)):
            raise ValueError(f"{who}: bucket_boundaries must be positive, strictly increasing ints, got {bounds}")
        if len(sizes) != len(bounds) + 1 or any(not isinstance(s, int) or s <= 0 for s in sizes):
            raise ValueError(f"{who}: bucket_batch_sizes must be {len(bounds) + 1} positive ints "
                             f"(one more than the boundaries), got {sizes}")
        if element_length_function is None and len(idx) != 1:
            raise ValueError(f"{who}: without element_length_function, column_names must name one "
                             f"column (its first dimension is the length), got {column_names}")
        cols = child.get_col_names()
        pad_info = dict(pad_info or {})
        _check_exist(who, "pad_info", list(pad_info), cols)
        if pad_to_bucket_boundary and not pad_info:
            raise ValueError(f"{who}: pad_to_bucket_boundary needs pad_info naming the columns to pad")

        def length(row):
            if element_length_function is None:
                a = np.asarray(row[idx[0]])
                return a.shape[0] if a.ndim else 1
            return int(element_length_function(*[row[i] for i in idx]))

        def bucket_of(n):
            for i, b in enumerate(bounds):
                if n < b:
                    return i
            return len(bounds)

        def make_batch(rows, bucket):
            out = []
            for c, name in enumerate(cols):
                items = [np.asarray(r[c]) for r in rows]
                if name in pad_info:
                    shape, value = pad_info[name] if pad_info[name] is not None else (None, 0)
                    value = 0 if value is None else value
                    longest = [max(a.shape[d] for a in items) for d in range(items[0].ndim)]
                    given = [None] * len(longest) if shape is None else list(shape)
                    shape = [longest[d] if s is None else s for d, s in enumerate(given)]
                    if pad_to_bucket_boundary:
                        if bucket == len(bounds):
                            raise ValueError(f"{who}: pad_to_bucket_boundary: a row of length >= the "
                                             f"last boundary {bounds[-1]} has no boundary to pad to")
                        # MindSpore: every dimension pad_info leaves open (None) goes to the
                        # bucket's boundary - 1.
                        shape = [bounds[bucket] - 1 if g is None else s for g, s in zip(given, shape)]
                    items = [_pad_to(a, shape, value, name) for a in items]
                elif len({a.shape for a in items}) > 1:
                    raise ValueError(f"{who}: column '{name}' has rows of shapes {sorted({a.shape for a in items})} "
                                     "in one batch; name it in pad_info to pad them")
                out.append(np.stack(items))
            return tuple(out)

        def batches():
            pending = [[] for _ in sizes]
            for row in child.create_tuple_iterator(num_epochs=1, output_numpy=True):
                b = bucket_of(length(row))
                pending[b].append(row)
                if len(pending[b]) == sizes[b]:
                    yield make_batch(pending[b], b)
                    pending[b] = []
            if not drop_remainder:
                for b, rows in enumerate(pending):
                    if rows:
                        yield make_batch(rows, b)
        super().__init__(batches, column_names=cols)


class SyncWaitDataset(GeneratorDataset):
    """Dataset.sync_wait: passes its child's rows, but after num_batch batches (of the batch
    size of a batch right above it, else rows) blocks until Dataset.sync_update releases more,
    calling callback(data) there. The rows come through a Python stream (as filter's), so the
    blocking happens in the producing thread: the ops above see rows made after the update."""

    # Waits are sliced so that a pipeline torn down while blocked never hangs its thread.
    _SLICE_S = 0.05

    def __init__(self, child, condition_name, num_batch=1, callback=None):
        if not isinstance(condition_name, str):
            raise TypeError(f"sync_wait: condition_name must be a str, got {condition_name!r}")
        if not isinstance(num_batch, int) or isinstance(num_batch, bool) or num_batch < 1:
            raise ValueError(f"sync_wait: num_batch must be an int >= 1, got {num_batch!r}")
        if callback is not None and not callable(callback):
            raise TypeError("sync_wait: callback must be callable")
        import threading
        import weakref
        self.condition_name, self.num_batch, self.callback = condition_name, num_batch, callback
        self._batch_size = 1
        self._cond = threading.Condition()
        self._allowed = 0
        self._generation = 0  # bumped per epoch: a finished epoch's stream stops waiting
        me = weakref.ref(self)

        def rows():
            self_ = me()
            if self_ is None:
                return
            with self_._cond:
                self_._generation += 1
                gen = self_._generation
                self_._allowed = self_.num_batch * self_._batch_size
            cond = self_._cond
            del self_
            for row in child.create_tuple_iterator(num_epochs=1, output_numpy=True):
                while True:
                    s = me()
                    if s is None or s._generation != gen:
                        return
                    with cond:
                        if s._allowed > 0:
                            s._allowed -= 1
                            break
                        cond.wait(SyncWaitDataset._SLICE_S)
                    del s
                yield tuple(row)
        super().__init__(rows, column_names=child.get_col_names(), num_parallel_workers=1)

    def _set_batch_size(self, n):
        self._batch_size = int(n)
        with self._cond:
            self._allowed = self.num_batch * self._batch_size

    def _abort(self):
        """Ends the stream now running (its pipeline is stopping)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def _release(self, num_batch, data):
        if self.callback is not None:
            self.callback(data)
        with self._cond:
            self._allowed += (self.num_batch if num_batch is None else num_batch) * self._batch_size
            self._cond.notify_all()


def find_sync_wait(root, condition_name):
    """The SyncWaitDataset named condition_name in the tree under root, or None."""
    from mycel.dataset.engine import _walk
    return next((n for n in _walk(root) if isinstance(n, SyncWaitDataset)
                 and n.condition_name == condition_name), None)
