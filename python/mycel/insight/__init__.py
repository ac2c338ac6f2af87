"""Insight (MindSpore's MindInsight side): summaries that TensorBoard reads (SummaryRecord, the
SummaryCollector callback, the summary ops in mycel.ops) and the Profiler."""
from mycel.insight.summary_record import SummaryRecord
from mycel.insight.summary_collector import SummaryCollector
from mycel.insight.profiler import Profiler

__all__ = ["SummaryRecord", "SummaryCollector", "Profiler"]
