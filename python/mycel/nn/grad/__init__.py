"""MindSpore's `nn.grad`: Jvp and Vjp as Cells over the functional transforms (mycel.jvp/vjp)."""
from mycel.nn.grad.cell_grad import Jvp, Vjp

__all__ = ["Jvp", "Vjp"]
