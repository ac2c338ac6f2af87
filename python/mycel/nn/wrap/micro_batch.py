"""MindSpore's micro-batch wrappers and small parameter Cells with their single-process meaning:
GradAccumulationCell and MicroBatchInterleaved run the network on equal slices of the batch and
sum the outputs (so gradients accumulate over the slices); PipelineGradReducer scales and
returns the step's gradients (no pipeline stages to reduce across in one process);
ParameterUpdate assigns a new value to a Parameter inside a step."""
from mycel import ops
from mycel.common.parameter import Parameter, ParameterTuple
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell
from mycel.ops.primitive import constexpr


@constexpr
def _slice_plan(who, shape, parts, i):
    """(begin, size) of the i-th of `parts` equal slices of a tensor along dim 0."""
    if not shape or shape[0] % parts:
        raise ValueError(f"{who}: each input's batch dim must divide into {parts} micro-batches, got shape "
                         f"{tuple(shape)}")
    step = shape[0] // parts
    return (i * step,) + (0,) * (len(shape) - 1), (step,) + tuple(shape[1:])


def _micro_slices(who, inputs, parts, i):
    out = ()
    for x in inputs:
        begin, size = _slice_plan(who, tuple(x.shape), parts, i)
        out = out + (ops.slice(x, begin, size),)
    return out


def _check_parts(who, arg, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{who}: {arg} must be an int >= 1, got {value!r}")
    return value


class GradAccumulationCell(Cell):
    """network run on micro_size equal slices of every input (along dim 0); returns the sum of
    the outputs, so a gradient of it is the sum of the micro-batch gradients. MindSpore uses it
    with pipeline parallelism, where each micro-batch is a pipeline step; in one process the
    micro-batches run one after another."""

    def __init__(self, network, micro_size):
        super().__init__()
        self.network = network
        self.micro_size = _check_parts("GradAccumulationCell", "micro_size", micro_size)

    def construct(self, *inputs):
        out = None
        for i in range(self.micro_size):
            y = self.network(*_micro_slices("GradAccumulationCell", inputs, self.micro_size, i))
            out = y if out is None else out + y
        return out


class MicroBatchInterleaved(Cell):
    """network run on interleave_num equal slices of the batch, outputs summed (MindSpore
    overlaps one slice's communication with another's compute; one process has none to hide)."""

    def __init__(self, network, interleave_num=2):
        super().__init__()
        self.network = network
        self.interleave_num = _check_parts("MicroBatchInterleaved", "interleave_num", interleave_num)

    def construct(self, *inputs):
        out = None
        for i in range(self.interleave_num):
            y = self.network(*_micro_slices("MicroBatchInterleaved", inputs, self.interleave_num, i))
            out = y if out is None else out + y
        return out


class PipelineGradReducer(Cell):
    """Pipeline parallelism's gradient reducer: accu_grads (one zeroed copy per parameter)
    collect the micro-batch gradients; construct(grads) returns (grads + accu_grads) *
    scale_sense and zeroes accu_grads. Single process: no stages exist to reduce across, so
    what MindSpore reduces over the pipeline is what this step computed; opt_shard is accepted
    and changes nothing."""

    def __init__(self, parameters, scale_sense=1.0, opt_shard=None):
        super().__init__(auto_prefix=False)
        params = parameters if isinstance(parameters, ParameterTuple) else ParameterTuple(list(parameters))
        self.accu_grads = params.clone(prefix="accu_grads", init="zeros")
        self.scale_sense = Parameter(Tensor(float(scale_sense)), name="scale_sense", requires_grad=False)
        self.opt_shard = opt_shard

    def construct(self, grads):
        out = ()
        for g, acc in zip(grads, self.accu_grads):
            total = (g + acc) * ops.cast(self.scale_sense, g.dtype)
            out = out + (ops.depend(total, ops.assign(acc, ops.zeros_like(acc))),)
        return out


class ParameterUpdate(Cell):
    """construct(x) assigns x to param and returns it (MindSpore's way to set a Parameter from
    a compiled step, e.g. a learning rate)."""

    def __init__(self, param):
        super().__init__(auto_prefix=False)
        if not isinstance(param, Parameter):
            raise TypeError(f"ParameterUpdate: param must be a Parameter, got {type(param).__name__}")
        self._param = param

    def construct(self, x):
        ops.assign(self._param, ops.cast(x, self._param.dtype))
        return x


__all__ = ["GradAccumulationCell", "MicroBatchInterleaved", "PipelineGradReducer", "ParameterUpdate"]
