"""Issue 14 (compat19): more of MindSpore's 1.9 primitive list. Checks and small array ops
(SameTypeShape, CheckBprop, IsInstance, IsSubClass, AccumulateNV2, ParallelConcat,
SparseGatherV2, DataFormatDimMap, Renorm, FloatStatus, Partial, InsertGradientOf, HookBackward,
NoRepeatNGram), RandomChoiceWithMask (ops.choice_with_mask), RandomCategorical and Dense (MindSpore's call
forms), and ComputeAccidentalHits and EditDistance (their results depend on the data: eager)."""
import functools

import numpy as np

from mycel import _mycel
from mycel.common.dtype import (bfloat16, bool_, float16, float32, float64, get_py_obj_dtype, int16,
                                 int32, int64)
from mycel.common.tensor import Tensor
from mycel.ops.function_more.array_methods import renorm
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


class SameTypeShape(_Composite):
    """x, after checking that y has x's dtype (TypeError) and shape (ValueError)."""

    def _call(self, input_x, input_y):
        if input_x.dtype != input_y.dtype:
            raise TypeError(f"SameTypeShape: 'input_y' dtype {input_y.dtype} differs from 'input_x' "
                            f"dtype {input_x.dtype}")
        if tuple(input_x.shape) != tuple(input_y.shape):
            raise ValueError(f"SameTypeShape: 'input_y' shape {tuple(input_y.shape)} differs from 'input_x' "
                             f"shape {tuple(input_x.shape)}")
        return input_x


class CheckBprop(_Composite):
    """input_x (the gradients a user bprop returned), after checking them against input_y (the
    arguments): the same count, and each gradient with its argument's shape and dtype."""

    def __init__(self, prim_to_check=""):
        super().__init__(prim_to_check=prim_to_check)

    def _call(self, input_x, input_y):
        who = f"CheckBprop: user defined method 'bprop'{' of ' + self.prim_to_check if self.prim_to_check else ''}"
        if not isinstance(input_x, tuple) or not isinstance(input_y, tuple):
            raise TypeError(f"{who}: the gradients and the arguments must be tuples, got "
                            f"{type(input_x).__name__} and {type(input_y).__name__}")
        if len(input_x) != len(input_y):
            raise ValueError(f"{who}: returned {len(input_x)} gradients for {len(input_y)} arguments")
        for i, (g, a) in enumerate(zip(input_x, input_y)):
            if isinstance(g, Tensor) and isinstance(a, Tensor):
                if tuple(g.shape) != tuple(a.shape):
                    raise ValueError(f"{who}: gradient {i} has shape {tuple(g.shape)}, its argument {tuple(a.shape)}")
                if g.dtype != a.dtype:
                    raise TypeError(f"{who}: gradient {i} has dtype {g.dtype}, its argument {a.dtype}")
        return input_x


def _is_type(t):
    return isinstance(t, type) or type(t).__name__ == "dtype"


class IsSubClass(_Composite):
    """Whether sub_type is type_ (Mycel's dtypes have no hierarchy: int_ is int64) or, for
    Python classes, a subclass of it."""

    def _call(self, sub_type, type_):
        if not _is_type(sub_type) or not _is_type(type_):
            raise TypeError(f"IsSubClass: both arguments must be types, got {sub_type!r} and {type_!r}")
        if isinstance(sub_type, type) and isinstance(type_, type):
            return issubclass(sub_type, type_)
        return sub_type == type_


class IsInstance(_Composite):
    """Whether inst is of type_: a Python class (list, tuple, Tensor, ...) by isinstance, a dtype
    by the dtype of a Python scalar (1 is int64, 1.0 float64, as MindSpore types them)."""

    def _call(self, inst, type_):
        if not _is_type(type_):
            raise TypeError(f"IsInstance: argument 'type_' must be a type, got {type_!r}")
        if isinstance(type_, type):
            return isinstance(inst, type_)
        if isinstance(inst, (bool, int, float)):
            return get_py_obj_dtype(inst) == type_
        return False


class AccumulateNV2(_Composite):
    """The elementwise sum of a tuple or list of same-shaped tensors (AddN)."""

    def __call__(self, inputs):  # eager: check the container (graph mode sees a tuple)
        if not isinstance(inputs, (tuple, list)) or not inputs:
            raise TypeError("AccumulateNV2: 'inputs' must be a non-empty tuple or list of tensors")
        return self._call(inputs)

    def _call(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


@constexpr
def _check_parallel_concat(shapes, dtypes):
    for s in shapes:
        if len(s) < 1 or s[0] != 1:
            raise ValueError(f"ParallelConcat: every input must have rank >= 1 and first dim 1, "
                             f"got shapes {list(shapes)}")
        if tuple(s) != tuple(shapes[0]):
            raise ValueError(f"ParallelConcat: the inputs must have one shape, got {list(shapes)}")
    if any(d != dtypes[0] for d in dtypes):
        raise TypeError(f"ParallelConcat: the inputs must have one dtype, got {list(dtypes)}")
    return True


class ParallelConcat(_Composite):
    """Concat along dim 0 of tensors whose first dim is 1 (one shape, one dtype)."""

    def _call(self, values):
        shapes, dtypes = (), ()
        for v in values:  # loops: graph mode parses this
            shapes += (v.shape,)
            dtypes += (v.dtype,)
        _check_parallel_concat(shapes, dtypes)
        return _ops.concat(values, 0)


class SparseGatherV2(_Composite):
    """Gather(input_params, input_indices, axis): the slices of input_params along axis."""

    def _call(self, input_params, input_indices, axis):
        return _ops.gather(input_params, input_indices, axis)


@constexpr
def _dim_map(src, dst):
    """The table of DataFormatDimMap for the indices -4..3 (offset by 4)."""
    return tuple(src.index(dst[i % 4]) for i in range(-4, 4))


class DataFormatDimMap(_Composite):
    """x (indices in [-4, 4)) -> src_format.index(dst_format[x]) (formats 'NHWC' or 'NCHW'): what
    MindSpore's CPU kernel computes (NHWC -> NCHW maps 1 to 3), the inverse permutation of
    TensorFlow's op of the same name."""

    def __init__(self, src_format="NHWC", dst_format="NCHW"):
        for name, v in (("src_format", src_format), ("dst_format", dst_format)):
            if v not in ("NHWC", "NCHW"):
                raise ValueError(f"DataFormatDimMap: argument '{name}' must be 'NHWC' or 'NCHW', got {v!r}")
        super().__init__(src_format=src_format, dst_format=dst_format)

    def _call(self, input_x):
        table = Tensor(np.array(_dim_map(self.src_format, self.dst_format), np.int64))
        y = _ops.gather(table, _ops.cast(input_x, int64) + 4, 0)
        return _ops.cast(y, input_x.dtype)


class Renorm(_Composite):
    """ops.renorm(x, p, dim, maxnorm) as a primitive: each sub-tensor along dim scaled down to
    p-norm maxnorm when its norm exceeds it."""

    def __init__(self, p, dim, maxnorm):
        super().__init__(p=p, dim=dim, maxnorm=maxnorm)

    def _call(self, input_x):
        return renorm(input_x, self.p, self.dim, self.maxnorm)


class FloatStatus(_Composite):
    """[1.0] when x holds a NaN or an infinity, else [0.0] (float32, shape (1,))."""

    def _call(self, x):
        bad = _ops.logical_not(_ops.all(_ops.isfinite(x)))
        return _ops.reshape(_ops.cast(bad, float32), (1,))


class Partial(_Composite):
    """Partial()(fn, *args): fn with its first arguments bound (functools.partial)."""

    def _call(self, *args):
        if not args or not callable(args[0]):
            raise TypeError("Partial: the first argument must be a function")
        return functools.partial(args[0], *args[1:])


@constexpr
def _check_output_size(count, rank):
    if count * rank > 2 ** 31 - 1:
        raise RuntimeError(f"RandomChoiceWithMask: the index output (count {count} x rank {rank}) "
                           f"exceeds INT_MAX elements")
    return True


class _GradientOf:
    """Builds the Cell behind InsertGradientOf on first use (nn imports the ops package)."""

    @staticmethod
    def cell(fn):
        from mycel.nn.cell import Cell

        class InsertedGradient(Cell):
            """x forward; fn(dout) as x's gradient (a Cell's own bprop replaces autodiff)."""

            def __init__(self):
                super().__init__()
                self.fn = fn

            def construct(self, x):
                return x

            def bprop(self, x, out, dout):
                return (self.fn(dout),)
        return InsertedGradient()


class InsertGradientOf(_Composite):
    """x unchanged forward; in the backward, x's gradient is f(gradient) (gradient clipping,
    scaling). f is parsed like construct code, in both modes."""

    def __init__(self, f):
        if not callable(f):
            raise TypeError(f"InsertGradientOf: argument 'f' must be callable, got {type(f).__name__}")
        super().__init__()
        self.f = f
        self._cell = _GradientOf.cell(f)

    def _call(self, input_x):
        return self._cell(input_x)


class HookBackward(_Composite):
    """x unchanged forward; in the backward hook_fn((gradient,)) runs in Python when the
    gradient is computed (a "pyfunc" Custom op, so from compiled code too), and a value it
    returns (a tensor or a one-tuple) replaces the gradient. One tensor input."""

    def __init__(self, hook_fn, cell_id=""):
        if not callable(hook_fn):
            raise TypeError(f"HookBackward: argument 'hook_fn' must be callable, got {type(hook_fn).__name__}")
        super().__init__(cell_id=cell_id)
        from mycel.ops import Custom

        def run_hook(dout):
            got = hook_fn((Tensor(dout),))
            if got is None:
                return dout
            got = got[0] if isinstance(got, (tuple, list)) else got
            return np.asarray(got.asnumpy() if isinstance(got, Tensor) else got, dout.dtype).reshape(dout.shape)
        self._cell = _GradientOf.cell(Custom(run_hook, lambda s: s, lambda d: d, func_type="pyfunc"))

    def _call(self, input_x):
        return self._cell(input_x)


class RandomChoiceWithMask(_Composite):
    """count random positions of the True elements of a bool tensor: (index, int32 (count, rank),
    one position per row; mask, bool (count,)). With fewer True elements than count, the rows
    after them are zeros with mask False."""

    def __init__(self, count=256, seed=0, seed2=0):
        for name, v in (("count", count), ("seed", seed), ("seed2", seed2)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"RandomChoiceWithMask: argument '{name}' must be an int, got {v!r}")
        if count < 1:
            raise ValueError(f"RandomChoiceWithMask: argument 'count' must be >= 1, got {count}")
        super().__init__(count=count, seed=seed, seed2=seed2)
        self._seed, self._seed2 = seed & 0x7FFFFFFF, seed2 & 0x7FFFFFFF  # the sampler's seeds are >= 0

    def _call(self, input_x):
        if input_x.dtype != bool_ or not 1 <= input_x.ndim <= 5:
            raise TypeError(f"RandomChoiceWithMask: 'input_x' must be a bool tensor of rank 1 to 5, "
                            f"got {input_x.dtype} of rank {input_x.ndim}")
        n, k, shape = input_x.size, self.count, tuple(input_x.shape)
        _check_output_size(k, input_x.ndim)
        # Random keys for the True positions (False ones get -1), the largest k win.
        keys = _ops.select(_ops.reshape(input_x, (-1,)),
                           _ops.uniform((n,), 0.0, 1.0, self._seed, float32, self._seed2),
                           _ops.fill(float32, (n,), -1.0))
        if k > n:
            keys = _ops.concat((keys, _ops.fill(float32, (k - n,), -1.0)), 0)
        top, flat = _ops.top_k(keys, k)
        mask = _ops.greater_equal(top, 0.0)
        flat = _ops.select(mask, _ops.cast(flat, int64), _ops.zeros((k,), int64))
        coords, rest = (), flat
        for d in shape[::-1]:  # row-major: the last dim varies fastest
            coords = (_ops.mod(rest, d),) + coords
            rest = _ops.floor_div(rest, d)
        index = _ops.stack(coords, 1)
        return _ops.cast(index, int32), mask


def choice_with_mask(input_x, count=256, seed=0, seed2=0):
    """RandomChoiceWithMask(count, seed, seed2)(input_x)."""
    return RandomChoiceWithMask(count, seed, seed2)(input_x)


class NoRepeatNGram(_Composite):
    """Beam-search's n-gram block: for each sequence of state_seq (..., L), every earlier place
    where its last ngram_size - 1 tokens occur bans the token that followed them there, whose
    log_probs (..., vocab) entry becomes -FLT_MAX. Sequences shorter than ngram_size change
    nothing."""

    def __init__(self, ngram_size=1):
        if isinstance(ngram_size, bool) or not isinstance(ngram_size, int) or ngram_size < 1:
            raise ValueError(f"NoRepeatNGram: argument 'ngram_size' must be an int >= 1, got {ngram_size!r}")
        super().__init__(ngram_size=ngram_size)

    def _call(self, state_seq, log_probs):
        n, length, vocab = self.ngram_size, state_seq.shape[-1], log_probs.shape[-1]
        if length < n:
            return log_probs
        places = length - n + 1  # windows s[i : i + n - 1] that have a next token s[i + n - 1]
        zeros, whole = (0,) * (state_seq.ndim - 1), (-1,) * (state_seq.ndim - 1)
        match = _ops.ones(tuple(state_seq.shape[:-1]) + (places,), bool_)
        for k in range(n - 1):
            window_k = _ops.slice(state_seq, zeros + (k,), whole + (places,))
            tail_k = _ops.slice(state_seq, zeros + (length - n + 1 + k,), whole + (1,))
            match = _ops.logical_and(match, _ops.equal(window_k, tail_k))
        following = _ops.slice(state_seq, zeros + (n - 1,), whole + (places,))
        tokens = Tensor(np.arange(vocab, dtype=np.int64))
        hit = _ops.equal(_ops.expand_dims(_ops.cast(following, int64), -1), tokens)  # (..., places, vocab)
        banned = _ops.any(_ops.logical_and(hit, _ops.expand_dims(match, -1)), (state_seq.ndim - 1,))
        return _ops.select(banned, _ops.fill(log_probs.dtype, tuple(log_probs.shape), float(np.finfo(np.float32).min)),
                           log_probs)


def _levenshtein(a, b):
    """Edits (insert, delete, substitute) turning sequence a into b (two rows of the table)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


class EditDistance(_Composite):
    """Levenshtein distances between the sequences of two sparse tensors (indices (N, R), values,
    dense shape (R,)): one per position of the first R - 1 dims (the larger of the two shapes),
    the values in input order; normalize divides by the truth's length (an empty truth gives
    inf, or 0 when the hypothesis is empty too). float32; eager (it reads the indices)."""

    def __init__(self, normalize=True):
        if not isinstance(normalize, bool):
            raise TypeError(f"EditDistance: argument 'normalize' must be a bool, got {type(normalize).__name__}")
        super().__init__(normalize=normalize)

    def _call(self, hypothesis_indices, hypothesis_values, hypothesis_shape, truth_indices, truth_values,
              truth_shape):
        hi, hv, hs = (t.asnumpy() for t in (hypothesis_indices, hypothesis_values, hypothesis_shape))
        ti, tv, ts = (t.asnumpy() for t in (truth_indices, truth_values, truth_shape))
        if hi.ndim != 2 or ti.ndim != 2 or hi.shape[1] != len(hs) or ti.shape[1] != len(ts) or len(hs) != len(ts) \
                or len(hv) != len(hi) or len(tv) != len(ti) or len(hs) < 2:
            raise ValueError(f"EditDistance: indices must be (N, R) with R = len(shape) >= 2 for both tensors "
                             f"and one value per index row, got hypothesis {hi.shape}, {hv.shape}, {hs.shape} "
                             f"and truth {ti.shape}, {tv.shape}, {ts.shape}")
        out_shape = tuple(int(d) for d in np.maximum(hs, ts)[:-1])
        seqs = {"hypothesis": ({}, hi, hv), "truth": ({}, ti, tv)}
        for name, (table, idx, vals) in seqs.items():
            for row, v in zip(idx, vals):
                pos = tuple(int(k) for k in row[:-1])
                if any(not 0 <= k < d for k, d in zip(pos, out_shape)):
                    raise ValueError(f"EditDistance: {name} index {tuple(row)} is outside the output shape {out_shape}")
                table.setdefault(pos, []).append(v)
        out = np.zeros(out_shape, np.float32)
        for pos in np.ndindex(*out_shape):
            h, t = seqs["hypothesis"][0].get(pos, []), seqs["truth"][0].get(pos, [])
            if self.normalize and not t:
                out[pos] = np.inf if h else 0.0
                continue
            d = _levenshtein(t, h)
            out[pos] = d / len(t) if self.normalize else d
        return Tensor(out)


class ComputeAccidentalHits(_Composite):
    """Where the sampled candidates hit a true class: for each row i of true_classes and each of
    its num_true labels, every position j of sampled_candidates equal to it gives (i, j) with
    weight -FLT_MAX (to add to the logits). Returns (indices int32, ids int64, weights float32)."""

    def __init__(self, num_true=1):
        if isinstance(num_true, bool) or not isinstance(num_true, int) or num_true < 1:
            raise ValueError(f"ComputeAccidentalHits: argument 'num_true' must be an int >= 1, got {num_true!r}")
        super().__init__(num_true=num_true)

    def _call(self, true_classes, sampled_candidates):
        t, s = true_classes.asnumpy(), sampled_candidates.asnumpy()
        if t.ndim != 2 or t.shape[1] != self.num_true or s.ndim != 1:
            raise ValueError(f"ComputeAccidentalHits: 'true_classes' must have shape (batch, {self.num_true}) "
                             f"and 'sampled_candidates' be 1-d, got {t.shape} and {s.shape}")
        rows, ids = [], []
        for i in range(t.shape[0]):
            for label in t[i]:
                hit = np.flatnonzero(s == label)
                rows.extend([i] * len(hit))
                ids.extend(hit.tolist())
        weights = np.full(len(rows), np.finfo(np.float32).min, np.float32)
        return (Tensor(np.array(rows, np.int32)), Tensor(np.array(ids, np.int64)), Tensor(weights))


class Dense(_Composite):
    """MindSpore's Dense primitive: x (..., in) @ w.T + b with w (out, in), or w (in,) for one
    output (x's leading shape, b then 0-d); every numeric dtype. Floats run the registry op dense
    (oneDNN; a 1-d w as one row), the rest a matmul or a product sum."""

    def _call(self, x, w, b=None):
        if x.dtype not in (float16, float32, float64, bfloat16):
            out = _ops.sum(x * w, (-1,)) if w.ndim == 1 else _ops.matmul(x, _ops.transpose(w, (1, 0)))
            return out if b is None else out + b
        if w.ndim != 1:
            return _ops.dense(x, w, b)
        y = _ops.dense(x, _ops.reshape(w, (1, -1)), None if b is None else _ops.reshape(b, (1,)))
        return _ops.squeeze(y, (-1,))


class RandomCategorical(_Composite):
    """MindSpore's RandomCategorical(dtype)(logits, num_sample, seed): num_sample class indices
    per row of logits (the registry op random_categorical; a nonzero seed draws MindSpore's CPU
    samples, seed 0 the global generator)."""

    def __init__(self, dtype=int64):
        if dtype not in (int16, int32, int64):
            raise TypeError(f"RandomCategorical: 'dtype' must be int16, int32 or int64, got {dtype}")
        super().__init__(dtype=dtype)

    def _call(self, logits, num_sample, seed=0):
        return _ops.random_categorical(logits, num_sample=num_sample, dtype=self.dtype, seed=seed)


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
