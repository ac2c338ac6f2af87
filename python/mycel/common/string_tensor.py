"""mycel.string (MindSpore's mstype.string) and StringTensor, a tensor of str or bytes elements:
what a dataset's string column holds (MindSpore hands them over as Tensors of dtype String).
Strings never reach a kernel, so the elements live in a numpy str (or bytes) array; the tensor
keeps MindSpore's printing and the tensor surface code reads off such a column (shape, dtype,
asnumpy, item, indexing, comparison)."""
import numpy as np

from mycel import _mycel


class StringDType:
    """The string dtype: str() is 'String' as MindSpore prints it, .name is 'string'."""

    name = "string"
    itemsize = 0  # variable-length elements

    def __repr__(self):
        return "String"

    __str__ = __repr__

    def __format__(self, spec):
        return format(self.name, spec)

    def __eq__(self, other):
        return isinstance(other, StringDType)

    def __hash__(self):
        return hash("mycel.string")

    def __reduce__(self):
        return "string"  # pickles as the module-level singleton


string = StringDType()


def _string_array(data, who):
    a = data.asnumpy() if isinstance(data, StringTensor) else np.asarray(data)
    if a.dtype.kind == "O":
        if not all(isinstance(x, (str, bytes)) for x in a.reshape(-1)):
            raise TypeError(f"{who}: elements must all be str or bytes")
        kinds = {type(x) for x in a.reshape(-1)}
        if len(kinds) > 1:
            raise TypeError(f"{who}: elements must be all str or all bytes, got both")
        a = a.astype(str if kinds == {str} or not kinds else bytes)
    if a.dtype.kind not in "US":
        raise TypeError(f"{who}: expects str or bytes elements, got numpy dtype {a.dtype}")
    return a


class StringTensor:
    """StringTensor(data): a tensor of dtype mycel.string over str (or bytes) elements, from a
    str, bytes, a (nested) list of them or a numpy str/bytes array."""

    def __init__(self, data):
        self._array = _string_array(data, "StringTensor")

    @property
    def dtype(self):
        return string

    @property
    def shape(self):
        return tuple(self._array.shape)

    @property
    def ndim(self):
        return self._array.ndim

    @property
    def size(self):
        return int(self._array.size)

    def asnumpy(self):
        """The elements as a numpy str (or bytes) array (a copy)."""
        return self._array.copy()

    def item(self):
        """The one element as a Python str (or bytes)."""
        if self._array.size != 1:
            raise ValueError(f"item(): only a tensor with one element can be converted, got shape {self.shape}")
        return self._array.reshape(()).item()

    def tolist(self):
        return self._array.tolist()

    def astype(self, dtype):
        """Itself for mycel.string; numbers parsed from the strings for a numeric dtype."""
        if dtype == string:
            return StringTensor(self._array)
        return _mycel.Tensor(self._array.astype(np.dtype(dtype.name)))

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return StringTensor(self._array.reshape(shape))

    def flatten(self):
        return StringTensor(self._array.reshape(-1))

    def __getitem__(self, index):
        return StringTensor(self._array[index])

    def __len__(self):
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other):
        other = other._array if isinstance(other, StringTensor) else other
        return _mycel.Tensor(np.asarray(self._array == other))

    def __ne__(self, other):
        other = other._array if isinstance(other, StringTensor) else other
        return _mycel.Tensor(np.asarray(self._array != other))

    __hash__ = None

    def __add__(self, other):
        """Elementwise concatenation (numpy.char.add) with a str or another StringTensor."""
        other = other._array if isinstance(other, StringTensor) else other
        return StringTensor(np.char.add(self._array, other))

    def __str__(self):
        return str(self._array) if self.ndim else str(self.item())

    def __repr__(self):
        value = repr(self.item()) if self.ndim == 0 else np.array2string(self._array, separator=", ")
        return f"Tensor(shape={list(self.shape)}, dtype=String, value= {value})"


def string_tensor_row(row):
    """A dataset row with its numpy str/bytes columns as StringTensors and the rest unchanged:
    what MindSpore's iterators hand over without output_numpy."""
    return [StringTensor(c) if isinstance(c, np.ndarray) and c.dtype.kind in "US" else c for c in row]


def string_eq(x, y):
    """x == y for two Python strings (MindSpore's F.string_eq; compile-time in graph mode)."""
    for v, n in ((x, "x"), (y, "y")):
        if not isinstance(v, str):
            raise TypeError(f"string_eq: {n} must be a str, got {type(v).__name__}")
    return x == y


def string_concat(x, y):
    """x + y for two Python strings (MindSpore's F.string_concat)."""
    for v, n in ((x, "x"), (y, "y")):
        if not isinstance(v, str):
            raise TypeError(f"string_concat: {n} must be a str, got {type(v).__name__}")
    return x + y
