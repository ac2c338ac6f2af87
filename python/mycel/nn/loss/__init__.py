"""Loss Cells."""
from mycel.nn.loss.loss import (LossBase, MSELoss, L1Loss, SmoothL1Loss, BCEWithLogitsLoss,
                                SoftmaxCrossEntropyWithLogits, NLLLoss, CrossEntropyLoss)

__all__ = ["LossBase", "MSELoss", "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss",
           "SoftmaxCrossEntropyWithLogits", "NLLLoss", "CrossEntropyLoss"]
