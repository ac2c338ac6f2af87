"""Single-step recurrent cells (MindSpore's nn.LSTMCell, nn.GRUCell, nn.RNNCell): one time step
from the input and the previous state, gates ordered as in MindSpore/PyTorch, weights
U(-1/sqrt(H), 1/sqrt(H)). The same construct runs in both modes."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import Uniform
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param


class _CellBase(Cell):
    def __init__(self, who, input_size, hidden_size, has_bias, gates, dtype):
        super().__init__()
        self.input_size = check_int(input_size, who, "input_size")
        self.hidden_size = check_int(hidden_size, who, "hidden_size")
        self.has_bias = bool(has_bias)
        init = Uniform(1 / math.sqrt(hidden_size))
        self.weight_ih = make_param(init, (gates * hidden_size, input_size), dtype, "weight_ih")
        self.weight_hh = make_param(init, (gates * hidden_size, hidden_size), dtype, "weight_hh")
        self.bias_ih = make_param(init, (gates * hidden_size,), dtype, "bias_ih") if has_bias else None
        self.bias_hh = make_param(init, (gates * hidden_size,), dtype, "bias_hh") if has_bias else None

    def extend_repr(self):
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}, has_bias={self.has_bias}"


class LSTMCell(_CellBase):
    """(h', c') = LSTMCell(x, (h, c)): x (N, input_size) or (input_size,), h and c (N, hidden)."""

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=mstype.float32):
        super().__init__("LSTMCell", input_size, hidden_size, has_bias, 4, dtype)

    def construct(self, x, hx=None):
        check_rank("LSTMCell", "x", x.ndim, (1, 2))
        if x.dtype != self.weight_ih.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("LSTMCell", x.dtype, self.weight_ih.dtype))
        unbatched = x.ndim == 1
        if unbatched:
            x = ops.expand_dims(x, 0)
        if hx is None:
            h = ops.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
            c = h
        else:
            h, c = hx
            if unbatched:
                h, c = ops.expand_dims(h, 0), ops.expand_dims(c, 0)
        gates = ops.dense(x, self.weight_ih, self.bias_ih) + ops.dense(h, self.weight_hh, self.bias_hh)
        i, f, g, o = ops.split(gates, axis=1, output_num=4)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h = ops.sigmoid(o) * ops.tanh(c)
        if unbatched:
            return ops.squeeze(h, (0,)), ops.squeeze(c, (0,))
        return h, c


class GRUCell(_CellBase):
    """h' = GRUCell(x, h): gates (reset, update, new); n uses r * (W_hn h + b_hn)."""

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=mstype.float32):
        super().__init__("GRUCell", input_size, hidden_size, has_bias, 3, dtype)

    def construct(self, x, hx=None):
        check_rank("GRUCell", "x", x.ndim, (1, 2))
        if x.dtype != self.weight_ih.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("GRUCell", x.dtype, self.weight_ih.dtype))
        unbatched = x.ndim == 1
        if unbatched:
            x = ops.expand_dims(x, 0)
        if hx is None:
            h = ops.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
        else:
            h = ops.expand_dims(hx, 0) if unbatched else hx
        xr, xz, xn = ops.split(ops.dense(x, self.weight_ih, self.bias_ih), axis=1, output_num=3)
        hr, hz, hn = ops.split(ops.dense(h, self.weight_hh, self.bias_hh), axis=1, output_num=3)
        r = ops.sigmoid(xr + hr)
        z = ops.sigmoid(xz + hz)
        n = ops.tanh(xn + r * hn)
        h = (1.0 - z) * n + z * h
        return ops.squeeze(h, (0,)) if unbatched else h


class RNNCell(_CellBase):
    """h' = act(W_ih x + b_ih + W_hh h + b_hh), act 'tanh' or 'relu'."""

    def __init__(self, input_size, hidden_size, has_bias=True, nonlinearity="tanh", dtype=mstype.float32):
        super().__init__("RNNCell", input_size, hidden_size, has_bias, 1, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.use_tanh = nonlinearity == "tanh"

    def construct(self, x, hx=None):
        check_rank("RNNCell", "x", x.ndim, (1, 2))
        if x.dtype != self.weight_ih.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("RNNCell", x.dtype, self.weight_ih.dtype))
        unbatched = x.ndim == 1
        if unbatched:
            x = ops.expand_dims(x, 0)
        if hx is None:
            h = ops.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
        else:
            h = ops.expand_dims(hx, 0) if unbatched else hx
        pre = ops.dense(x, self.weight_ih, self.bias_ih) + ops.dense(h, self.weight_hh, self.bias_hh)
        h = ops.tanh(pre) if self.use_tanh else ops.relu(pre)
        return ops.squeeze(h, (0,)) if unbatched else h


__all__ = ["LSTMCell", "GRUCell", "RNNCell"]
