"""Parallel training settings (MindSpore's auto-parallel context): the mode, gradient averaging,
the number of devices and gradient fusion; DATA_PARALLEL and SEMI_AUTO_PARALLEL run today
(docs/parallel.md); checkpoints across layouts (checkpoint.py)."""
from mycel.parallel.context import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,
                                    reset_auto_parallel_context)

from mycel.parallel.checkpoint import (load_distributed_checkpoint, merge_sliced_parameter,
                                       save_sliced_checkpoints, slice_parameter)
from mycel.parallel.strategy_file import build_searched_strategy

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "load_distributed_checkpoint", "merge_sliced_parameter",
           "save_sliced_checkpoints", "slice_parameter", "build_searched_strategy"]
