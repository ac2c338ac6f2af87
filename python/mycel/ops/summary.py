"""Summary ops as MindSpore has them: `ops.ScalarSummary()("loss", loss)` with the call signature
(name, value). Each calls the registry op (scalar_summary, ...) with `name` as its attribute:
eagerly the value goes to the summary queue at once; in graph mode the function below is parsed
like user code, so the op becomes an effect-ordered instruction of the compiled step (no Python
per call), and SummaryRecord.record(step) drains what it put in the queue."""
from mycel import _mycel
from mycel.ops.operations import Primitive


def scalar_summary(name, value):
    """Records a one-element tensor as scalar `name` of the next SummaryRecord.record."""
    _mycel.ops.scalar_summary(value, name=name)


def image_summary(name, value):
    """Records an NCHW image batch as image `name` of the next SummaryRecord.record."""
    _mycel.ops.image_summary(value, name=name)


def histogram_summary(name, value):
    """Records the histogram of a tensor as `name` of the next SummaryRecord.record."""
    _mycel.ops.histogram_summary(value, name=name)


def tensor_summary(name, value):
    """Records a tensor as tensor `name` of the next SummaryRecord.record."""
    _mycel.ops.tensor_summary(value, name=name)


class _SummaryPrimitive(Primitive):
    """A summary primitive: no attributes; called as (name, value)."""
    _function = None

    def __init__(self):
        super().__init__()

    def __call__(self, name, value):
        if not isinstance(name, str) or not name:
            raise TypeError(f"{type(self).__name__}: 'name' must be a non-empty str, got {name!r}")
        return type(self)._function(name, value)

    @property
    def _mycel_graph_function(self):
        return type(self)._function


def _summary_class(cls_name, fn):
    return type(cls_name, (_SummaryPrimitive,), {
        "_handle": _mycel.op_handles[fn.__name__], "_function": staticmethod(fn),
        "__doc__": fn.__doc__, "__module__": "mycel.ops.operations"})


ScalarSummary = _summary_class("ScalarSummary", scalar_summary)
ImageSummary = _summary_class("ImageSummary", image_summary)
HistogramSummary = _summary_class("HistogramSummary", histogram_summary)
TensorSummary = _summary_class("TensorSummary", tensor_summary)

__all__ = ["ScalarSummary", "ImageSummary", "HistogramSummary", "TensorSummary"]
