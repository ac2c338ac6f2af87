"""Optimizer: the base Cell of every optimizer (MindSpore's nn.Optimizer).

It owns what all optimizers share: the parameters (a list or parameter groups with their own lr and
weight_decay), the learning rate (a float, a per-step list or Tensor indexed by global_step, or a
LearningRateSchedule Cell), weight decay applied to the gradients (g + wd * p), loss-scale
division, and the int32 `global_step` counter. `construct(gradients)` of a subclass is written in
graph mode's Python subset (zip loops over tuples, ops calls, `if` on Python constants, updates by
ops.assign) so it can run inside one compiled training step.
"""
import numpy as np

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common import insight_scope as _insight_scope
from mycel.common.parameter import Parameter, ParameterTuple
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell, CellList
from mycel.ops.multitype import Map
from mycel.nn.learning_rate_schedule import LearningRateSchedule


class _ConstantLR(Cell):
    """A fixed learning rate held in a Parameter (so a checkpoint keeps it and users may set it)."""

    def __init__(self, value):
        super().__init__(auto_prefix=False)
        self.learning_rate = Parameter(Tensor(np.float32(value)), name="learning_rate", requires_grad=False)

    def construct(self, global_step):
        return self.learning_rate


class _IteratorLR(Cell):
    """A learning rate per step: entry global_step of a list, the last one once the list runs out."""

    def __init__(self, values):
        super().__init__(auto_prefix=False)
        self.learning_rate = Parameter(Tensor(np.asarray(values, np.float32)), name="learning_rate",
                                       requires_grad=False)
        self.last = int(len(values)) - 1

    def construct(self, global_step):
        return ops.gather(self.learning_rate, ops.minimum(global_step, self.last), 0)


def _lr_cell(who, arg, lr):
    """The Cell computing a learning rate given in any of MindSpore's forms."""
    if isinstance(lr, LearningRateSchedule):
        return lr, True
    if isinstance(lr, bool):
        raise TypeError(f"{who}: argument '{arg}' must be a float, list, Tensor or LearningRateSchedule, got bool")
    if isinstance(lr, (int, float)):
        if lr < 0:
            raise ValueError(f"{who}: argument '{arg}' must be >= 0, got {lr}")
        return _ConstantLR(float(lr)), False
    if isinstance(lr, Tensor):
        values = lr.asnumpy()
        if values.ndim == 0:
            return _lr_cell(who, arg, float(values))
        if values.ndim != 1 or values.size == 0 or values.dtype.kind != "f":
            raise ValueError(f"{who}: argument '{arg}' as a Tensor must be a float scalar or a non-empty "
                             f"1-D float Tensor of per-step values, got shape {tuple(values.shape)} "
                             f"dtype {lr.dtype}")
        lr = values.tolist()
    if isinstance(lr, (list, tuple)):
        if not lr or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in lr):
            raise TypeError(f"{who}: argument '{arg}' as a list must be a non-empty list of floats (one per "
                            f"step), got {list(lr)[:4]!r}")
        if min(lr) < 0:
            raise ValueError(f"{who}: argument '{arg}' must hold values >= 0, got min {min(lr)}")
        return _IteratorLR(lr), True
    raise TypeError(f"{who}: argument '{arg}' must be a float, list, Tensor or LearningRateSchedule, "
                    f"got {type(lr).__name__}")


def _check_weight_decay(who, arg, wd):
    if isinstance(wd, bool) or not isinstance(wd, (int, float)):
        raise TypeError(f"{who}: argument '{arg}' must be a float, got {type(wd).__name__} {wd!r}")
    if wd < 0:
        raise ValueError(f"{who}: argument '{arg}' must be >= 0, got {wd}")
    return float(wd)


def _check_param_list(who, arg, params):
    params = list(params) if isinstance(params, (list, tuple)) or hasattr(params, "__iter__") else params
    if not isinstance(params, list):
        raise TypeError(f"{who}: argument '{arg}' must be a list of Parameters, got {type(params).__name__}")
    for i, p in enumerate(params):
        if not isinstance(p, Parameter):
            raise TypeError(f"{who}: argument '{arg}' item {i} must be a Parameter, got {type(p).__name__}")
    return params


def _parse_groups(who, parameters, learning_rate, weight_decay):
    """[(params, lr, wd)] from a Parameter list or a list of group dicts; a group without "lr" or
    "weight_decay" takes the optimizer's. Returns (groups, is_group, is_group_lr)."""
    if isinstance(parameters, (str, bytes, Tensor)) or not hasattr(parameters, "__iter__"):
        raise TypeError(f"{who}: argument 'params' must be a list of Parameters or of group dicts, "
                        f"got {type(parameters).__name__}")
    items = list(parameters)
    if not items:
        raise ValueError(f"{who}: argument 'params' must not be empty")
    if not any(isinstance(x, dict) for x in items):
        return [(_check_param_list(who, "params", items), learning_rate, weight_decay)], False, False
    groups, group_lr = [], False
    for i, g in enumerate(items):
        if not isinstance(g, dict):
            raise TypeError(f"{who}: argument 'params' mixes dicts and {type(g).__name__} (item {i}); use "
                            f"either Parameters or group dicts")
        unknown = set(g) - {"params", "lr", "weight_decay", "order_params", "grad_centralization"}
        if unknown:
            raise ValueError(f"{who}: group {i} has unknown keys {sorted(unknown)}; allowed: params, lr, "
                             f"weight_decay, order_params")
        if "params" not in g:
            if "order_params" in g:
                continue  # MindSpore's parameter order hint: the groups already fix our order
            raise ValueError(f"{who}: group {i} must have the key 'params'")
        group_lr = group_lr or "lr" in g
        groups.append((_check_param_list(who, f"params[{i}]['params']", g["params"]),
                       g.get("lr", learning_rate), g.get("weight_decay", weight_decay)))
    return groups, True, group_lr


class Optimizer(Cell):
    """Base class of optimizers: Optimizer(learning_rate, parameters, weight_decay=0.0, loss_scale=1.0).
    Subclasses define construct(gradients), the gradients in the order of self.parameters."""

    def __init__(self, learning_rate, parameters, weight_decay=0.0, loss_scale=1.0):
        super().__init__(auto_prefix=False)
        who = type(self).__name__
        # What MindSpore's Optimizer gives subclasses to apply an update over the parameters.
        self.map_, self.map_reverse = Map(), Map(None, True)
        _check_weight_decay(who, "weight_decay", weight_decay)
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)) or loss_scale <= 0:
            raise ValueError(f"{who}: argument 'loss_scale' must be a float > 0, got {loss_scale!r}")
        groups, self.is_group, self.is_group_lr = _parse_groups(who, parameters, learning_rate, weight_decay)

        params, seen, param_wd, param_lr_cells, lr_cells = [], set(), [], [], []
        dynamic = False
        for i, (ps, lr, wd) in enumerate(groups):
            arg = f"params[{i}]['lr']" if self.is_group_lr else "learning_rate"
            cell, is_dynamic = _lr_cell(who, arg, lr)
            dynamic = dynamic or is_dynamic
            lr_cells.append(cell)
            wd = _check_weight_decay(who, f"params[{i}]['weight_decay']" if self.is_group else "weight_decay", wd)
            for p in ps:
                if id(p) in seen:
                    raise ValueError(f"{who}: Parameter {p.name!r} appears more than once in 'params'")
                seen.add(id(p))
                params.append(p)
                param_wd.append(wd)
                param_lr_cells.append(cell)
        if not params:
            raise ValueError(f"{who}: argument 'params' holds no Parameter")
        for p in params:
            if p.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
                raise TypeError(f"{who}: Parameter {p.name!r} must be floating point to be optimized, got {p.dtype}")

        self.dynamic_lr = dynamic
        self.loss_scale = float(loss_scale)
        self.reciprocal_scale = 1.0 / float(loss_scale)
        self.parameters = ParameterTuple(params)
        self._parameters = self.parameters
        # Weight decay: one float for all parameters, or one per parameter when groups set it.
        self.weight_decay = tuple(param_wd) if self.is_group else float(weight_decay)
        self._param_wd = tuple(param_wd)                 # per parameter, for decoupled decay
        self.exec_weight_decay = any(wd > 0 for wd in param_wd)
        if self.is_group_lr:
            self.learning_rate = CellList(lr_cells)     # registered, so checkpoints keep each group's lr
        elif isinstance(lr_cells[0], (_ConstantLR, _IteratorLR)):
            # MindSpore's optimizer.learning_rate is the Parameter itself (users and callbacks
            # assign to it); the Cell reading it stays in _param_lr_cells for get_lr.
            self.learning_rate = lr_cells[0].learning_rate
        else:
            self.learning_rate = lr_cells[0]            # a LearningRateSchedule Cell
        # The lr Cell of each parameter (one shared Cell without group lrs), zipped with the
        # parameters in construct: graph mode unrolls that loop, so no per-parameter indexing.
        self._param_lr_cells = tuple(param_lr_cells)
        self.global_step = Parameter(Tensor(np.zeros([1], np.int32)), name="global_step", requires_grad=False)

    # ---- state ----
    def _register_state(self, state):
        """Registers optimizer state (moments, ...) so parameters_and_names and checkpoints see it."""
        for p in state:
            self._params[p.name] = p
        return state

    def _clone_state(self, prefix, init="zeros"):
        """One state Parameter per parameter, named `prefix.<param name>`, registered."""
        return self._register_state(self.parameters.clone(prefix=prefix, init=init))

    def _filled_state(self, prefix, value):
        """One state Parameter per parameter filled with `value` (accumulators' initial value)."""
        state = self._clone_state(prefix)
        for h in state:
            h.set_data(h.asnumpy() + value)
        return state

    def _scalar_state(self, name, value, dtype=np.float32):
        """A registered scalar state Parameter (beta powers, ...)."""
        p = Parameter(Tensor(np.asarray(value, dtype)), name=name, requires_grad=False)
        self._params[name] = p
        return p

    # ---- called from construct (graph-mode subset) ----
    def get_lr(self):
        """The learning rate of this step (a tuple with one per parameter when groups set lr);
        advances global_step, as MindSpore's get_lr does."""
        step = self.global_step
        if self.is_group_lr:
            lr = tuple(cell(step).reshape(()) for cell in self._param_lr_cells)
        else:
            lr = self._param_lr_cells[0](step).reshape(())
        return ops.depend(lr, ops.assign(self.global_step, step + 1))

    def get_lr_parameter(self, param):
        """The learning-rate Parameter (constant or per-step list) or schedule Cell of `param`."""
        who = type(self).__name__
        for p, cell in zip(self.parameters, self._param_lr_cells):
            if p is param:
                return cell.learning_rate if isinstance(cell, (_ConstantLR, _IteratorLR)) else cell
        raise ValueError(f"{who}.get_lr_parameter: {getattr(param, 'name', param)!r} is not optimized by this optimizer")

    def _next_step(self):
        """This step's number (a copy of global_step) after scheduling global_step += 1."""
        step = self.global_step + 0
        return ops.depend(step, ops.assign(self.global_step, step + 1))

    def _lr(self, lr_cell, step):
        """A parameter's learning rate at `step`, from its entry of self._param_lr_cells."""
        return lr_cell(step).reshape(())

    def _in_dtype_of(self, p, value):
        """value in p's dtype: an update computed with float32 hyper-parameters is rounded to a
        bfloat16/float16 Parameter (amp O2/O3 casts the Parameters), as MindSpore's Assign does."""
        if value.dtype == p.dtype:
            return value
        return ops.cast(value, p.dtype)

    def _grad(self, p, g, wd):
        """The gradient a coupled-decay optimizer uses: (g / loss_scale) + wd * p, the decay
        only where wd > 0 (a Python constant, so graph mode keeps one branch)."""
        if self.loss_scale != 1.0:
            g = g * self.reciprocal_scale
        if wd > 0.0:
            g = g + wd * p
        return g

    def _decoupled(self, update, p, wd):
        """update + wd * p where wd > 0 (decoupled weight decay). A method, so that graph mode
        branches on the constant wd inside it and the caller's loop stays straight-line."""
        if wd > 0.0:
            update = update + wd * p
        return update

    def _unscale(self, g):
        """g / loss_scale, for optimizers that decouple weight decay from the gradient."""
        if self.loss_scale != 1.0:
            g = g * self.reciprocal_scale
        return g

    def __call__(self, gradients):
        who = type(self).__name__
        if not isinstance(gradients, (tuple, list)):
            raise TypeError(f"{who}: argument 'gradients' must be a tuple of Tensors (one per parameter), "
                            f"got {type(gradients).__name__}")
        if len(gradients) != len(self.parameters):
            raise ValueError(f"{who}: argument 'gradients' must have one gradient per parameter "
                             f"({len(self.parameters)}), got {len(gradients)}")
        # A RowTensor (MindSpore's sparse embedding gradient) updates as its dense form: what
        # MindSpore's non-lazy sparse optimizers compute (untouched rows see a zero gradient).
        from mycel._sparse import RowTensor
        gradients = tuple(g.to_dense() if isinstance(g, RowTensor) else g for g in gradients)
        for i, (p, g) in enumerate(zip(self.parameters, gradients)):
            if not isinstance(g, Tensor) or tuple(g.shape) != tuple(p.shape):
                got = tuple(g.shape) if isinstance(g, Tensor) else type(g).__name__
                raise ValueError(f"{who}: gradients[{i}] must have the shape {tuple(p.shape)} of Parameter "
                                 f"{p.name!r}, got {got}")
        if _insight_scope.ACTIVE:  # a debugger may watch the gradients (eager: they are here)
            _insight_scope.gradients(self, gradients)
        return super().__call__(tuple(gradients))

    def construct(self, gradients):
        raise NotImplementedError(f"{type(self).__name__}.construct(gradients) is not defined")
