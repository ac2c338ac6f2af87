"""Automatic mixed precision (MindSpore's mindspore.amp): run a network in bfloat16, the CPU's
low-precision dtype, with float32 master weights, and build training steps with loss scaling.

Levels (MindSpore's amp_level):
  "O0"   float32 throughout.
  "O1"   the white-list Cells (Dense, Conv2d, Conv2dTranspose: the matrix products) run in
         bfloat16, their outputs cast back to float32; everything else stays float32.
  "O2"   every Cell runs in bfloat16 except the black list (BatchNorm, LayerNorm, Softmax,
         LogSoftmax and loss Cells: statistics and exponentials stay float32); outputs float32.
         BatchNorm and LayerNorm read bfloat16 activations directly: their statistics,
         parameters and sums are float32, their output bfloat16 (no cast on either side).
  "O3"   every Cell runs in bfloat16; outputs cast back to float32.
  "auto" MindSpore's automatic choice: here the O2 rule (white list in bfloat16, black list in
         float32, the rest following its inputs, which are bfloat16 under O2).

Master weights: Parameters stay float32. A low-precision Cell reads each of its trainable
floating Parameters through a cast to bfloat16 (in graph mode the parser inserts the cast into
the compiled step, so it runs once per step per read; eagerly Cell.__getattr__ casts while
construct runs), so gradients arrive in float32 (the cast's gradient casts back) and the
optimizer updates float32 weights. Hence the optimizer may be built before or after the
conversion, from net.trainable_params(), as in MindSpore. Non-trainable Parameters (running
statistics) are not cast: they belong to the float32 black-list Cells.

The network is changed in place (each Cell's _float_dtype, and _output_dtype under O1): call
auto_mixed_precision once per network.

On a CPU without bfloat16 units (no AVX512-BF16 and no AMX, e.g. Intel before Cooper Lake, AMD
before Zen 4) bfloat16 math is emulated with float32 instructions and runs slower than float32:
on a 2-core Ice Lake Xeon the transformer's O2 training step took 98 ms against 46 ms in float32
(docs/training.md, "Mixed precision"). A bfloat16 level there warns once per process (AmpPerformanceWarning; silence it
with warnings.filterwarnings("ignore", category=AmpPerformanceWarning)); the results are the
same bfloat16 results as on a CPU with the units.
"""
import inspect
import warnings

from mycel import ops
from mycel.common import dtype as mstype
from mycel.nn.cell import Cell
from mycel.nn.layer.activation import LogSoftmax, Softmax
from mycel.nn.layer.basic import Dense
from mycel.nn.layer.conv import Conv2d, Conv2dTranspose
from mycel.nn.layer.normalization import _BatchNorm, LayerNorm
from mycel.nn.loss.loss import LossBase
from mycel.nn.wrap.cell_wrapper import WithLossCell, TrainOneStepCell
from mycel.nn.wrap.loss_scale import (FixedLossScaleUpdateCell, DynamicLossScaleUpdateCell,
                                      TrainOneStepWithLossScaleCell)

_LEVELS = ("O0", "O1", "O2", "O3", "auto")

# O1's white list: the Cells whose work is matrix products, the ones bfloat16 speeds up.
_WHITE_LIST = (Dense, Conv2d, Conv2dTranspose)
# O2's black list: numerically sensitive Cells (statistics, exponentials, losses) stay float32.
_BLACK_LIST = (_BatchNorm, LayerNorm, Softmax, LogSoftmax, LossBase)


class AmpPerformanceWarning(UserWarning):
    """A mixed-precision level that this CPU runs slower than float32 (no bfloat16 units)."""


_warned_no_bf16_units = False


def _warn_if_no_bf16_units(amp_level):
    global _warned_no_bf16_units
    from mycel import _mycel
    if _warned_no_bf16_units or _mycel.cpu_has_bf16_units():
        return
    _warned_no_bf16_units = True
    warnings.warn(f"amp_level={amp_level!r}: this CPU has no bfloat16 units (AVX512-BF16 or AMX), so "
                  "bfloat16 math is emulated with float32 instructions and runs slower than float32 "
                  "(the results are still bfloat16's). For speed on this machine use amp_level='O0'.",
                  AmpPerformanceWarning, stacklevel=3)


def _to_float32(out):
    """out (a Tensor or a tuple of Tensors) in float32."""
    if isinstance(out, tuple):
        cast = ()
        for o in out:
            cast = cast + (ops.cast(o, mstype.float32),)
        return cast
    return ops.cast(out, mstype.float32)


class _OutputTo32(Cell):
    """Runs the backbone and casts its outputs to float32. Graph mode cannot forward `*inputs`
    of unknown length, so the common arities get their own construct (see _output_to_32)."""

    def __init__(self, backbone):
        super().__init__(auto_prefix=False)
        self._backbone = backbone

    def construct(self, *inputs):
        return _to_float32(self._backbone(*inputs))


class _OutputTo32Of1(_OutputTo32):
    def construct(self, x):
        return _to_float32(self._backbone(x))


class _OutputTo32Of2(_OutputTo32):
    def construct(self, x, y):
        return _to_float32(self._backbone(x, y))


def _output_to_32(backbone):
    """The _OutputTo32 wrapper whose construct takes as many inputs as the backbone's."""
    try:
        params = inspect.signature(backbone.construct).parameters.values()
    except (TypeError, ValueError):
        return _OutputTo32(backbone)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        return _OutputTo32(backbone)
    arity = len(list(params))
    return {1: _OutputTo32Of1, 2: _OutputTo32Of2}.get(arity, _OutputTo32)(backbone)


def _set_cell_dtype(cell, dtype, output_dtype=None):
    """This Cell alone (not its children) computes in dtype: its floating inputs and the
    trainable Parameters it reads are cast to it (Parameters themselves keep float32)."""
    object.__setattr__(cell, "_float_dtype", dtype)
    object.__setattr__(cell, "_output_dtype", output_dtype)
    object.__setattr__(cell, "_compiled", None)


def _cast_tree(cell, dtype, black_list):
    """Casts every Cell of the tree to dtype; subtrees rooted at a black_list type run float32,
    except a BatchNorm or LayerNorm among bfloat16 Cells (see _runs_on_input_dtype)."""
    if black_list and _runs_on_input_dtype(cell, dtype):
        _set_cell_dtype(cell, None)
        return
    if black_list and isinstance(cell, black_list):
        dtype = mstype.float32
    _set_cell_dtype(cell, dtype)
    for child in cell.cells():
        _cast_tree(child, dtype, black_list)


def _runs_on_input_dtype(cell, dtype):
    """A BatchNorm or LayerNorm under O2 in bfloat16 takes its bfloat16 input as it comes (no
    cast): batch_norm and layer_norm read bf16 activations with float32 parameters, statistics
    and sums and round only their output (and dx) to bf16, which the float32 black-list path did
    too, with a cast on each side of the op, forward and backward (4 passes over the activation
    per step)."""
    return isinstance(cell, (_BatchNorm, LayerNorm)) and getattr(dtype, "name", str(dtype)) == "bfloat16"


def _cast_white_list(network, dtype):
    """O1: each white-list Cell computes in dtype and returns float32; the rest is untouched."""
    for _, cell in network.cells_and_names():
        if isinstance(cell, _WHITE_LIST):
            _set_cell_dtype(cell, dtype, output_dtype=mstype.float32)
        else:
            object.__setattr__(cell, "_compiled", None)


def auto_mixed_precision(network, amp_level="O0", dtype=mstype.bfloat16):
    """Returns `network` set up for amp_level ("O0", "O1", "O2", "O3" or "auto"; see the module
    doc). For O2/O3/auto the result is a wrapper Cell whose outputs are float32; `network` itself
    is changed in place (its Parameters stay float32)."""
    if not isinstance(network, Cell):
        raise TypeError(f"auto_mixed_precision: 'network' must be a Cell, got {type(network).__name__}")
    if amp_level not in _LEVELS:
        raise ValueError(f"auto_mixed_precision: amp_level must be one of {_LEVELS}, got {amp_level!r}")
    if getattr(dtype, "name", str(dtype)) not in ("float16", "bfloat16"):
        raise ValueError(f"auto_mixed_precision: dtype must be float16 or bfloat16, got {dtype!r}")
    if amp_level == "O0":
        return network
    if getattr(dtype, "name", str(dtype)) == "bfloat16":
        _warn_if_no_bf16_units(amp_level)
    if amp_level == "O1":
        _cast_white_list(network, dtype)
        return network
    _cast_tree(network, dtype, black_list=None if amp_level == "O3" else _BLACK_LIST)
    return _output_to_32(network)


class LossScaleManager:
    """Base class of loss-scale managers: the scale, whether overflowing steps are dropped, and
    the update Cell a training step uses."""

    def get_loss_scale(self):
        raise NotImplementedError

    def update_loss_scale(self, overflow):
        raise NotImplementedError

    def get_update_cell(self):
        raise NotImplementedError


class FixedLossScaleManager(LossScaleManager):
    """A constant scale. With drop_overflow_update=True overflowing steps are skipped
    (TrainOneStepWithLossScaleCell); with False the step is a TrainOneStepCell with sens=scale and
    the optimizer must divide by it (its loss_scale argument), as in MindSpore."""

    def __init__(self, loss_scale=128.0, drop_overflow_update=True):
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)) or loss_scale < 1:
            raise ValueError(f"FixedLossScaleManager: loss_scale must be a number >= 1, got {loss_scale!r}")
        self._loss_scale = float(loss_scale)
        self._drop_overflow_update = bool(drop_overflow_update)

    def get_loss_scale(self):
        return self._loss_scale

    def get_drop_overflow_update(self):
        return self._drop_overflow_update

    def update_loss_scale(self, overflow):
        """A fixed scale never changes."""

    def get_update_cell(self):
        return FixedLossScaleUpdateCell(self._loss_scale) if self._drop_overflow_update else None


class DynamicLossScaleManager(LossScaleManager):
    """A scale divided by scale_factor on overflow and multiplied by it after scale_window
    steps without one; overflowing steps are always skipped."""

    def __init__(self, init_loss_scale=2 ** 24, scale_factor=2, scale_window=2000):
        if isinstance(init_loss_scale, bool) or not isinstance(init_loss_scale, (int, float)) \
                or init_loss_scale < 1:
            raise ValueError(f"DynamicLossScaleManager: init_loss_scale must be a number >= 1, "
                             f"got {init_loss_scale!r}")
        if isinstance(scale_factor, bool) or not isinstance(scale_factor, (int, float)) or scale_factor <= 1:
            raise ValueError(f"DynamicLossScaleManager: scale_factor must be a number > 1, got {scale_factor!r}")
        if isinstance(scale_window, bool) or not isinstance(scale_window, int) or scale_window < 1:
            raise ValueError(f"DynamicLossScaleManager: scale_window must be an int >= 1, got {scale_window!r}")
        self.loss_scale = float(init_loss_scale)
        self.scale_factor = float(scale_factor)
        self.scale_window = scale_window
        self.cur_iter = 1
        self.last_overflow_iter = 0

    def get_loss_scale(self):
        return self.loss_scale

    def get_drop_overflow_update(self):
        return True

    def update_loss_scale(self, overflow):
        """The same rule as DynamicLossScaleUpdateCell, on Python numbers (for host-side loops)."""
        if overflow:
            self.loss_scale = max(self.loss_scale / self.scale_factor, 1.0)
            self.last_overflow_iter = self.cur_iter
        elif self.cur_iter - self.last_overflow_iter >= self.scale_window:
            self.loss_scale *= self.scale_factor
            self.last_overflow_iter = self.cur_iter
        self.cur_iter += 1

    def get_update_cell(self):
        return DynamicLossScaleUpdateCell(self.loss_scale, self.scale_factor, self.scale_window)


def build_train_network(network, optimizer, loss_fn=None, level="O0", boost_level="O0",
                        loss_scale_manager=None, **kwargs):
    """The training step of `network` (the backbone, or the loss network when loss_fn is None):
    mixed precision at `level`, the loss appended in float32, and a TrainOneStepCell or (with a
    loss_scale_manager that drops overflowing steps) a TrainOneStepWithLossScaleCell."""
    del boost_level  # accepted for MindSpore compatibility; no boost modes
    if kwargs:
        raise TypeError(f"build_train_network: unexpected arguments {sorted(kwargs)}")
    if loss_scale_manager is not None and not isinstance(loss_scale_manager, LossScaleManager):
        raise TypeError(f"build_train_network: loss_scale_manager must be a LossScaleManager, "
                        f"got {type(loss_scale_manager).__name__}")
    network = auto_mixed_precision(network, level)
    if loss_fn is not None:
        network = WithLossCell(network, loss_fn)
    if loss_scale_manager is None:
        return TrainOneStepCell(network, optimizer)
    update_cell = loss_scale_manager.get_update_cell()
    if update_cell is None:
        return TrainOneStepCell(network, optimizer, sens=loss_scale_manager.get_loss_scale())
    return TrainOneStepWithLossScaleCell(network, optimizer, scale_sense=update_cell)


from mycel.amp_loss_scaler import (all_finite, LossScaler, StaticLossScaler,  # noqa: E402
                                   DynamicLossScaler)

__all__ = ["auto_mixed_precision", "build_train_network", "LossScaleManager", "AmpPerformanceWarning",
           "all_finite", "LossScaler", "StaticLossScaler", "DynamicLossScaler",
           "FixedLossScaleManager", "DynamicLossScaleManager"]
