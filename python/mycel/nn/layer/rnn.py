"""LSTM. The time loop is a `while` over a tensor counter inside construct, so graph mode
compiles one loop (not T unrolled steps) and any sequence length reuses the same Program."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import Uniform
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_rank, check_supported
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param
from mycel.nn.layer.basic import Dropout


class LSTM(Cell):
    """Multi-layer LSTM with gates ordered (input, forget, cell, output), as in PyTorch and
    MindSpore. x is (T, N, input_size), or (N, T, input_size) with batch_first; returns
    output (.., num_directions * hidden_size) and (h_n, c_n) of shape
    (num_layers * num_directions, N, hidden_size). Weights start at U(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=mstype.float32):
        super().__init__()
        who = "LSTM"
        self.input_size = check_int(input_size, who, "input_size")
        self.hidden_size = check_int(hidden_size, who, "hidden_size")
        self.num_layers = check_int(num_layers, who, "num_layers")
        if not 0 <= dropout < 1:
            raise ValueError(f"{who}: dropout must be in [0, 1), got {dropout}")
        self.has_bias, self.batch_first = bool(has_bias), bool(batch_first)
        self.bidirectional = bool(bidirectional)
        self.num_directions = 2 if bidirectional else 1
        self.dropout = Dropout(p=dropout)
        init = Uniform(1 / math.sqrt(hidden_size))
        h4 = 4 * hidden_size
        weights = []  # per (layer, direction): (w_ih, w_hh, b_ih, b_hh)
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * self.num_directions
            for direction in range(self.num_directions):
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                w_ih = make_param(init, (h4, in_size), dtype, "weight_ih" + sfx)
                w_hh = make_param(init, (h4, hidden_size), dtype, "weight_hh" + sfx)
                setattr(self, "weight_ih" + sfx, w_ih)
                setattr(self, "weight_hh" + sfx, w_hh)
                b_ih = b_hh = None
                if has_bias:
                    b_ih = make_param(init, (h4,), dtype, "bias_ih" + sfx)
                    b_hh = make_param(init, (h4,), dtype, "bias_hh" + sfx)
                    setattr(self, "bias_ih" + sfx, b_ih)
                    setattr(self, "bias_hh" + sfx, b_hh)
                weights.append((w_ih, w_hh, b_ih, b_hh))
        self.all_weights = tuple(weights)

    def construct(self, x, hx=None, seq_length=None):
        check_rank("LSTM", "x", x.ndim, (3,))
        check_supported("LSTM", "seq_length", seq_length is None)
        if x.dtype != self.weight_ih_l0.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("LSTM", x.dtype, self.weight_ih_l0.dtype))
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        n_states = self.num_layers * self.num_directions
        if hx is None:
            zeros = ops.zeros((n_states, x.shape[1], self.hidden_size), dtype=x.dtype)
            h0, c0 = zeros, zeros
        else:
            h0, c0 = hx
        # Final states gathered by concat along dim 0 (a loop over layers keeps one signature).
        hs = ops.zeros((0, x.shape[1], self.hidden_size), dtype=x.dtype)
        cs = hs
        for layer in range(self.num_layers):
            if layer > 0:
                x = self.dropout(x)
            k = layer * self.num_directions
            w_ih, w_hh, b_ih, b_hh = self.all_weights[k]
            out, h, c = self._run(x, h0[k], c0[k], w_ih, w_hh, b_ih, b_hh, False)
            hs = ops.concat((hs, ops.expand_dims(h, 0)), axis=0)
            cs = ops.concat((cs, ops.expand_dims(c, 0)), axis=0)
            if self.bidirectional:
                w_ih, w_hh, b_ih, b_hh = self.all_weights[k + 1]
                out_r, h_r, c_r = self._run(x, h0[k + 1], c0[k + 1], w_ih, w_hh, b_ih, b_hh, True)
                out = ops.concat((out, out_r), axis=2)
                hs = ops.concat((hs, ops.expand_dims(h_r, 0)), axis=0)
                cs = ops.concat((cs, ops.expand_dims(c_r, 0)), axis=0)
            x = out
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        return x, (hs, cs)

    def _run(self, xs, h, c, w_ih, w_hh, b_ih, b_hh, reverse):
        """One direction of one layer over every time step: (outputs (T, N, H), h_T, c_T)."""
        steps = xs.shape[0]
        gates_x = ops.dense(xs, w_ih, b_ih)  # the input projection of all steps at once
        out = ops.zeros((steps, xs.shape[1], self.hidden_size), dtype=xs.dtype)
        t = ops.zeros((), mstype.int32)
        while t < steps:
            idx = steps - 1 - t if reverse else t
            gates = gates_x[idx] + ops.dense(h, w_hh, b_hh)
            i, f, g, o = ops.split(gates, axis=1, output_num=4)
            c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
            h = ops.sigmoid(o) * ops.tanh(c)
            out = ops.tensor_scatter_add(out, ops.reshape(idx, (1, 1)), ops.expand_dims(h, 0))
            t = t + 1
        return out, h, c

    def extend_repr(self):
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}, num_layers={self.num_layers}, " \
               f"bidirectional={self.bidirectional}, batch_first={self.batch_first}"
