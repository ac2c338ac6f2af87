"""Parallel training settings (MindSpore's auto-parallel context): the mode, gradient averaging,
the number of devices and gradient fusion. DATA_PARALLEL is what runs today: each rank trains on
its shard of the batch and TrainOneStepCell / Model.train average gradients across ranks."""
from mycel.parallel.context import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,
                                    reset_auto_parallel_context)

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context"]
