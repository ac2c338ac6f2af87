"""nn.PipelineCell: pipeline parallelism (GPipe schedule) over the ranks of an mpirun job, one
stage per rank (set_auto_parallel_context(pipeline_stages=N) with N processes).

The network is a WithLossCell whose backbone is a SequentialCell; each of its cells says its
stage with `cell.pipeline_stage = k` (MindSpore's attribute; stages never decrease along the
sequence). Rank k runs only stage k's cells. The global batch is cut into `micro_size`
micro-batches; for each, stage 0 runs its cells on the micro-batch and Sends the activation, a
middle stage Receives, runs and Sends, the last stage Receives, runs and takes the loss. The
step's loss is the last stage's mean over micro-batches (0 on the other stages, made to depend on
what they sent). Differentiating the sum of every rank's loss (the collectives' convention)
carries each activation's gradient back through Receive -> Send and Send -> Receive, so every
stage gets its weights' gradients of the global loss: the steps equal one process's on the whole
batch. Every rank feeds the whole global batch (full_batch); each keeps the whole network, but
only its stage's weights receive gradients (the others get zeros: no weight decay on them).

Receive needs the activation's shape: before the first step TrainOneStepCell calls prepare(x),
which runs the earlier stages' cells eagerly on one micro-batch to find it."""
from mycel import context, ops
from mycel.nn.cell import Cell, CellList, SequentialCell
from mycel.parallel import context as _pctx

__all__ = ["PipelineCell"]


class PipelineCell(Cell):
    def __init__(self, network, micro_size):
        super().__init__(auto_prefix=False)
        from mycel import _mycel
        if isinstance(micro_size, bool) or not isinstance(micro_size, int) or micro_size < 1:
            raise ValueError(f"PipelineCell: micro_size must be an int >= 1, got {micro_size!r}")
        backbone, loss_fn = getattr(network, "_backbone", None), getattr(network, "_loss_fn", None)
        if not isinstance(backbone, SequentialCell) or loss_fn is None:
            raise TypeError("PipelineCell: network must be a WithLossCell whose backbone is a SequentialCell "
                            f"of cells with a pipeline_stage, got {type(network).__name__}")
        stages = _pctx.get_auto_parallel_context("pipeline_stages")
        world = _mycel.comm.world_size() if _mycel.comm.initialized() else 1
        if stages != world:
            raise ValueError(f"PipelineCell: pipeline_stages ({stages}) must equal the number of processes ({world}): "
                             f"one stage per rank")
        cells = backbone.cell_list
        stage_of = [getattr(c, "pipeline_stage", 0) for c in cells]
        if any(not 0 <= s < stages for s in stage_of) or stage_of != sorted(stage_of) or \
                sorted(set(stage_of)) != list(range(stages)):
            raise ValueError(f"PipelineCell: the backbone's cells must have pipeline_stage 0 .. {stages - 1}, "
                             f"each used, never decreasing; got {stage_of}")
        self.rank = _mycel.comm.world_rank() if _mycel.comm.initialized() else 0
        self.stages, self.micro_size = stages, micro_size
        self.network = network
        # A plain tuple, not a child Cell: registering the cells again would rename their weights.
        object.__setattr__(self, "_mine", tuple(c for c, s in zip(cells, stage_of) if s == self.rank))
        self._before = [c for c, s in zip(cells, stage_of) if s < self.rank]
        self._loss_fn = loss_fn
        self._first, self._last = self.rank == 0, self.rank == stages - 1
        self._steps = None if not self._first else self._micro_steps(None, None)

    def _micro_steps(self, shape, dtype):
        return CellList([_MicroStep(self._mine, self._loss_fn, i, self.rank, self._first, self._last, shape, dtype)
                         for i in range(self.micro_size)])

    def prepare(self, x):
        """Finds the shape of what this stage receives (one micro-batch through the earlier
        stages, eagerly) and builds the Receives. Called by TrainOneStepCell before the first step."""
        if x.shape[0] % self.micro_size:
            raise ValueError(f"PipelineCell: the batch ({x.shape[0]}) must divide into micro_size "
                             f"({self.micro_size}) equal micro-batches")
        if self._steps is not None:
            return
        mode = context.get_context("mode")
        context.set_context(mode=context.PYNATIVE_MODE)
        try:
            h = x[: x.shape[0] // self.micro_size]
            for c in self._before:
                h = c(h)
        finally:
            context.set_context(mode=mode)
        self._steps = self._micro_steps(tuple(h.shape), h.dtype)

    def construct(self, x, label):
        if self.micro_size == 1:  # a one-part split is not a tuple
            return self._steps[0](x, label)
        xs = ops.split(x, axis=0, output_num=self.micro_size)
        ys = ops.split(label, axis=0, output_num=self.micro_size)
        total = 0.0
        for x_i, y_i, step in zip(xs, ys, self._steps):
            total = total + step(x_i, y_i)
        return total / self.micro_size


class _MicroStep(Cell):
    """One micro-batch on this stage: receive (or take the input), run the stage's cells, send (or
    take the loss). The flags are constants: graph mode keeps one branch."""

    def __init__(self, mine, loss_fn, tag, rank, first, last, shape, dtype):
        super().__init__(auto_prefix=False)
        object.__setattr__(self, "_mine", mine)  # the network's cells, not children of this one
        self._loss_fn = loss_fn
        self._first, self._last = first, last
        if not first:
            self._recv = ops.Receive(sr_tag=tag, src_rank=rank - 1, shape=shape, dtype=dtype)
        if not last:
            self._send = ops.Send(sr_tag=tag, dest_rank=rank + 1)

    def construct(self, x, label):
        if self._first:
            h = x
        else:
            h = self._recv()
        for cell in self._mine:
            h = cell(h)
        if self._last:
            return self._loss_fn(h, label)
        return ops.reduce_sum(self._send(h)) * 0.0
