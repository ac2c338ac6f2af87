"""DPModel: Model whose training step is DP-SGD in one compiled Cell. The batch is split into
micro_batches groups; each group's gradient comes from mycel.vmap of mycel.grad over the groups
(one group per sample when micro_batches equals the batch size), is clipped to L2 norm norm_bound
over all weights, and the clipped gradients are summed, noised and divided by micro_batches
before the optimizer applies them."""
import numpy as np

from mycel import Parameter, ParameterTuple, Tensor, nn, ops
from mycel.common import dtype as mstype
from mycel.armour._checks import check_number
from mycel.armour.privacy.diff_privacy.mechanisms.mechanisms import _Seeded
from mycel.train.model import Model


class _DPTrainStep(_Seeded):
    # The step's draws (noise, clipping noise, any dropout) continue the stream of its first
    # seeded mechanism (its _own_gen); unseeded mechanisms draw from the global generator.

    def __init__(self, network, loss_fn, optimizer, micro_batches, norm_bound, noise_mech, clip_mech):
        super().__init__()
        self.network, self.loss_fn, self.optimizer = network, loss_fn, optimizer
        self.weights = ParameterTuple(optimizer.parameters)
        self.micro_batches = micro_batches
        # the bound is a Parameter so adaptive clipping can move it inside the compiled step
        self.norm_bound = Parameter(Tensor(np.array(norm_bound, np.float32)), name="dp_norm_bound",
                                    requires_grad=False)
        self.noise_mech, self.clip_mech = noise_mech, clip_mech
        self.has_noise, self.has_clip = noise_mech is not None, clip_mech is not None
        # noise is norm_bound * sigma for the mechanism's own bound: rescaled when the bound moves
        self.mech_bound = getattr(noise_mech, "_norm_bound", 1.0) if noise_mech is not None else 1.0
        mechs = (noise_mech, getattr(optimizer, "_dp_mech", None), clip_mech)
        gens = [m.__dict__.get("_own_gen") for m in mechs if m is not None]
        object.__setattr__(self, "_own_gen", next((g for g in gens if g is not None), None))

    def group_loss(self, x, y):
        return self.loss_fn(self.network(x), y)

    def construct(self, x, y):
        m = self.micro_batches
        xs = ops.reshape(x, (m, x.shape[0] // m) + x.shape[1:])
        ys = ops.reshape(y, (m, y.shape[0] // m) + y.shape[1:])
        losses, grads = ops.vmap(ops.value_and_grad(self.group_loss, None, self.weights))(xs, ys)
        sq = 0.0
        for g in grads:
            sq = sq + ops.reshape(g * g, (m, -1)).sum(axis=1)
        norm = ops.sqrt(sq)
        # min(1, C / ||g||): a group already inside the ball is left as it is
        bound = self.norm_bound
        scale = ops.minimum(norm * 0.0 + 1.0, bound / ops.maximum(norm, 1e-12))
        # tuples are built by concatenation: graph mode has no list -> tuple of run-time values
        summed = ()
        for g in grads:
            s = ops.reshape(scale, (m,) + (1,) * (len(g.shape) - 1))
            summed = summed + ((g * s).sum(axis=0),)
        if self.has_noise:
            noise = self.noise_mech(summed)
            noisy = ()
            for g, n in zip(summed, noise):
                noisy = noisy + (g + n * (bound / self.mech_bound),)
            summed = noisy
        mean = ()
        for g in summed:
            mean = mean + (g / m,)
        self.optimizer(mean)
        if self.has_clip:
            unclipped = ops.cast(norm <= bound, mstype.float32).mean()
            ops.assign(self.norm_bound, self.clip_mech(unclipped, bound))
        return losses.mean()


class _SeededLoop:
    """Model.train's C++ step loop (run_sink) with the step's own generator swapped in around it:
    those steps bypass the Cell's __call__ (the data pipeline draws nothing from the generator)."""

    def __init__(self, loop, gen):
        self._loop, self._gen = loop, gen

    def run_sink(self, *args, **kwargs):
        with self._gen:
            return self._loop.run_sink(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._loop, name)


class DPModel(Model):
    """DPModel(micro_batches=2, norm_bound=1.0, noise_mech=None, clip_mech=None, network=..., loss_fn=...,
    optimizer=..., metrics=...). The batch size must be a multiple of micro_batches. Give the noise
    either as noise_mech (a NoiseMechanismsFactory Cell) or through a DP optimizer made by
    DPOptimizerClassFactory, not both; with neither, gradients are clipped but not noised (not
    private; for checking)."""

    def __init__(self, micro_batches=2, norm_bound=1.0, noise_mech=None, clip_mech=None, network=None,
                 loss_fn=None, optimizer=None, **kwargs):
        self._micro_batches = check_number("DPModel", "micro_batches", micro_batches, lo=1, integer=True)
        self._norm_bound = float(check_number("DPModel", "norm_bound", norm_bound, lo=0.0, lo_open=True))
        if clip_mech is not None and not isinstance(clip_mech, nn.Cell):
            raise TypeError(f"DPModel: clip_mech must be a Cell from ClipMechanismsFactory, got "
                            f"{type(clip_mech).__name__}")
        if noise_mech is not None and not isinstance(noise_mech, nn.Cell):
            raise TypeError(f"DPModel: noise_mech must be a Cell from NoiseMechanismsFactory, got "
                            f"{type(noise_mech).__name__}")
        if network is None or loss_fn is None or optimizer is None:
            raise ValueError("DPModel: network, loss_fn and optimizer are required")
        dp_opt = getattr(optimizer, "_dp_mech", None) is not None
        if dp_opt and noise_mech is not None:
            raise ValueError("DPModel: the optimizer already adds DP noise (DPOptimizerClassFactory); noise_mech "
                             "must be None")
        if dp_opt and clip_mech is not None:
            raise ValueError("DPModel: with clip_mech give the noise as noise_mech (its scale follows the moving "
                             "bound), not through a DP optimizer")
        if dp_opt and getattr(optimizer, "_dp_micro_batches", None) != micro_batches:
            raise ValueError(f"DPModel: micro_batches ({micro_batches}) must equal the DP optimizer's "
                             f"({optimizer._dp_micro_batches})")
        super().__init__(network, loss_fn=loss_fn, optimizer=None, **kwargs)
        self._optimizer = optimizer
        self._train_network = _DPTrainStep(network, loss_fn, optimizer, self._micro_batches, self._norm_bound,
                                           noise_mech, clip_mech)
        self._train_network.set_train()

    def _step_loop(self, net):
        loop = Model._step_loop(net)
        gen = net.__dict__.get("_own_gen")
        return loop if loop is None or gen is None else _SeededLoop(loop, gen)
