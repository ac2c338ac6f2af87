"""Interleaved 1F1B (set_auto_parallel_context(pipeline_config={"pipeline_interleave": True,
"pipeline_scheduler": "1f1b"})): each of the S ranks holds v model chunks, the cells whose
`pipeline_segment` is c and `pipeline_stage` is the rank; chunk c on rank r is virtual stage
c * S + r, so a micro-batch goes around the ranks v times and the pipeline bubble shrinks by v
(Megatron-LM's interleaved schedule, mycel.parallel.pipeline_schedule.interleaved_actions).

Each chunk computes as a stage of the host-driven pipeline does (pipeline_host.HostPipeline's
programs): a chunk's gradient is cut at its sensitivity (the forward keeps the residuals), the
last virtual stage takes the loss and its gradient at once. Activations and gradients travel
with eager Send/Receive tagged by the virtual-stage boundary and micro-batch; shapes travel in
headers in the first step of each batch shape."""
import numpy as np

from mycel import context, ops
from mycel.common import dtype as _dt
from mycel.common.tensor import Tensor
from mycel.nn.wrap.pipeline_host import _HEADER_TAG, _MAX_DIMS, HostPipeline, _from_header, _header, _nbytes
from mycel.parallel.pipeline_schedule import interleaved_actions


class InterleavedPipeline:
    """One rank's runner: `chunks[c]` are the cells of its virtual stage c * stages + rank."""

    def __init__(self, chunks, loss_fn, rank, stages, micro):
        if context.get_context("mode") != context.GRAPH_MODE:
            raise NotImplementedError("PipelineCell: pipeline_interleave runs in GRAPH_MODE only (each chunk's "
                                      "gradient is a compiled program cut at its sensitivity)")
        self.rank, self.stages, self.micro = rank, stages, micro
        self.virtual = stages * len(chunks)
        self.parts = []
        for c, mine in enumerate(chunks):
            weights = [p for cell in mine for p in cell.trainable_params()]
            part = HostPipeline("1f1b", mine, loss_fn, weights, c * stages + rank, self.virtual, 0, 1, micro)
            self.parts.append(part)
        self.actions = interleaved_actions(stages, len(chunks), micro)[rank]
        self.shapes = {}
        self.peak_held = self.peak_held_bytes = 0

    def _tag(self, k, i, backward):
        """The tag of the boundary into virtual stage k, micro-batch i."""
        return 2 * (k * self.micro + i) + (1 if backward else 0)

    def step(self, x, label, sens):
        """One global batch: (mean loss on the rank holding the last virtual stage, 0 elsewhere;
        {id(weight): gradient} for every chunk's weights)."""
        S, M = self.stages, self.micro
        n = x.shape[0]
        if n % M:
            raise ValueError(f"PipelineCell: the batch ({n}) must divide into micro_size ({M}) equal parts")
        rows = n // M
        key = tuple(x.shape)
        scale = Tensor(np.array(sens / M, np.float32))
        inputs, outputs, out_grads, in_grads, saved, sent = {}, {}, {}, {}, {}, {}
        acc = [None] * len(self.parts)
        losses, held, held_bytes = [], 0, 0
        self.peak_held = self.peak_held_bytes = 0
        for kind, c, i, peer in self.actions:
            part, k = self.parts[c], c * S + self.rank
            if kind == "recv_fwd":
                if (key, c) not in self.shapes:
                    self.shapes[(key, c)] = _from_header(ops.Receive(sr_tag=_HEADER_TAG, src_rank=peer,
                                                                     shape=(2 + _MAX_DIMS,), dtype=_dt.int64)())
                shape, dtype = self.shapes[(key, c)]
                inputs[(c, i)] = ops.Receive(sr_tag=self._tag(k, i, False), src_rank=peer, shape=shape,
                                             dtype=dtype)()
            elif kind == "fwd":
                h = x[i * rows:(i + 1) * rows] if k == 0 else inputs.pop((c, i))
                held += 1
                if part.last:
                    loss, grads = part.grad(h, label[i * rows:(i + 1) * rows], scale)
                    losses.append(loss)
                    acc[c] = part._accumulate(acc[c], grads, i)
                    in_grads[(c, i)] = grads[0]
                else:
                    sp = part._split_for(h)
                    outputs[(c, i)], res = sp.forward(h)
                    saved[(c, i)] = (sp, res)
                    held_bytes += sum(_nbytes(r) for r in res)
                self.peak_held = max(self.peak_held, held)
                self.peak_held_bytes = max(self.peak_held_bytes, held_bytes)
            elif kind == "send_fwd":
                out = outputs.pop((c, i))
                if ("sent", key, c) not in self.shapes:
                    ops.Send(sr_tag=_HEADER_TAG, dest_rank=peer)(_header(out))
                    self.shapes[("sent", key, c)] = True
                ops.Send(sr_tag=self._tag(k + 1, i, False), dest_rank=peer)(out)
                sent[(c, i)] = (tuple(out.shape), out.dtype)
            elif kind == "recv_bwd":
                shape, dtype = sent.pop((c, i))
                out_grads[(c, i)] = ops.Receive(sr_tag=self._tag(k + 1, i, True), src_rank=peer, shape=shape,
                                                dtype=dtype)()
            elif kind == "bwd":
                held -= 1
                if not part.last:
                    sp, res = saved.pop((c, i))
                    held_bytes -= sum(_nbytes(r) for r in res)
                    grads = sp.backward(res, out_grads.pop((c, i)))
                    acc[c] = part._accumulate(acc[c], grads, i)
                    if k > 0:
                        in_grads[(c, i)] = grads[0]
            else:  # send_bwd
                ops.Send(sr_tag=self._tag(k, i, True), dest_rank=peer)(in_grads.pop((c, i)))
        grads = {}
        for part, a in zip(self.parts, acc):
            grads.update({id(w): g for w, g in zip(part.weights, a or ())})
        if not losses:
            return Tensor(np.array(0.0, np.float32)), grads
        loss = losses[0]
        for l in losses[1:]:
            loss = loss + l
        return loss / M, grads
