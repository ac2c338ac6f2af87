"""mindspore.profiler: the Profiler (implemented in mycel.insight)."""
from mycel.insight.profiler import Profiler

__all__ = ["Profiler"]
