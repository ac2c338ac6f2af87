"""Generic transforms: TypeCast, OneHot, Compose, RandomApply, RandomChoice.

Every transform here and in mycel.dataset.vision is a thin handle on a C++ transform registered by
name (src/mycel/data/vision/). It runs inside `dataset.map(operations=[...])` in the engine's
worker threads, or eagerly when called on numpy arrays / Tensors: `vision.Resize(32)(img)`.
Eager calls of random transforms draw from the stream of (mycel.get_seed() or 0, call number).
"""
import enum
import itertools

import numpy as np

from mycel import _mycel

__all__ = ["TensorOperation", "TypeCast", "OneHot", "Compose", "RandomApply", "RandomChoice", "Slice",
           "Concatenate", "Mask", "PadEnd", "Relational"]

_eager_calls = itertools.count()


def _to_handle(op, owner="transforms"):
    """The C++ transform behind a transform object, a C++ transform, or a Python callable."""
    if hasattr(op, "_handle"):
        return op._handle
    if isinstance(op, _mycel.data.Transform):
        return op
    if callable(op):
        return _mycel.data.py_transform(op)
    raise TypeError(f"{owner}: expected a transform or a Python callable, got {type(op).__name__}")


def _to_handles(ops, owner):
    if not isinstance(ops, (list, tuple)):
        raise TypeError(f"{owner}: transforms must be a list of transforms, got {type(ops).__name__}")
    if not ops:
        raise ValueError(f"{owner}: transforms must not be empty")
    return [_to_handle(op, owner) for op in ops]


def _enum_value(v):
    return v.value if hasattr(v, "value") else v


def _to_tensor(x):
    if isinstance(x, _mycel.Tensor):
        return x
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _mycel.Tensor(np.frombuffer(x, dtype=np.uint8).copy())
    a = np.asarray(x)
    if a.dtype.kind in "US":  # a string column value (src/mycel/data/string_tensor.h)
        return _mycel.data.to_row_value(a)
    return _mycel.Tensor(np.require(a, requirements="C"))


class TensorOperation:
    """Base of the transforms: builds the C++ transform and applies it eagerly when called."""

    def _build(self, name=None, children=(), **params):
        self._name = name or type(self).__name__
        self._params = params
        self._handle = _mycel.data.make_transform(self._name, children=list(children), **params)

    @property
    def is_random(self):
        """Whether the transform draws random numbers."""
        return self._handle.is_random

    def __call__(self, *inputs):
        if not inputs:
            raise TypeError(f"{self._name}: expected at least one input")
        as_tensor = any(isinstance(x, _mycel.Tensor) for x in inputs)
        from mycel.common.seed import get_seed
        seed = get_seed() or 0
        outs = self._handle.apply([_to_tensor(x) for x in inputs], seed, next(_eager_calls))
        outs = tuple(o if as_tensor or isinstance(o, np.ndarray) else o.asnumpy() for o in outs)
        return outs[0] if len(outs) == 1 else outs

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"


class TypeCast(TensorOperation):
    """Casts a column to `data_type` (a mycel dtype, numpy dtype or name)."""

    def __init__(self, data_type):
        if not isinstance(data_type, _mycel.dtype):
            import mycel
            try:
                data_type = getattr(mycel, np.dtype(data_type).name.replace("bool", "bool_"))
            except (TypeError, AttributeError):
                raise TypeError(f"TypeCast: unsupported data_type {data_type!r}") from None
        self._build(data_type=data_type)


class OneHot(TensorOperation):
    """Integer label(s) -> one-hot vector(s) of length num_classes (optionally label-smoothed)."""

    def __init__(self, num_classes, smoothing_rate=0.0):
        self._build(num_classes=num_classes, smoothing_rate=float(smoothing_rate))


class Compose(TensorOperation):
    """Applies the transforms in order (Python callables allowed)."""

    def __init__(self, transforms):
        self.transforms = list(transforms) if isinstance(transforms, (list, tuple)) else transforms
        self._build(children=_to_handles(transforms, "Compose"))


class RandomApply(TensorOperation):
    """Applies all the transforms, in order, with probability prob (else passes the row through)."""

    def __init__(self, transforms, prob=0.5):
        self.transforms = transforms
        self._build(children=_to_handles(transforms, "RandomApply"), prob=float(prob))


class RandomChoice(TensorOperation):
    """Applies one of the transforms, chosen uniformly per row."""

    def __init__(self, transforms):
        self.transforms = transforms
        self._build(children=_to_handles(transforms, "RandomChoice"))


_NONE = -(2 ** 63)  # an omitted slice bound, as the C++ transform reads it


def _slice_spec(item):
    """The C++ spec of one dimension's selection (see src/mycel/data/vision/sequence.cc)."""
    if item is None or item is Ellipsis:
        return [0]
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"Slice: a bool is not an index, got {item!r}")
    if isinstance(item, (int, np.integer)):
        return [1, int(item)]
    if isinstance(item, slice):
        return [2] + [_NONE if v is None else int(v) for v in (item.start, item.stop, item.step)]
    if isinstance(item, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in item):
        return [3, len(item)] + [int(v) for v in item]
    raise TypeError(f"Slice: each selection must be an int, a list of ints, a slice, None or "
                    f"Ellipsis, got {item!r}")


class Slice(TensorOperation):
    """Selects along the leading dimensions, one selection per dimension (an int keeps that one
    index, a list picks indices, a slice, None or Ellipsis keeps all), as MindSpore's Slice."""

    def __init__(self, *slices):
        spec = []
        for item in slices:
            spec += _slice_spec(item)
        self.slices = slices
        self._build(spec=spec, dims=len(slices))


class Concatenate(TensorOperation):
    """A 1-d column with `prepend` before and `append` after it (1-d arrays: numbers for a
    numeric column, strings for a string column)."""

    def __init__(self, axis=0, prepend=None, append=None):
        arrays = {name: None if a is None else np.asarray(a)
                  for name, a in (("prepend", prepend), ("append", append))}
        strings = any(a is not None and a.dtype.kind in "US" for a in arrays.values())
        params = {}
        for name, a in arrays.items():
            if a is None:
                continue
            if a.ndim != 1 or a.dtype.kind not in ("US" if strings else "biuf"):
                want = "a 1-d string array" if strings else "a 1-d numeric array"
                raise TypeError(f"Concatenate: {name} must be {want} (as the other), got {a.dtype} "
                                f"of shape {a.shape}")
            if strings:
                params[name + "_strs"] = [v.decode("utf-8") if isinstance(v, bytes) else str(v)
                                          for v in a.tolist()]
            else:
                params[name] = [float(v) for v in a]
        self._build(axis=int(axis), strings=strings, **params)


class Relational(enum.Enum):
    """Comparisons for Mask."""
    EQ = "EQ"
    NE = "NE"
    GT = "GT"
    GE = "GE"
    LT = "LT"
    LE = "LE"


class Mask(TensorOperation):
    """`column <operator> constant` elementwise, as `dtype` (bool by default); a str constant
    compares a string column (code point order)."""

    def __init__(self, operator, constant, dtype=None):
        if not isinstance(operator, Relational):
            raise TypeError(f"Mask: operator must be a Relational, got {operator!r}")
        import mycel
        if isinstance(constant, (str, np.str_)):  # compares a string column
            self._build(operator=operator.value, constant_str=str(constant), dtype=dtype or mycel.bool_)
            return
        if not isinstance(constant, (int, float, np.number)) or isinstance(constant, bool):
            raise TypeError(f"Mask: constant must be a number or a str, got {constant!r}")
        self._build(operator=operator.value, constant=float(constant), dtype=dtype or mycel.bool_)


def _pad_end_strings(a, pad_shape, pad_value):
    a = np.asarray(a)
    if a.dtype.kind not in "US":
        raise TypeError(f"PadEnd: a str pad_value needs a string column, got dtype {a.dtype}")
    if a.ndim != len(pad_shape):
        raise ValueError(f"PadEnd: pad_shape {pad_shape} has rank {len(pad_shape)} but the input "
                         f"has shape {a.shape}")
    a = a.astype(str)
    cut = a[tuple(slice(0, d) for d in pad_shape)]
    out = np.full(pad_shape, pad_value, dtype=np.result_type(a.dtype, np.array(pad_value).dtype))
    out[tuple(slice(0, d) for d in cut.shape)] = cut
    return out


class PadEnd(TensorOperation):
    """Pads each dimension at its end to pad_shape with pad_value (a larger row is cut). A str
    pad_value pads a string column (in Python; numbers run in C++)."""

    def __init__(self, pad_shape, pad_value=None):
        pad_shape = [int(d) for d in pad_shape]
        if isinstance(pad_value, str):
            self._name, self._params = "PadEnd", {"pad_shape": pad_shape, "pad_value": pad_value}

            def pad_end(a):
                return _pad_end_strings(a, pad_shape, pad_value)
            pad_end.__name__ = "PadEnd"
            self._handle = _mycel.data.py_transform(pad_end)
            return
        if pad_value is not None and not isinstance(pad_value, (int, float, np.number)):
            raise TypeError(f"PadEnd: pad_value must be a number or a str, got {pad_value!r}")
        self._build(pad_shape=pad_shape, pad_value=0.0 if pad_value is None else float(pad_value))
