"""Neural-network building blocks: Cell (MindSpore's nn.Cell), its containers, layers and losses."""
from mycel.nn.cell import Cell, CellList, SequentialCell
from mycel.nn.graph_cell import GraphCell
from mycel.nn.layer import *  # noqa: F401,F403
from mycel.nn.layer import __all__ as _layer_all
from mycel.nn.loss import *  # noqa: F401,F403
from mycel.nn.loss import __all__ as _loss_all
from mycel.nn.wrap import *  # noqa: F401,F403  training wrappers: WithLossCell, TrainOneStepCell, ...

from mycel.nn.optim import *  # noqa: F401,F403
from mycel.nn.optim import __all__ as _optim_all
from mycel.nn.learning_rate_schedule import *  # noqa: F401,F403
from mycel.nn.learning_rate_schedule import __all__ as _schedule_all
from mycel.nn.dynamic_lr import *  # noqa: F401,F403
from mycel.nn.dynamic_lr import __all__ as _dynamic_lr_all
from mycel.nn import learning_rate_schedule, dynamic_lr  # noqa: F401

__all__ = ["Cell", "CellList", "SequentialCell", "GraphCell"] + _layer_all + _loss_all + _optim_all + _schedule_all + \
    _dynamic_lr_all

# nn.Dence: "did you mean 'Dense'?"
from mycel.common.suggest import module_getattr as _module_getattr  # noqa: E402
_suggest = _module_getattr("mycel.nn", globals())


def __getattr__(name):
    # MindSpore 1.x kept the metrics in nn (nn.Accuracy, nn.BleuScore); 2.x moved them to train.
    from mycel.train import metrics as _metrics
    if name in _metrics.__all__ and name not in ("get_metric_fn", "names"):
        return getattr(_metrics, name)
    return _suggest(name)
