"""Neural-network building blocks: Cell (MindSpore's nn.Cell), its containers, layers and losses."""
from mycel.nn.cell import Cell, CellList, SequentialCell
from mycel.nn.layer import *  # noqa: F401,F403
from mycel.nn.layer import __all__ as _layer_all
from mycel.nn.loss import *  # noqa: F401,F403
from mycel.nn.loss import __all__ as _loss_all
from mycel.nn.wrap import *  # noqa: F401,F403  training wrappers: WithLossCell, TrainOneStepCell, ...

__all__ = ["Cell", "CellList", "SequentialCell"] + _layer_all + _loss_all
