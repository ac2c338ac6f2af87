"""The host-driven pipeline step behind nn.PipelineCell with pipeline_scheduler="1f1b" (and
"gpipe" with data-parallel stages, in GPipe's order).

Each rank walks its stage's list of actions (mycel.parallel.pipeline_schedule): receive an
activation, run the stage's cells on one micro-batch, send the result on, receive the result's
gradient, differentiate the stage, send the input's gradient back. The forward and the gradient
of the stage are two compiled programs in GRAPH_MODE (eager in PYNATIVE_MODE), called once per
micro-batch. Between a micro-batch's forward and its backward the stage keeps, in GRAPH_MODE,
the forward's residuals: the stage's gradient program is cut at its sensitivity input
(CompiledGraph.split_at_sens) into a forward program returning the output and the values the
backward reads, and a backward program taking them with the output's gradient, so nothing is
recomputed. With pipeline_config stage_recompute=True (and in PYNATIVE_MODE) it keeps only the
micro-batch's input and its backward recomputes the stage's forward from it (full activation
recomputation, as Megatron-LM's option), one more forward per micro-batch (the last stage, whose
backward follows its forward at once, runs forward and backward in one program). The recompute
repeats the forward exactly and leaves no trace: it starts from the random-generator state the
micro-batch's forward started from (Dropout draws the same masks), and the stage's buffers
(BatchNorm's moving statistics) are put back afterwards, so they move once per micro-batch as in
the forward. Either way a stage holds at most S - s micro-batches instead of GPipe's
micro_size sets of activations. The weights' gradients are summed over micro-batches on
the stage, then over the stage's data-parallel group, and the optimizer runs once per step.

Shapes travel with the data: in the first step of each global batch shape, a stage sends the
shape and dtype of what it sends (a small int64 header) before the first activation, so a stage
needs none of the other stages' weights to build its Receives."""
import numpy as np

from mycel import _mycel, context, ops
from mycel.common import dtype as _dt
from mycel.common import seed as _seed
from mycel.common.autodiff import _GradFunction
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell
from mycel.parallel.pipeline_schedule import stage_actions

_DTYPES = (_dt.float32, _dt.float16, _dt.bfloat16, _dt.float64, _dt.int32, _dt.int64, _dt.int8, _dt.uint8,
           _dt.int16, _dt.bool_)
_MAX_DIMS = 8
_HEADER_TAG = 29999  # below the collectives' metadata tag; micro-batch tags are 2i and 2i + 1


class _Stage(Cell):
    """The stage's cells on one micro-batch (and the loss on the last stage)."""

    def __init__(self, mine, loss_fn):
        super().__init__(auto_prefix=False)
        object.__setattr__(self, "_mine", mine)  # the network's cells, not children of this one
        object.__setattr__(self, "_loss", loss_fn)

    def construct(self, h):
        for cell in self._mine:
            h = cell(h)
        return h


class _LastStage(_Stage):
    def construct(self, h, label):
        for cell in self._mine:
            h = cell(h)
        return self._loss(h, label)


_ITEMSIZE = {_dt.float64: 8, _dt.int64: 8, _dt.float32: 4, _dt.int32: 4, _dt.float16: 2, _dt.bfloat16: 2,
             _dt.int16: 2}


def _nbytes(t):
    return int(np.prod(t.shape)) * _ITEMSIZE.get(t.dtype, 1)


def _header(t):
    shape = tuple(t.shape)
    if len(shape) > _MAX_DIMS:
        raise ValueError(f"PipelineCell: a stage's output has {len(shape)} dims; at most {_MAX_DIMS} can be sent")
    return Tensor(np.array([len(shape), _DTYPES.index(t.dtype)] + list(shape) + [0] * (_MAX_DIMS - len(shape)),
                           np.int64))


def _from_header(h):
    a = h.asnumpy()
    return tuple(int(d) for d in a[2:2 + int(a[0])]), _DTYPES[int(a[1])]


class HostPipeline:
    """One rank's runner of `scheduler`'s actions: stage `stage` of `stages`, data-parallel index
    `dp_index` of `dp`. Neighbours are the ranks of the previous and next stage with the same dp
    index."""

    def __init__(self, scheduler, mine, loss_fn, weights, stage, stages, dp_index, dp, micro, group=None,
                 scattered=frozenset(), recompute=False, tp=False):
        self.stage, self.stages, self.dp_index, self.dp, self.micro = stage, stages, dp_index, dp, micro
        self.first, self.last = stage == 0, stage == stages - 1
        # Tensor-parallel stage: the dp ranks of the stage share each whole micro-batch, their
        # programs split by the sharding pass over them (see _stage_pass).
        self.tp = tp
        self.prev, self.next = (stage - 1) * dp + dp_index, (stage + 1) * dp + dp_index
        self.weights = tuple(weights)
        self.actions = stage_actions(scheduler, stage, stages, micro)
        self.net = _LastStage(mine, loss_fn) if self.last else _Stage(mine, loss_fn)
        position = None if self.first else 0  # the first stage's input is data: no gradient
        if self.last:
            self.grad = _GradFunction(self.net, position, self.weights, False, return_value=True, sens_param=True)
        else:
            self.grad = _GradFunction(self.net, position, self.weights, False, return_value=False, sens_param=True)
            # PyNative's gradient runs the function while recording it and then again in the
            # gradient program, whose values it returns: the forward's random draws match the
            # recompute's only if the forward takes the same path (with gradients it discards).
            self.forward_pynative = _GradFunction(self.net, position, self.weights, False, return_value=True)
        # GRAPH_MODE without stage_recompute: the stage's gradient cut at its sensitivity
        # (CompiledGraph.split_at_sens), one pair of programs per input shape; None: recompute.
        self.split = None
        if not self.last and not recompute and context.get_context("mode") == context.GRAPH_MODE:
            positions = [] if position is None else [position]
            self.split = _mycel.graph.grad(self.net, positions, False, self.weights, True, False, True)
            self.splits = {}
        # What the recompute must not move twice: the stage's buffers (not trained, but assigned).
        self.buffers = [p for c in mine for p in c.get_parameters() if not p.requires_grad]
        self.shapes = {}  # global batch shape -> (received shape, dtype)
        self.peak_held = 0  # the most micro-batches held at once in a step (the last step's)
        self.peak_held_bytes = 0  # the most bytes held for them (inputs or residuals) at once
        self.group = group  # the stage's data-parallel ranks (None: dp == 1)
        self.scattered = scattered  # ids of weights whose gradients are ReduceScattered (parallel optimizer)

    def _micro_batches(self, t):
        """This rank's rows of each micro-batch: micro-batch i's block dp_index of dp (the whole
        micro-batch on a tensor-parallel stage)."""
        n = t.shape[0]
        if self.tp:
            if n % self.micro:
                raise ValueError(f"PipelineCell: the batch ({n}) must divide into micro_size ({self.micro}) equal "
                                 "parts")
            return [t[i * (n // self.micro):(i + 1) * (n // self.micro)] for i in range(self.micro)]
        if n % (self.micro * self.dp):
            raise ValueError(f"PipelineCell: the batch ({n}) must divide into micro_size ({self.micro}) x "
                             f"data-parallel ({self.dp}) equal parts")
        rows = n // (self.micro * self.dp)
        return [t[(i * self.dp + self.dp_index) * rows:(i * self.dp + self.dp_index + 1) * rows]
                for i in range(self.micro)]

    def _recv(self, tag, shape, dtype, src):
        return ops.Receive(sr_tag=tag, src_rank=src, shape=shape, dtype=dtype)()

    def _send(self, t, tag, dest):
        ops.Send(sr_tag=tag, dest_rank=dest)(t)

    def step(self, x, label, sens):
        """Runs one global batch. Returns (loss, {id(weight): gradient}) where loss is the global
        batch's mean loss on the last stage (0 elsewhere) and each gradient that of the loss times
        `sens` (summed over the stage's data-parallel group: each rank's micro-batch losses are
        already scaled by 1 / (micro_size x dp), their share of the mean)."""
        key = tuple(x.shape)
        xs = self._micro_batches(x) if self.first else None
        ys = self._micro_batches(label) if self.last else None
        # d(mean of micro-batch means over dp) / d(one of them); tensor parallel: every rank's
        # loss is the whole micro-batch's (the gradients are averaged over the stage instead).
        scale = sens / (self.micro * (1 if self.tp else self.dp))
        self.peak_held = self.peak_held_bytes = 0
        with self._stage_pass():
            acc, losses = self._run_actions(key, xs, ys, scale)
        grads = self._reduce(acc)
        if not self.last:
            return Tensor(np.array(0.0, np.float32)), grads
        loss = losses[0]
        for l in losses[1:]:
            loss = loss + l
        loss = loss / self.micro
        if self.group is not None:
            loss = ops.AllReduce(group=self.group)(loss) / self.dp
        return loss, grads

    def _stage_pass(self):
        """A tensor-parallel stage's programs compile and run under the sharding pass over the
        stage's ranks (device_num = its dp ranks, rank = dp_index, groups from world rank
        stage x dp); the process's own settings come back afterwards."""
        import contextlib
        if not self.tp:
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def scope():
            from mycel.parallel import context as pctx
            _mycel.autopar.set_semi_auto(True, self.dp, self.dp_index, rank_base=self.stage * self.dp)
            try:
                yield
            finally:
                pctx._sync_semi_auto()
        return scope()

    def _run_actions(self, key, xs, ys, scale):
        inputs, outputs, out_grads, in_grads, rng = {}, {}, {}, {}, {}
        acc, losses, held = None, [], 0
        saved, held_bytes = {}, 0  # split: micro-batch -> the forward's residuals
        for kind, i in self.actions:
            if kind == "recv_fwd":
                if key not in self.shapes:  # the first step of this batch shape: the header first
                    self.shapes[key] = _from_header(self._recv(_HEADER_TAG, (2 + _MAX_DIMS,), _dt.int64, self.prev))
                inputs[i] = self._recv(2 * i, *self.shapes[key], self.prev)
            elif kind == "fwd":
                h = xs[i] if self.first else inputs[i]
                held += 1
                self.peak_held = max(self.peak_held, held)
                if self.last:
                    loss, grads = self.grad(h, ys[i], Tensor(np.array(scale, np.float32)))
                    losses.append(loss)
                    inputs.pop(i, None)
                    acc = self._accumulate(acc, grads, i)
                    if not self.first:
                        in_grads[i] = grads[0]
                elif self.split is not None:  # the residuals are kept, the input is not
                    sp = self._split_for(h)
                    outputs[i], res = sp.forward(h)
                    saved[i] = (sp, res)
                    inputs.pop(i, None)
                    held_bytes += sum(_nbytes(r) for r in res)
                else:
                    rng[i] = _seed.get_rng_state()
                    outputs[i] = self._forward(h)
                    if self.first:
                        inputs[i] = h
                    held_bytes += _nbytes(h)
                self.peak_held_bytes = max(self.peak_held_bytes, held_bytes)
            elif kind == "send_fwd":
                if i == 0 and ("sent", key) not in self.shapes:
                    self._send(_header(outputs[i]), _HEADER_TAG, self.next)
                    self.shapes[("sent", key)] = True
                out = outputs.pop(i)
                self._send(out, 2 * i, self.next)
                outputs[i] = (tuple(out.shape), out.dtype)  # what the gradient will look like
            elif kind == "recv_bwd":
                shape, dtype = outputs.pop(i)
                out_grads[i] = self._recv(2 * i + 1, shape, dtype, self.next)
            elif kind == "bwd":
                held -= 1
                if self.split is not None:
                    sp, res = saved.pop(i)
                    held_bytes -= sum(_nbytes(r) for r in res)
                    grads = sp.backward(res, out_grads.pop(i))
                    acc = self._accumulate(acc, grads, i)
                    if not self.first:
                        in_grads[i] = grads[0]
                elif not self.last:
                    held_bytes -= _nbytes(inputs[i])
                    grads = self._recompute_grad(inputs.pop(i), out_grads.pop(i), rng.pop(i))
                    acc = self._accumulate(acc, grads, i)
                    if not self.first:
                        in_grads[i] = grads[0]
            else:  # send_bwd
                g = in_grads.pop(i)
                if self.tp:  # every rank's copy of the input gets part of its gradient: the mean
                    g = ops.AllReduce(group=self.group)(g) / self.dp
                self._send(g, 2 * i + 1, self.prev)
        return acc, losses

    def _split_for(self, h):
        """The split gradient for inputs shaped as h (compiled on first use of the shape)."""
        key = (tuple(h.shape), h.dtype)
        sp = self.splits.get(key)
        if sp is None:
            sp = self.splits[key] = self.split.split_at_sens(h)
        return sp

    def _forward(self, h):
        if context.get_context("mode") == context.PYNATIVE_MODE:
            return self.forward_pynative(h)[0]
        return self.net(h)

    def _recompute_grad(self, h, dout, rng):
        """The stage's gradients at input h: the forward again, from the random state its first run
        started from, with the buffers it assigns put back."""
        now = _seed.get_rng_state()
        kept = [b.asnumpy().copy() for b in self.buffers]
        _seed.set_rng_state(rng)
        try:
            return self.grad(h, dout)
        finally:
            _seed.set_rng_state(now)
            for b, v in zip(self.buffers, kept):
                b.set_data(Tensor(v, dtype=b.dtype))

    def _accumulate(self, acc, grads, i):
        w = grads if self.first else grads[1]
        if acc is None:
            return list(w)
        return [a + g for a, g in zip(acc, w)]

    def _reduce(self, acc):
        """The summed gradients over the stage's data-parallel group: one fused AllReduce, and a
        ReduceScatter (this rank's dim-0 block) for each weight the parallel optimizer shards."""
        if self.group is None or not acc:
            return {id(w): g for w, g in zip(self.weights, acc or ())}
        if self.tp:  # each rank differentiated the sum of the stage's equal copies: the mean
            return {id(w): ops.AllReduce(group=self.group)(g) / self.dp for w, g in zip(self.weights, acc)}
        out = {id(w): ops.ReduceScatter(op="sum", group=self.group)(g)
               for w, g in zip(self.weights, acc) if id(w) in self.scattered}
        rest = [(w, g) for w, g in zip(self.weights, acc) if id(w) not in self.scattered]
        if rest:
            shapes = [tuple(g.shape) for _, g in rest]
            flat = ops.concat([ops.reshape(g, (-1,)) for _, g in rest], 0) if len(rest) > 1 else \
                ops.reshape(rest[0][1], (-1,))
            flat = ops.AllReduce(group=self.group)(flat)
            offs = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
            for k, ((w, _), shape) in enumerate(zip(rest, shapes)):
                out[id(w)] = ops.reshape(flat[int(offs[k]):int(offs[k + 1])], shape)
        return out
