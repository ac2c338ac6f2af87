"""Training utilities (MindSpore's mindspore.train): Model, callbacks, metrics and checkpoints."""
from mycel.train.serialization import (save_checkpoint, load_checkpoint, load_param_into_net,
                                       save_safetensors, load_safetensors, export, check_checkpoint,
                                       load_checkpoint_async)
from mycel.train.data_sink import data_sink, DatasetHelper, connect_network_with_dataset
from mycel.train import callback
from mycel.train.callback import *  # noqa: F401,F403  (mycel.train.LossMonitor, as in MindSpore)
from mycel.train.callback import __all__ as _callback_all
from mycel.train.model import Model
from mycel.amp import FixedLossScaleManager, DynamicLossScaleManager, LossScaleManager, build_train_network
from mycel.parallel import merge_sliced_parameter, load_distributed_checkpoint, build_searched_strategy
from mycel.train import metrics
from mycel.train import summary
from mycel.insight import SummaryCollector, SummaryRecord
from mycel.train.metrics import (Metric, Accuracy, Loss, Top1CategoricalAccuracy,
                                 Top5CategoricalAccuracy, MAE, MSE, ROC, auc, Dice, CosineSimilarity,
                                 Perplexity, BleuScore, get_metric_fn, names,
                                 HausdorffDistance, MeanSurfaceDistance, RootMeanSquareDistance,
                                 OcclusionSensitivity)

__all__ = ["Model", "callback", "metrics", "save_checkpoint", "load_checkpoint", "check_checkpoint",
           "load_checkpoint_async", "data_sink", "DatasetHelper", "connect_network_with_dataset",
           "FixedLossScaleManager", "DynamicLossScaleManager", "LossScaleManager", "build_train_network",
           "merge_sliced_parameter", "load_distributed_checkpoint", "build_searched_strategy",
           "load_param_into_net", "export", "save_safetensors", "load_safetensors", "Metric", "Accuracy",
           "Loss", "Top1CategoricalAccuracy", "Top5CategoricalAccuracy", "MAE", "MSE", "ROC", "auc", "Dice",
           "CosineSimilarity", "Perplexity", "BleuScore", "HausdorffDistance", "MeanSurfaceDistance",
           "RootMeanSquareDistance", "OcclusionSensitivity", "get_metric_fn", "names", "summary", "SummaryCollector", "SummaryRecord"] + _callback_all
