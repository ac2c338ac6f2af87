"""Loss Cells."""
from mycel.nn.loss.loss import (LossBase, MSELoss, L1Loss, SmoothL1Loss, BCEWithLogitsLoss,
                                SoftmaxCrossEntropyWithLogits, NLLLoss, CrossEntropyLoss)

from mycel.nn.loss.zoo import *  # noqa: F401,F403  (MarginRankingLoss, HuberLoss, ...)
from mycel.nn.loss.zoo import __all__ as _zoo_all
from mycel.nn.loss.ctc import CTCLoss
from mycel.nn.loss.focal_sampled import FocalLoss, SampledSoftmaxLoss

__all__ = _zoo_all + ["FocalLoss", "SampledSoftmaxLoss", "CTCLoss", "LossBase", "MSELoss", "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss",
           "SoftmaxCrossEntropyWithLogits", "NLLLoss", "CrossEntropyLoss"]
