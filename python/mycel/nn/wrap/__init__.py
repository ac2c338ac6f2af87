"""Wrapper Cells for training: loss, evaluation, one-step training, loss scaling and pipeline
stages."""
from mycel.nn.wrap.cell_wrapper import WithLossCell, WithEvalCell, TrainOneStepCell
from mycel.nn.wrap.grad_reducer import DistributedGradReducer
from mycel.nn.wrap.adasum import AdaSumByGradWrapCell, AdaSumByDeltaWeightWrapCell
from mycel.nn.wrap.pipeline import PipelineCell
from mycel.nn.wrap.micro_batch import (GradAccumulationCell, MicroBatchInterleaved, PipelineGradReducer,
                                       ParameterUpdate)
from mycel.nn.wrap.loss_scale import (FixedLossScaleUpdateCell, DynamicLossScaleUpdateCell,
                                      TrainOneStepWithLossScaleCell)

__all__ = ["WithLossCell", "WithEvalCell", "TrainOneStepCell", "DistributedGradReducer", "AdaSumByGradWrapCell",
           "AdaSumByDeltaWeightWrapCell", "FixedLossScaleUpdateCell",
           "DynamicLossScaleUpdateCell", "TrainOneStepWithLossScaleCell", "PipelineCell",
           "GradAccumulationCell", "MicroBatchInterleaved", "PipelineGradReducer", "ParameterUpdate"]
