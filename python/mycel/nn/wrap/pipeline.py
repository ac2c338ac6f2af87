"""nn.PipelineCell: pipeline parallelism over the ranks of an mpirun job
(set_auto_parallel_context(pipeline_stages=S); the N processes form S stages of N / S
data-parallel ranks each, rank r on stage r // (N / S)).

The network is a WithLossCell whose backbone is a SequentialCell; each of its cells says its
stage with `cell.pipeline_stage = k` (MindSpore's attribute; stages never decrease along the
sequence). A rank runs only its stage's cells, and TrainOneStepCell releases the other stages'
weights and optimizer state on it (release_other_stages). The global batch is cut into
`micro_size` micro-batches; every rank feeds the whole global batch (full_batch).

Two schedules (set_auto_parallel_context(pipeline_config={"pipeline_scheduler": ...})):

- "gpipe" (the default; one stage per rank): one compiled step. For each micro-batch, stage 0
  runs its cells and Sends the activation, a middle stage Receives, runs and Sends, the last stage
  Receives, runs and takes the loss. The step's loss is the last stage's mean over micro-batches
  (0 on the other stages, made to depend on what they sent). Differentiating the sum of every
  rank's loss (the collectives' convention) carries each activation's gradient back through
  Receive -> Send and Send -> Receive, so every stage gets its weights' gradients of the global
  loss. All forwards come before the backward: a stage holds every micro-batch's activations.
  Receive needs the activation's shape: before the first step TrainOneStepCell calls prepare(x),
  which passes the shapes along the stages.
- "1f1b": the host runs each stage's schedule micro-batch by micro-batch (pipeline_host), so a
  stage holds at most S - s micro-batches. With data-parallel stages GPipe's order runs the
  same way; the dp ranks of a stage split each micro-batch and sum their gradients. When the
  backbone's ops carry shard strategies, a stage's ranks are tensor parallel instead: each runs
  whole micro-batches through programs the sharding pass split over the stage's ranks, and their
  gradients are averaged.

Either way the steps equal one process's on the whole batch."""
import numpy as np

from mycel import context, ops
from mycel.common import dtype as mstype
from mycel.common.tensor import Tensor
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
        if stages > 1 and _pctx.get_auto_parallel_context("parallel_mode") != _pctx.ParallelMode.SEMI_AUTO_PARALLEL:
            raise ValueError(f"PipelineCell: pipeline_stages={stages} needs parallel_mode "
                             f"SEMI_AUTO_PARALLEL, got {_pctx.get_auto_parallel_context('parallel_mode')} (each "
                             "stage's gradients stay on its ranks; the strategy search does not cut stages)")
        world = _mycel.comm.world_size() if _mycel.comm.initialized() else 1
        if world % stages:
            raise ValueError(f"PipelineCell: pipeline_stages ({stages}) must divide the number of processes "
                             f"({world}): each stage runs on processes / stages data-parallel ranks")
        cells = backbone.cell_list
        stage_of = [getattr(c, "pipeline_stage", 0) for c in cells]
        config = _pctx.get_auto_parallel_context("pipeline_config")
        self.interleave = config["pipeline_interleave"] and stages > 1
        self.chunks = 1
        if self.interleave:  # virtual stages: segment c of rank r is c * stages + r
            segment = [getattr(c, "pipeline_segment", 0) for c in cells]
            self.chunks = max(segment) + 1
            virtual = [g * stages + s for g, s in zip(segment, stage_of)]
            if any(not 0 <= s < stages for s in stage_of) or min(segment) < 0 or virtual != sorted(virtual) or \
                    sorted(set(virtual)) != list(range(stages * self.chunks)):
                raise ValueError(f"PipelineCell: with pipeline_interleave the backbone's cells must have "
                                 f"pipeline_stage 0 .. {stages - 1} and pipeline_segment 0 .. v - 1, the virtual "
                                 f"stages segment x {stages} + stage each used, never decreasing; got stages "
                                 f"{stage_of}, segments {segment}")
            if config["pipeline_scheduler"] != "1f1b":
                raise ValueError("PipelineCell: pipeline_interleave needs pipeline_scheduler '1f1b'")
            if world != stages:
                raise NotImplementedError(f"PipelineCell: pipeline_interleave runs one rank per stage "
                                          f"(pipeline_stages {stages}, {world} processes)")
        elif any(not 0 <= s < stages for s in stage_of) or stage_of != sorted(stage_of) or \
                sorted(set(stage_of)) != list(range(stages)):
            raise ValueError(f"PipelineCell: the backbone's cells must have pipeline_stage 0 .. {stages - 1}, "
                             f"each used, never decreasing; got {stage_of}")
        self.scheduler = _pctx.get_auto_parallel_context("pipeline_config")["pipeline_scheduler"]
        self.recompute = _pctx.get_auto_parallel_context("pipeline_config")["stage_recompute"]
        rank = _mycel.comm.world_rank() if _mycel.comm.initialized() else 0
        self.dp = world // stages
        # GPipe with one rank per stage is one compiled step; 1F1B, and GPipe with data-parallel
        # stages, run on the host micro-batch by micro-batch (pipeline_host).
        self.host_driven = self.scheduler == "1f1b" or self.dp > 1 or self.interleave
        self.rank, self.stage, self.dp_index = rank, rank // self.dp, rank % self.dp
        # Tensor parallel inside the stages: when the backbone's ops carry shard strategies, a
        # stage's N / S ranks run its programs under the sharding pass (device_num N / S, their
        # groups on the stage's world ranks), each on whole micro-batches, instead of splitting
        # the micro-batches (data parallel; a strategy that splits the batch dim still does).
        self.tp = self.dp > 1 and _has_strategies(cells)
        self.stages, self.micro_size = stages, micro_size
        self.network = network
        # A plain tuple, not a child Cell: registering the cells again would rename their weights.
        object.__setattr__(self, "_mine", tuple(c for c, s in zip(cells, stage_of) if s == self.stage))
        object.__setattr__(self, "_others", tuple(c for c, s in zip(cells, stage_of) if s != self.stage))
        self._loss_fn = loss_fn
        self._first, self._last = self.stage == 0, self.stage == stages - 1
        self._steps = None if not self._first else self._micro_steps(None, None)
        object.__setattr__(self, "_runner", None)
        self.group = None  # the stage's data-parallel ranks (created by all of them, together)
        if self.dp > 1:
            from mycel.communication import create_group
            self.group = f"pipeline_stage{self.stage}_{'tp' if self.tp else 'dp'}"
            create_group(self.group, [self.stage * self.dp + d for d in range(self.dp)])
        object.__setattr__(self, "_prepared", False)

    def stage_parameters(self):
        """The trainable Parameters of this rank's stage."""
        return [p for c in self._mine for p in c.trainable_params()]

    def release_other_stages(self, optimizer=None):
        """Drops the values of the other stages' Parameters (and of the optimizer's state for
        them) on this rank: each becomes an empty tensor of its dtype, and keeps its shape in
        `p.pipeline_shape`. Returns the number of Parameters released. TrainOneStepCell calls it:
        a stage never reads another stage's weights (shapes travel with the activations)."""
        if self.stages == 1:
            return 0
        from mycel.parallel.sliced import _states_of
        mine = {id(p) for c in self._mine for p in c.get_parameters()}
        n = 0
        for c in self._others:
            for p in c.get_parameters():
                if id(p) in mine or getattr(p, "pipeline_shape", None) is not None:
                    continue
                states = _states_of(optimizer, p) if optimizer is not None else []
                for q in [p] + states:
                    q.pipeline_shape = tuple(q.shape)
                    q._rebind(Tensor(np.zeros((0,), q.asnumpy().dtype), dtype=q.dtype))
                n += 1
        return n

    def shard_optimizer(self, optimizer):
        """enable_parallel_optimizer with data-parallel stages: each of a stage's dp ranks updates
        a 1/dp block (dim 0) of each of the stage's weights whose dim 0 divides by dp, and keeps
        that block of its state (mycel.parallel.optimizer_shard over the stage's group). Their
        gradients are ReduceScattered over the group; TrainOneStepCell gathers the blocks after
        the update. Returns the plan (None entries for what stays whole)."""
        from mycel.parallel.optimizer_shard import shard_optimizer
        plan = shard_optimizer(optimizer, self.dp_index, self.dp, only=self.stage_parameters(), group=self.group)
        object.__setattr__(self, "scattered", frozenset(id(e[0]) for e in plan if e is not None))
        return plan

    scattered = frozenset()  # ids of the weights whose gradients are ReduceScattered

    def train_step(self, x, label, sens=1.0):
        """A host-driven step (1F1B, or GPipe with data-parallel stages): runs the schedule's
        actions (mycel.nn.wrap.pipeline_host). Returns (loss, {id(Parameter): gradient}) for this
        stage's weights."""
        from mycel.nn.wrap.pipeline_host import HostPipeline
        if self._runner is None and self.interleave:
            from mycel.nn.wrap.pipeline_interleave import InterleavedPipeline
            chunks = [[c for c in self._mine if getattr(c, "pipeline_segment", 0) == g] for g in range(self.chunks)]
            object.__setattr__(self, "_runner", InterleavedPipeline(chunks, self._loss_fn, self.stage, self.stages,
                                                                    self.micro_size))
        if self._runner is None:
            object.__setattr__(self, "_runner", HostPipeline(self.scheduler, self._mine, self._loss_fn,
                                                             self.stage_parameters(), self.stage, self.stages,
                                                             self.dp_index, self.dp, self.micro_size, self.group,
                                                             self.scattered, self.recompute, self.tp))
        return self._runner.step(x, label, sens)

    @property
    def peak_held(self):
        """Host-driven steps: the most micro-batches this stage held at once (between their
        forward and their backward) during the last step; None for the compiled GPipe step."""
        return self._runner.peak_held if self._runner is not None else None

    def _micro_steps(self, shape, dtype):
        return CellList([_MicroStep(self._mine, self._loss_fn, i, self.rank, self._first, self._last, shape, dtype)
                         for i in range(self.micro_size)])

    def prepare(self, x):
        """GPipe: finds the shape of what this stage receives and builds the Receives. The shapes
        travel along the stages (pipeline_host's header): stage s receives its input's shape,
        runs its own cells eagerly on zeros of that shape (in eval mode, so no statistics move)
        and sends its output's shape on. Called by TrainOneStepCell before the first step."""
        dp = 1 if self.tp else self.dp
        if x.shape[0] % (self.micro_size * dp):
            raise ValueError(f"PipelineCell: the batch ({x.shape[0]}) must divide into micro_size "
                             f"({self.micro_size}) x data-parallel ({dp}) equal parts")
        if self.host_driven or self.__dict__.get("_prepared") or self.stages == 1:
            return
        object.__setattr__(self, "_prepared", True)
        from mycel.nn.wrap import pipeline_host as p1
        mode = context.get_context("mode")
        context.set_context(mode=context.PYNATIVE_MODE)
        training = [(cell, cell.training) for c in self._mine for _, cell in c.cells_and_names()]
        try:
            if self._first:
                h = x[: x.shape[0] // self.micro_size]
            else:
                shape, dtype = p1._from_header(ops.Receive(sr_tag=p1._HEADER_TAG, src_rank=self.rank - 1,
                                                           shape=(2 + p1._MAX_DIMS,), dtype=mstype.int64)())
                h = Tensor(np.zeros(shape, _np_dtype(dtype)), dtype=dtype)
                received = (shape, dtype)
            if not self._last:
                for c in self._mine:
                    c.set_train(False)
                for c in self._mine:
                    h = c(h)
                ops.Send(sr_tag=p1._HEADER_TAG, dest_rank=self.rank + 1)(p1._header(h))
        finally:
            for cell, t in training:  # parents first: each sub-cell ends with its own flag
                cell.set_train(t)
            context.set_context(mode=mode)
        if not self._first:
            self._steps = self._micro_steps(*received)

    def construct(self, x, label):
        if self.micro_size == 1:  # a one-part split is not a tuple
            return self._steps[0](x, label)
        xs = ops.split(x, axis=0, output_num=self.micro_size)
        ys = ops.split(label, axis=0, output_num=self.micro_size)
        total = 0.0
        for x_i, y_i, step in zip(xs, ys, self._steps):
            total = total + step(x_i, y_i)
        return total / self.micro_size


def _has_strategies(cells):
    """Whether any op of the cells (or of their sub-cells) has a Primitive.shard strategy."""
    for c in cells:
        for _, cell in c.cells_and_names():
            if any(getattr(v, "_in_strategy", None) is not None for v in vars(cell).values()):
                return True
    return False


def _np_dtype(dtype):
    return np.float32 if dtype == mstype.bfloat16 else np.dtype(dtype.name)


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
