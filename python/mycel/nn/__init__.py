"""Neural-network building blocks: Cell (MindSpore's nn.Cell) and its containers."""
from mycel.nn.cell import Cell, CellList, SequentialCell

__all__ = ["Cell", "CellList", "SequentialCell"]
