"""Metrics (MindSpore's mindspore.train.Metric family): numpy-based, run outside the graph."""
from mycel.train.metrics.metric import Metric
from mycel.train.metrics.accuracy import (Accuracy, TopKCategoricalAccuracy, Top1CategoricalAccuracy,
                                          Top5CategoricalAccuracy)
from mycel.train.metrics.loss import Loss
from mycel.train.metrics.confusion import ConfusionMatrix, Precision, Recall, Fbeta, F1

__all__ = ["Metric", "Accuracy", "TopKCategoricalAccuracy", "Top1CategoricalAccuracy",
           "Top5CategoricalAccuracy", "Loss", "ConfusionMatrix", "Precision", "Recall", "Fbeta", "F1"]
