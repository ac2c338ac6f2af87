"""Multi-step recurrent layers: LSTM, GRU and RNN (MindSpore's nn.LSTM, nn.GRU, nn.RNN). The
time loop is a `while` over a tensor counter inside construct, so graph mode compiles one loop
(not T unrolled steps) and any sequence length reuses the same Program."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import Uniform
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_dim, check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param
from mycel.nn.layer.basic import Dropout


class _RNNBase(Cell):
    """The layers and directions of a recurrent layer with `gates` gate blocks; subclasses give
    the step. x is (T, N, input_size), or (N, T, input_size) with batch_first. Weights start at
    U(-1/sqrt(H), 1/sqrt(H)), named weight_ih_l{k}[_reverse] etc. as in MindSpore/PyTorch."""

    def __init__(self, who, gates, input_size, hidden_size, num_layers, has_bias, batch_first,
                 dropout, bidirectional, dtype):
        super().__init__()
        self._who = who
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
        hg = gates * hidden_size
        weights = []  # per (layer, direction): (w_ih, w_hh, b_ih, b_hh)
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * self.num_directions
            for direction in range(self.num_directions):
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                w_ih = make_param(init, (hg, in_size), dtype, "weight_ih" + sfx)
                w_hh = make_param(init, (hg, hidden_size), dtype, "weight_hh" + sfx)
                setattr(self, "weight_ih" + sfx, w_ih)
                setattr(self, "weight_hh" + sfx, w_hh)
                b_ih = b_hh = None
                if has_bias:
                    b_ih = make_param(init, (hg,), dtype, "bias_ih" + sfx)
                    b_hh = make_param(init, (hg,), dtype, "bias_hh" + sfx)
                    setattr(self, "bias_ih" + sfx, b_ih)
                    setattr(self, "bias_hh" + sfx, b_hh)
                weights.append((w_ih, w_hh, b_ih, b_hh))
        self.all_weights = tuple(weights)

    def _check(self, x, seq_length):
        check_rank(self._who, "x", x.ndim, (3,))
        if x.dtype != self.weight_ih_l0.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error(self._who, x.dtype, self.weight_ih_l0.dtype))
        if seq_length is not None:
            check_rank(self._who, "seq_length", seq_length.ndim, (1,))
            check_dim(self._who, "seq_length", seq_length.shape[0], x.shape[0] if self.batch_first else x.shape[1],
                      "one length per batch item")
        return x  # used by construct: graph mode keeps (and so runs) a call whose result is used

    def _layers(self, x, h0, c0, lens=None):
        """Every layer and direction over x (T, N, in): (output, h_n, c_n) with the final states
        gathered by concat along dim 0 (a loop over layers keeps one signature). With lens (N,),
        item i's steps from lens[i] on leave its state alone and output zeros (MindSpore's
        seq_length), so the reverse direction starts at the item's own last step."""
        hs = ops.zeros((0, x.shape[1], self.hidden_size), dtype=x.dtype)
        cs = hs
        for layer in range(self.num_layers):
            if layer > 0:
                x = self.dropout(x)
            k = layer * self.num_directions
            w_ih, w_hh, b_ih, b_hh = self.all_weights[k]
            out, h, c = self._run(x, h0[k], c0[k], w_ih, w_hh, b_ih, b_hh, False, lens)
            hs = ops.concat((hs, ops.expand_dims(h, 0)), axis=0)
            cs = ops.concat((cs, ops.expand_dims(c, 0)), axis=0)
            if self.bidirectional:
                w_ih, w_hh, b_ih, b_hh = self.all_weights[k + 1]
                out_r, h_r, c_r = self._run(x, h0[k + 1], c0[k + 1], w_ih, w_hh, b_ih, b_hh, True, lens)
                out = ops.concat((out, out_r), axis=2)
                hs = ops.concat((hs, ops.expand_dims(h_r, 0)), axis=0)
                cs = ops.concat((cs, ops.expand_dims(c_r, 0)), axis=0)
            x = out
        return x, hs, cs

    def _run(self, xs, h, c, w_ih, w_hh, b_ih, b_hh, reverse, lens=None):
        """One direction of one layer over every time step: (outputs (T, N, H), h_T, c_T)."""
        steps = xs.shape[0]
        gates_x = ops.dense(xs, w_ih, b_ih)  # the input projection of all steps at once
        out = ops.zeros((steps, xs.shape[1], self.hidden_size), dtype=xs.dtype)
        t = ops.zeros((), mstype.int32)
        while t < steps:
            idx = steps - 1 - t if reverse else t
            h_new, c_new = self._step(gates_x[idx], ops.dense(h, w_hh, b_hh), c)
            if lens is None:
                h, c, h_out = h_new, c_new, h_new
            else:
                valid = ops.broadcast_to(ops.expand_dims(lens > idx, 1), h_new.shape)
                h, c = ops.select(valid, h_new, h), ops.select(valid, c_new, c)
                h_out = ops.select(valid, h_new, ops.zeros_like(h_new))
            out = ops.tensor_scatter_add(out, ops.reshape(idx, (1, 1)), ops.expand_dims(h_out, 0))
            t = t + 1
        return out, h, c

    def _zero_state(self, x):
        return ops.zeros((self.num_layers * self.num_directions, x.shape[1], self.hidden_size), dtype=x.dtype)

    def extend_repr(self):
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}, num_layers={self.num_layers}, " \
               f"bidirectional={self.bidirectional}, batch_first={self.batch_first}"


class LSTM(_RNNBase):
    """Multi-layer LSTM with gates ordered (input, forget, cell, output), as in PyTorch and
    MindSpore. x is (T, N, input_size), or (N, T, input_size) with batch_first; returns
    output (.., num_directions * hidden_size) and (h_n, c_n) of shape
    (num_layers * num_directions, N, hidden_size). Weights start at U(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=mstype.float32):
        super().__init__("LSTM", 4, input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype)

    def construct(self, x, hx=None, seq_length=None):
        x = self._check(x, seq_length)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        if hx is None:
            h0 = c0 = self._zero_state(x)
        else:
            h0, c0 = hx
        x, hs, cs = self._layers(x, h0, c0, seq_length)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        return x, (hs, cs)

    def _step(self, gx, gh, c):
        i, f, g, o = ops.split(gx + gh, axis=1, output_num=4)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        return ops.sigmoid(o) * ops.tanh(c), c


class _SingleState(_RNNBase):
    """A recurrent layer whose state is h alone: construct(x, hx=None) -> (output, h_n); the
    shared loop carries a second state it never reads."""

    def construct(self, x, hx=None, seq_length=None):
        x = self._check(x, seq_length)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        h0 = self._zero_state(x) if hx is None else hx
        x, hs, _ = self._layers(x, h0, h0, seq_length)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        return x, hs


class GRU(_SingleState):
    """Multi-layer GRU, gates (reset, update, new) as MindSpore/PyTorch: n = tanh(W_in x + b_in +
    r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h. Returns output and h_n
    (num_layers * num_directions, N, hidden_size)."""

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=mstype.float32):
        super().__init__("GRU", 3, input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype)

    def _step(self, gx, gh, c):
        xr, xz, xn = ops.split(gx, axis=1, output_num=3)
        hr, hz, hn = ops.split(gh, axis=1, output_num=3)
        r = ops.sigmoid(xr + hr)
        z = ops.sigmoid(xz + hz)
        n = ops.tanh(xn + r * hn)
        h = n + z * (c - n)  # (1 - z) n + z h, with h carried as c
        return h, h


class RNN(_SingleState):
    """Multi-layer Elman RNN: h' = act(W_ih x + b_ih + W_hh h + b_hh), act 'tanh' or 'relu'.
    Returns output and h_n (num_layers * num_directions, N, hidden_size)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", has_bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=mstype.float32):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__("RNN", 1, input_size, hidden_size, num_layers, has_bias, batch_first,
                         dropout, bidirectional, dtype)
        self.use_tanh = nonlinearity == "tanh"

    def _step(self, gx, gh, c):
        h = ops.tanh(gx + gh) if self.use_tanh else ops.relu(gx + gh)
        return h, h
