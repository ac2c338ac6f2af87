"""Training and evaluation wrappers (MindSpore's nn.WithLossCell, nn.WithEvalCell,
nn.TrainOneStepCell). Their construct methods use only the graph-mode subset, so a whole training
step (forward, gradient, optimizer update) compiles into one program in GRAPH_MODE."""
import numpy as np

from mycel import _mycel, ops
from mycel.common import autodiff as _autodiff
from mycel.common import dtype as mstype
from mycel.common.parameter import ParameterTuple
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell
from mycel.parallel import context as _pctx


def _graph_mode():
    from mycel import context
    return context.get_context("mode") == context.GRAPH_MODE


def _check_cell(who, arg, value):
    if not isinstance(value, Cell):
        raise TypeError(f"{who}: '{arg}' must be a Cell, got {type(value).__name__}")
    return value


class WithLossCell(Cell):
    """backbone followed by loss_fn: construct(data, label) = loss_fn(backbone(data), label)."""

    def __init__(self, backbone, loss_fn):
        super().__init__(auto_prefix=False)  # keep the backbone's parameter names ("conv1.weight")
        self._backbone = _check_cell("WithLossCell", "backbone", backbone)
        self._loss_fn = _check_cell("WithLossCell", "loss_fn", loss_fn)

    def construct(self, data, label):
        out = self._backbone(data)
        return self._loss_fn(out, label)

    @property
    def backbone_network(self):
        """The wrapped network without its loss."""
        return self._backbone


class WithEvalCell(Cell):
    """Evaluation wrapper: construct(data, label) returns (loss, outputs, label). With
    add_cast_fp32 the outputs and label are cast to float32 first (for low-precision networks)."""

    def __init__(self, network, loss_fn, add_cast_fp32=False):
        super().__init__(auto_prefix=False)
        self._network = _check_cell("WithEvalCell", "network", network)
        self._loss_fn = _check_cell("WithEvalCell", "loss_fn", loss_fn)
        self.add_cast_fp32 = bool(add_cast_fp32)

    def construct(self, data, label):
        outputs = self._network(data)
        if self.add_cast_fp32:  # a Python bool: graph mode folds the branch away
            label = ops.cast(label, mstype.float32)
            outputs = ops.cast(outputs, mstype.float32)
        loss = self._loss_fn(outputs, label)
        return loss, outputs, label


def optimizer_parameters(who, optimizer):
    """The Parameters an optimizer updates (its `parameters`), as a ParameterTuple."""
    params = getattr(optimizer, "parameters", None)
    if params is None:
        raise TypeError(f"{who}: 'optimizer' must have a 'parameters' attribute (the Parameters it "
                        f"updates), got {type(optimizer).__name__}")
    return params if isinstance(params, ParameterTuple) else ParameterTuple(params)


class _Identity(Cell):
    """Returns its input (the grad_reducer outside data-parallel mode)."""

    def construct(self, x):
        return x


class TrainOneStepCell(Cell):
    """One training step: construct(*inputs) runs network(*inputs) (which returns the loss), takes
    the gradients of the loss w.r.t. the optimizer's parameters with output sensitivity `sens`, and
    applies optimizer(grads). Returns the loss, ordered after the update by ops.depend."""

    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.network = _check_cell("TrainOneStepCell", "network", network)
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer_parameters("TrainOneStepCell", optimizer)
        if isinstance(sens, bool) or not isinstance(sens, (int, float)):
            raise TypeError(f"TrainOneStepCell: 'sens' must be a float, got {type(sens).__name__}")
        self.sens = float(sens)
        # As in MindSpore (subclasses use it): the sensitivity passed in, filled to the loss's shape.
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        # The step itself takes the loss with its gradients, so the forward runs once: a network
        # whose forward updates state (BatchNorm's moving statistics) updates it once per step.
        self.value_and_grad = _autodiff.value_and_grad(self.network, None, self.weights)
        # Data parallel (MindSpore's rule): gradients are reduced across ranks before the update.
        self.reducer_flag = _pctx._is_data_parallel() or _pctx._is_semi_auto()
        self.grad_reducer = _Identity()  # as in MindSpore, subclasses may call it in any mode
        if _pctx._is_semi_auto() and _pctx._device_num() > 1 and \
                _pctx.get_auto_parallel_context("pipeline_stages") > 1:
            # Pipeline: each weight lives on one stage and gets its whole gradient there; the
            # stage keeps only its own weights (and optimizer state).
            self.reducer_flag = False
            from mycel.nn.wrap.pipeline import PipelineCell
            object.__setattr__(self, "_pipeline_shards", None)
            if isinstance(self.network, PipelineCell):
                self.network.release_other_stages(self.optimizer)
                if _pctx.get_auto_parallel_context("enable_parallel_optimizer") and self.network.tp:
                    raise NotImplementedError("TrainOneStepCell: enable_parallel_optimizer with tensor-parallel "
                                              "pipeline stages (shard strategies inside the stages) is not "
                                              "implemented")
                if _pctx.get_auto_parallel_context("enable_parallel_optimizer") and self.network.dp > 1:
                    # Sharded over each stage's data-parallel ranks (one rank per stage: nothing to shard).
                    object.__setattr__(self, "_pipeline_shards", self.network.shard_optimizer(self.optimizer))
        elif _pctx._is_semi_auto() and _pctx._device_num() > 1:
            # Semi-auto and auto (in a world of one there is nothing to reduce): every rank holds whole weights and differentiates the sum of the ranks'
            # (equal) losses, so the mean over all ranks of the weights' gradients is the gradient.
            from mycel.nn.wrap.grad_reducer import DistributedGradReducer
            self.grad_reducer = DistributedGradReducer(self.weights, True, _pctx._device_num())
            if _pctx.get_auto_parallel_context("slice_parameters") and _graph_mode():
                # Sliced at the first call, before the step compiles (plan_slices).
                object.__setattr__(self, "_slice_pending", True)
            self._shard_optimizer(1.0 / _pctx._device_num())
        elif self.reducer_flag and not _pctx._is_semi_auto():
            from mycel.nn.wrap.grad_reducer import DistributedGradReducer
            self.grad_reducer = DistributedGradReducer(
                self.weights, _pctx.get_auto_parallel_context("gradients_mean"), _pctx._device_num())
            if _pctx.get_auto_parallel_context("parameter_broadcast"):  # rank 0's weights everywhere
                from mycel.nn.wrap.grad_reducer import broadcast_parameters
                broadcast_parameters(self.network.get_parameters())
            mean = _pctx.get_auto_parallel_context("gradients_mean")
            self._shard_optimizer(1.0 / _pctx._device_num() if mean else 1.0)

    def _shard_optimizer(self, scale):
        """enable_parallel_optimizer: this rank updates a block of each parameter (mycel.parallel.
        optimizer_shard). In GRAPH_MODE the weights themselves are stored as blocks and gathered
        inside the compiled step (with slice_parameters, those the sharding pass left whole,
        once the plan has sliced the others); in PYNATIVE_MODE (where nothing is sliced) the gradients are ReduceScattered to the blocks
        and the blocks gathered eagerly after each step."""
        object.__setattr__(self, "_optimizer_shards", None)
        if not _pctx.get_auto_parallel_context("enable_parallel_optimizer") or _pctx._device_num() == 1:
            return
        from mycel import context
        from mycel.parallel import optimizer_shard
        if context.get_context("mode") == context.GRAPH_MODE:
            object.__setattr__(self, "_shard_scale", scale)
            if not self.__dict__.get("_slice_pending"):
                self._shard_weights()
            return
        plan = optimizer_shard.shard_optimizer(self.optimizer, _mycel.comm.world_rank(), _pctx._device_num())
        object.__setattr__(self, "_optimizer_shards", plan)
        self.grad_reducer = optimizer_shard.ShardedGradReducer(plan, scale)

    def _shard_weights(self):
        """GRAPH_MODE optimizer sharding: the whole weights stored as blocks; each gradient
        reduced over the ranks holding the same copy (a block's gradient arrives summed)."""
        from mycel.parallel import optimizer_shard, sliced
        rank, n = _mycel.comm.world_rank(), _pctx._device_num()
        optimizer_shard.shard_weights(self.weights, self.optimizer, rank, n)
        optimizer_shard.reduce_norms(self.optimizer, rank)  # Lamb: norms of the whole weights
        self.grad_reducer = sliced.MirrorGradReducer(self.weights, n, rank, scale=self._shard_scale)
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "_compiled", None)

    def __call__(self, *inputs, **kwargs):
        from mycel.nn.wrap.pipeline import PipelineCell
        if isinstance(self.network, PipelineCell) and inputs:  # the shapes its stage receives
            self.network.prepare(inputs[0])
            if self.network.host_driven:
                return self._pipeline_step(*inputs)
        if self.__dict__.get("_slice_pending"):
            self.plan_slices(*inputs)
        out = super().__call__(*inputs, **kwargs)
        if self.__dict__.get("_slice_check"):
            self._check_slices()
        if self.__dict__.get("_optimizer_shards") is not None:  # the updated blocks, gathered
            from mycel.parallel.optimizer_shard import gather_parameters
            gather_parameters(self._optimizer_shards)
        return out

    def _pipeline_step(self, x, label):
        """pipeline_scheduler="1f1b" (or GPipe with data-parallel stages): the PipelineCell runs
        the forward and backward passes micro-batch by micro-batch (mycel.nn.wrap.pipeline_host)
        and returns its stage's gradients; the other weights (released on this rank) get empty
        ones."""
        if type(self).construct is not TrainOneStepCell.construct:
            raise NotImplementedError(f"{type(self).__name__}: a host-driven PipelineCell step (1F1B) runs "
                                      "TrainOneStepCell's own step; a subclass's construct would not run")
        loss, grads = self.network.train_step(x, label, self.sens)
        zeros = self.__dict__.setdefault("_pipeline_zeros", {})
        plan = self.__dict__.get("_pipeline_shards")
        full = []
        for k, w in enumerate(self.optimizer.parameters):  # block Parameters where the optimizer is sharded
            g = grads.get(id(plan[k][0] if plan and plan[k] else w))
            if g is None:
                g = zeros.get(id(w))
                if g is None:
                    g = zeros[id(w)] = Tensor(np.zeros(w.shape, w.asnumpy().dtype), dtype=w.dtype)
            full.append(g)
        self.optimizer(tuple(full))
        if plan:  # the updated blocks, gathered over the stage's data-parallel ranks
            from mycel.parallel.optimizer_shard import gather_parameters
            gather_parameters(plan, self.network.group)
        return loss

    def plan_slices(self, *inputs):
        """slice_parameters (on by default under SEMI_AUTO/AUTO_PARALLEL in GRAPH_MODE): before
        the step first compiles, the sharding pass runs on the network's forward for these
        inputs (the step's inputs; tensors or Tensor(shape=..., dtype=...) placeholders) without
        building it, and every weight it splits is stored as this rank's slice with its
        optimizer state, so the step compiles once, against the slices. Called by the first
        step (and by Model.train); a later call does nothing."""
        if not self.__dict__.get("_slice_pending"):
            return
        object.__setattr__(self, "_slice_pending", False)
        if not _graph_mode():
            return  # the pass runs on compiled graphs only: PyNative keeps whole weights
        if type(self).construct not in _planned_constructs():
            # A construct of its own may call the network otherwise: its first step runs with
            # whole weights and they are sliced after it (one more compile).
            _mycel.autopar.take_planned()  # layouts planned before this step are not its own
            object.__setattr__(self, "_slice_check", True)
            return
        _mycel.autopar.take_planned()
        self.network._graph_program().graph.plan_sharding(*inputs)
        self._slice_weights()
        object.__setattr__(self, "_slice_check", True)

    def _check_slices(self):
        """After the first compiled step: a weight the step's pass split but the plan left
        whole (a plan that differed from the step's) is sliced now, and the step compiles
        again; with a plan that matched, there is none."""
        object.__setattr__(self, "_slice_check", False)
        self._slice_weights()

    def _slice_weights(self):
        """Stores the weights the sharding pass split (since the last take_planned) and their
        optimizer state as this rank's slices, reduces their gradients over their mirror groups,
        and drops the compiled graphs (mycel.parallel.sliced)."""
        from mycel.parallel import sliced
        rank = _mycel.comm.world_rank()
        if not sliced.slice_parameters(self.weights, self.optimizer, rank) and \
                self.__dict__.get("_sliced_once"):
            return  # nothing new: the compiled step stays
        object.__setattr__(self, "_sliced_once", True)
        if _pctx.strategy_save_path():
            self._save_strategy(_pctx.strategy_save_path())
        from mycel.parallel.optimizer_shard import reduce_norms
        reduce_norms(self.optimizer, rank)  # Lamb: norms of the whole weights
        self.grad_reducer = sliced.MirrorGradReducer(self.weights, _pctx._device_num(), rank)
        if self.__dict__.get("_shard_scale") is not None:  # enable_parallel_optimizer: the rest
            self._shard_weights()
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "_compiled", None)

    def _save_strategy(self, path):
        """strategy_ckpt_save_file: every weight's layout as MindSpore's strategy file (a weight
        left whole is replicated over the devices)."""
        from mycel.parallel import strategy_file
        n = _pctx._device_num()
        layouts = {p.name: getattr(p, "layout", None) or ((n,), (-1,) * len(p.shape), tuple(p.shape))
                   for p in self.weights}
        searched = _mycel.autopar.searched_strategies() if _pctx.get_auto_parallel_context(
            "parallel_mode") == "auto_parallel" else []
        strategy_file.save_strategy_file(path, layouts, op_strategies=searched)

    def construct(self, *inputs):
        loss, grads = self.value_and_grad(*inputs)
        if self.sens != 1.0:  # gradients are linear in the output sensitivity
            scaled = ()
            for g in grads:
                scaled = scaled + (g * self.sens,)
            grads = scaled
        if self.reducer_flag:
            grads = self.grad_reducer(grads)
        loss = ops.depend(loss, self.optimizer(grads))
        return loss


def _planned_constructs():
    """The steps whose construct calls network(*inputs) with the step's own inputs, so a plan of
    the network's forward for them is the plan of the step's gradient."""
    from mycel.nn.wrap.loss_scale import TrainOneStepWithLossScaleCell
    return (TrainOneStepCell.construct, TrainOneStepWithLossScaleCell.construct)
