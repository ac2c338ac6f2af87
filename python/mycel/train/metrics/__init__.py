"""Metrics (MindSpore's mindspore.train.Metric family): numpy-based, run outside the graph."""
from mycel.train.metrics.metric import Metric
from mycel.train.metrics.accuracy import (Accuracy, TopKCategoricalAccuracy, Top1CategoricalAccuracy,
                                          Top5CategoricalAccuracy)
from mycel.train.metrics.loss import Loss
from mycel.train.metrics.confusion import ConfusionMatrix, Precision, Recall, Fbeta, F1
from mycel.train.metrics.error import MAE, MSE
from mycel.train.metrics.roc import ROC, auc
from mycel.train.metrics.similarity import Dice, CosineSimilarity, Perplexity
from mycel.train.metrics.bleu import BleuScore
from mycel.train.metrics.surface import HausdorffDistance, MeanSurfaceDistance, RootMeanSquareDistance
from mycel.train.metrics.occlusion import OcclusionSensitivity

# The metric names MindSpore's Model(metrics={...}) and get_metric_fn accept.
METRIC_NAMES = {
    "acc": Accuracy, "accuracy": Accuracy, "loss": Loss, "mae": MAE, "mse": MSE,
    "top_1_accuracy": Top1CategoricalAccuracy, "top_5_accuracy": Top5CategoricalAccuracy,
    "precision": Precision, "recall": Recall, "f1": F1, "dice": Dice, "roc": ROC,
    "cosine_similarity": CosineSimilarity, "perplexity": Perplexity, "bleu_score": BleuScore,
    "hausdorff_distance": HausdorffDistance, "mean_surface_distance": MeanSurfaceDistance,
    "root_mean_square_distance": RootMeanSquareDistance, "occlusion_sensitivity": OcclusionSensitivity,
}


def get_metric_fn(name, *args, **kwargs):
    """A new metric object by MindSpore's name ('accuracy', 'mae', ...), built with args."""
    if name not in METRIC_NAMES:
        raise KeyError(f"get_metric_fn: unknown metric name {name!r}; known: {sorted(METRIC_NAMES)}")
    return METRIC_NAMES[name](*args, **kwargs)


def names():
    """The metric names get_metric_fn accepts."""
    return sorted(METRIC_NAMES)

__all__ = ["Metric", "Accuracy", "TopKCategoricalAccuracy", "Top1CategoricalAccuracy",
           "Top5CategoricalAccuracy", "Loss", "ConfusionMatrix", "Precision", "Recall", "Fbeta", "F1",
           "MAE", "MSE", "ROC", "auc", "Dice", "CosineSimilarity", "Perplexity", "BleuScore", "HausdorffDistance",
           "MeanSurfaceDistance", "RootMeanSquareDistance", "OcclusionSensitivity", "get_metric_fn", "names"]
