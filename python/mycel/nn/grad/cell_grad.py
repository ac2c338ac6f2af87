"""Jvp and Vjp Cells (MindSpore's nn.Jvp/nn.Vjp): the last call argument is the tangent
(cotangent), the others the inputs of fn. They run the functional transforms, so they run
eagerly (PYNATIVE_MODE); inside compiled code call mycel.jvp/vjp where graph mode supports them."""
from mycel.common.functional_ad import jvp, vjp
from mycel.nn.cell import Cell


class Jvp(Cell):
    """Jvp(fn)(*inputs, v) -> (fn(*inputs), J @ v)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __call__(self, *args):
        if len(args) < 2:
            raise TypeError(f"Jvp: expects the inputs of fn and then v, got {len(args)} argument(s)")
        inputs, v = args[:-1], args[-1]
        return jvp(self.fn, inputs if len(inputs) > 1 else inputs[0], v)


class Vjp(Cell):
    """Vjp(fn)(*inputs, v) -> (fn(*inputs), v @ J): one gradient per input (a tuple for several)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __call__(self, *args):
        if len(args) < 2:
            raise TypeError(f"Vjp: expects the inputs of fn and then v, got {len(args)} argument(s)")
        inputs, v = args[:-1], args[-1]
        out, vjp_fn = vjp(self.fn, *inputs)
        return out, vjp_fn(v)
