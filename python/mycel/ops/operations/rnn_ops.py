"""MindSpore's LSTM primitive (P.LSTM, the CPU kernel's interface): one flat weight tensor
holding, for every layer and direction in turn, the input weights (4, H, in), then all the
recurrent weights (4, H, H), then the biases (4, H), gates ordered (input, forget, cell,
output). Composed of matmuls and elementwise ops, so it differentiates in x, h, c and w."""
import numpy as np

from mycel import _mycel
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


@constexpr
def _lstm_plan(input_size, hidden_size, num_layers, dirs, has_bias, w_size):
    """Per layer: (whether a layer comes before it, per direction: (its index in h and c, input
    size, input-weight offset, recurrent-weight offset, bias offset or -1, reversed)), a
    constant that construct loops over (graph mode indexes constants only by constants)."""
    g = 4 * hidden_size
    sizes = [input_size if layer == 0 else hidden_size * dirs for layer in range(num_layers)]
    w_total = sum(g * s for s in sizes) * dirs
    h_total = g * hidden_size * num_layers * dirs
    b_total = g * num_layers * dirs if has_bias else 0
    if w_size != w_total + h_total + b_total:
        raise ValueError(f"LSTM: w must hold {w_total + h_total + b_total} values (input weights {w_total}, "
                         f"recurrent weights {h_total}, biases {b_total}), got {w_size}")
    plan, w_off = [], 0
    for layer in range(num_layers):
        entries = []
        for d in range(dirs):
            k = layer * dirs + d
            entries.append((k, sizes[layer], w_off, w_total + k * g * hidden_size,
                            w_total + h_total + k * g if has_bias else -1, d == 1))
            w_off += g * sizes[layer]
        plan.append((layer > 0, tuple(entries)))
    return tuple(plan)


def _piece(flat, offset, shape):
    return _ops.reshape(_ops.slice(flat, (offset,), (int(np.prod(shape)),)), shape)


class LSTM(_Composite):
    """LSTM(input_size, hidden_size, num_layers, has_bias, bidirectional, dropout)(x (T, N,
    input_size), h (L * D, N, H), c, w (flat)) -> (output (T, N, D * H), h_n, c_n, reserve,
    state); reserve and state (the kernel's workspace) are (1, 1) zeros. dropout applies to
    the outputs of every layer but the last."""

    def __init__(self, input_size, hidden_size, num_layers, has_bias, bidirectional, dropout):
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"LSTM: {arg} must be an int >= 1, got {v!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"LSTM: dropout must be a float in [0, 1), got {dropout!r}")
        super().__init__(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers,
                         has_bias=bool(has_bias), bidirectional=bool(bidirectional), dropout=float(dropout))

    def _call(self, x, h, c, w):
        hid, dirs = self.hidden_size, 2 if self.bidirectional else 1
        if x.ndim != 3 or x.shape[2] != self.input_size:
            raise ValueError(f"LSTM: x must be (seq_len, batch, {self.input_size}), got {tuple(x.shape)}")
        want = (self.num_layers * dirs, x.shape[1], hid)
        if tuple(h.shape) != want or tuple(c.shape) != want:
            raise ValueError(f"LSTM: h and c must be {want}, got {tuple(h.shape)} and {tuple(c.shape)}")
        flat = _ops.reshape(w, (-1,))
        plan = _lstm_plan(self.input_size, hid, self.num_layers, dirs, self.has_bias, flat.shape[0])
        hs, cs = (), ()
        for later, entries in plan:
            if later and self.dropout > 0.0:
                x = _drop(x, self.dropout)
            outs = ()
            for k, in_size, w_off, u_off, b_off, reverse in entries:
                wi = _piece(flat, w_off, (4 * hid, in_size))
                wh = _piece(flat, u_off, (4 * hid, hid))
                b = _piece(flat, b_off, (4 * hid,)) if b_off >= 0 else None
                out, hk, ck = _direction(x, h[k], c[k], wi, wh, b, reverse)
                outs = outs + (out,)
                hs, cs = hs + (hk,), cs + (ck,)
            x = outs[0] if dirs == 1 else _ops.concat(outs, 2)
        zero = _ops.zeros((1, 1), x.dtype)
        return x, _ops.stack(hs, 0), _ops.stack(cs, 0), zero, zero


def _drop(x, p):
    keep = _ops.cast(_ops.greater_equal(_ops.uniform(tuple(x.shape), 0.0, 1.0), p), x.dtype)
    return x * keep / (1.0 - p)


def _direction(xs, h, c, wi, wh, b, reverse):
    """One direction of one layer over the T steps (unrolled: T is a shape)."""
    steps = xs.shape[0]
    gates_x = _ops.matmul(xs, _ops.transpose(wi, (1, 0)))
    if b is not None:
        gates_x = gates_x + b
    wh_t = _ops.transpose(wh, (1, 0))
    outs = ()
    for t in range(steps):
        gates = gates_x[steps - 1 - t if reverse else t] + _ops.matmul(h, wh_t)
        i, f, g, o = _ops.split(gates, axis=1, output_num=4)
        c = _ops.sigmoid(f) * c + _ops.sigmoid(i) * _ops.tanh(g)
        h = _ops.sigmoid(o) * _ops.tanh(c)
        outs = outs + (h,)
    if reverse:  # outputs in time order
        outs = outs[::-1]
    return _ops.stack(outs, 0), h, c


COMPOSITES = ["LSTM"]
