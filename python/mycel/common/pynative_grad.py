"""Gradients in PYNATIVE_MODE by recording: the function runs eagerly (any Python: numpy on
constants, prints, control flow on tensor values), every op it executes is recorded into an IR
graph, and that graph is differentiated by the same vjp transform as graph mode, compiled and run.
Programs are cached by the recording's structure (ops, attributes, wiring, input shapes and
dtypes), so a training loop compiles once per distinct path through the function.

Values read into Python (float(x.sum()), x.asnumpy()) are constants of the recording: gradients
do not flow through them. See docs/autodiff.md, section "PyNative"."""
from mycel import _mycel


def recording():
    """Whether a PyNative gradient is being recorded on this thread."""
    return _mycel.pynative.recording()


class NestedGrad(NotImplementedError):
    """A gradient taken inside a function whose PyNative gradient is being recorded."""


class RecordedGrad:
    """The recording-based form of one grad function (one GradSpec); keeps its compiled programs."""

    def __init__(self, positions, positions_tuple, weights, return_value, has_aux, sens_param):
        self._weights = weights
        self._impl = _mycel.pynative.GradRecorder(positions, positions_tuple, weights is not None,
                                                  return_value, has_aux, sens_param)

    def __call__(self, fn, *args):
        if recording():
            raise NestedGrad(
                "grad: a gradient inside a function being differentiated in PYNATIVE_MODE is taken by "
                "graph mode's transform (the outer grad falls back to it); this function could not be "
                "parsed for graph mode")
        return self._impl(fn, self._weights, *args)

    @property
    def compiles(self):
        """How many gradient programs were compiled (one per recorded structure)."""
        return self._impl.compiles

    @property
    def cache_hits(self):
        return self._impl.cache_hits

    def last_ir(self):
        """The last recorded graph as IR text (before specialization)."""
        return self._impl.last_ir()

    def last_calls(self):
        """Names of the graphs (@jit functions) the last recorded graph calls, one per call."""
        return self._impl.last_calls()

