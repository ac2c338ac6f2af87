"""Insight (MindSpore's MindInsight side): summaries that TensorBoard reads (SummaryRecord, the
SummaryCollector callback, the summary ops in mycel.ops), the Profiler, the Debugger and the
mycel-insight dashboard."""
from mycel.insight.summary_record import SummaryRecord
from mycel.insight.summary_collector import SummaryCollector
from mycel.insight.profiler import Profiler
from mycel.insight.debugger import Debugger, Watchpoint

__all__ = ["SummaryRecord", "SummaryCollector", "Profiler", "Debugger", "Watchpoint"]
