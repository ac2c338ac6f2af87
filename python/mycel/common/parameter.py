"""Parameter: a Tensor that a Cell owns and an optimizer updates (MindSpore's mindspore.Parameter)."""
import numpy as np

from mycel.common.tensor import Tensor


class Parameter(Tensor):
    """A named, trainable Tensor with its own storage: a Tensor `default_input` is copied, as
    MindSpore does for a tensor referenced elsewhere, so that in-place updates of the Parameter
    (an optimizer step, P.ScatterNdAdd, ops.assign) leave the tensor it was made from alone."""

    def __init__(self, default_input, name=None, requires_grad=True, layerwise_parallel=False,
                 parallel_optimizer=True):
        if isinstance(default_input, (int, float, bool)):
            default_input = np.array(default_input, dtype=np.float32 if isinstance(default_input, float)
                                     else None)
        elif isinstance(default_input, Tensor):
            default_input = default_input.copy()
        Tensor.__init__(self, default_input)
        self.name = name
        self.requires_grad = requires_grad
        self.layerwise_parallel = layerwise_parallel
        self.parallel_optimizer = parallel_optimizer

    def __repr__(self):
        return f"Parameter(name={self.name!r}, shape={self.shape}, dtype={self.dtype!r}, " \
               f"requires_grad={self.requires_grad})"

    def __deepcopy__(self, memo):
        """A new Parameter with a copy of the values (copy.deepcopy of a Cell clones its layers)."""
        out = Parameter(Tensor(np.array(self.asnumpy()), dtype=self.dtype), name=self.name, requires_grad=self.requires_grad,
                        layerwise_parallel=self.layerwise_parallel, parallel_optimizer=self.parallel_optimizer)
        memo[id(self)] = out
        return out

    @property
    def data(self):
        """The Parameter itself (MindSpore's Parameter.data: its values, still the Parameter)."""
        return self

    def set_data(self, data):
        """Replaces the values (same shape and dtype) in place."""
        if not isinstance(data, Tensor):
            data = Tensor(data, dtype=self.dtype)
        self._assign(data)
        return self


class ParameterTuple(tuple):
    """A tuple of Parameters (MindSpore's ParameterTuple): what `cell.trainable_params()` gives an
    optimizer or GradOperation(get_by_list=True). `clone(prefix, init)` makes same-shaped copies
    named `prefix.<name>` (optimizer state such as moments)."""

    def __new__(cls, params=()):
        params = tuple(params)
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(f"ParameterTuple: every item must be a Parameter, got {type(p).__name__}")
        return super().__new__(cls, params)

    def clone(self, prefix, init="zeros"):
        out = []
        for p in self:
            if init == "zeros":
                data = np.zeros(p.shape, dtype=p.asnumpy().dtype)
            elif init == "ones":
                data = np.ones(p.shape, dtype=p.asnumpy().dtype)
            elif init == "same":
                data = p.asnumpy().copy()
            else:
                raise ValueError(f"ParameterTuple.clone: init must be 'zeros', 'ones' or 'same', got {init!r}")
            out.append(Parameter(Tensor(data, dtype=p.dtype), name=f"{prefix}.{p.name}", requires_grad=False))
        return ParameterTuple(out)
