"""mindspore.train.summary: SummaryRecord (implemented in mycel.insight)."""
from mycel.insight.summary_record import SummaryRecord

__all__ = ["SummaryRecord"]
