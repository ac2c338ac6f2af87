"""MindSpore's Tensor methods about a tensor's storage and initialization: assign_value,
has_init, init_data, is_contiguous, set_const_arg (storage_offset is C++, bind_shape.cc).

Mycel fills a tensor when it is made (Tensor(shape=, dtype=, init=) and initializer() run the
initializer at once), and every tensor is dense row-major from its storage offset, so has_init
is False, init_data() hands back the tensor and is_contiguous() is True."""
from mycel import _mycel

# The class itself, not mycel.common.tensor (which imports this module): no import cycle.
Tensor = _mycel.Tensor


def _assign_value(self, value):
    """Makes this tensor hold `value` (shape and dtype included; storage shared, as MindSpore's
    assign_value does) and returns it."""
    if not isinstance(value, Tensor):
        value = Tensor(value)
    self._rebind(value)
    return self


def _has_init(self):
    """Whether the data still waits for its initializer: never here (see the module doc)."""
    return False


def _init_data(self, slice_index=None, shape=None, opt_shard_group=None):
    """The initialized tensor: this one, filled when it was made. A `shape` other than the
    tensor's own would ask for a slice of a lazily initialized parameter, which Mycel lacks."""
    del slice_index, opt_shard_group  # slices of lazily initialized parameters: none here
    if shape is not None and tuple(int(d) for d in shape) != tuple(self.shape):
        raise ValueError(f"Tensor.init_data: argument 'shape' must be the tensor's shape "
                         f"{tuple(self.shape)} (Mycel initializes tensors when they are made), "
                         f"got {tuple(shape)}")
    return self


def _is_contiguous(self):
    """True: a Mycel tensor is always dense row-major (transpose and friends copy)."""
    return True


def _set_const_arg(self, const_arg=True):
    """Marks the tensor as a constant argument of a compiled network and returns it. Mycel
    compiles a Tensor argument as a graph input either way (its value is read at each call),
    so the results are the same; the flag is kept in `const_arg`."""
    if not isinstance(const_arg, bool):
        raise TypeError(f"Tensor.set_const_arg: argument 'const_arg' must be a bool, "
                        f"got {type(const_arg).__name__}")
    self.const_arg = const_arg
    return self


def _install():
    Tensor.assign_value = _assign_value
    Tensor.has_init = property(_has_init)
    Tensor.init_data = _init_data
    Tensor.is_contiguous = _is_contiguous
    Tensor.set_const_arg = _set_const_arg
    Tensor.const_arg = False  # MindSpore's default; set_const_arg sets it per tensor


_install()
