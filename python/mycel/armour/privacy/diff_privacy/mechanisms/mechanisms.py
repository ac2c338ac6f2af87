"""Noise mechanisms of DP-SGD (MindArmour's NoiseMechanismsFactory): Cells that map a tuple of
gradients to a tuple of Gaussian noise of the same shapes with standard deviation
norm_bound * noise_multiplier. AdaGaussian decays the multiplier with the step count in the
compiled step, on the schedule RDPMonitor accounts for (monitor.noise_multipliers). A nonzero seed
gives a mechanism its own random stream (own_generator.py): the same seed, the same noise."""
import math

import numpy as np

from mycel import Parameter, Tensor, nn, ops
from mycel.armour._checks import check_number
from mycel.armour.privacy.diff_privacy.mechanisms.own_generator import own_generator

_POLICIES = ("Time", "Step", "Exp")


class _Seeded(nn.Cell):
    """A Cell whose random draws come from its own stream when built with a nonzero seed."""

    def __call__(self, *args, **kwargs):
        gen = self.__dict__.get("_own_gen")
        if gen is None:
            return super().__call__(*args, **kwargs)
        with gen:
            return super().__call__(*args, **kwargs)


class NoiseGaussianRandom(_Seeded):
    """Noise N(0, (norm_bound * initial_noise_multiplier)^2) for every gradient entry; seed 0 draws
    from the global generator (mycel.set_seed), another seed from the mechanism's own stream."""

    def __init__(self, norm_bound=1.0, initial_noise_multiplier=1.0, seed=0, decay_policy=None):
        super().__init__()
        owner = type(self).__name__
        self._norm_bound = float(check_number(owner, "norm_bound", norm_bound, lo=0.0, lo_open=True))
        self._initial_noise_multiplier = float(check_number(owner, "initial_noise_multiplier",
                                                            initial_noise_multiplier, lo=0.0))
        check_number(owner, "seed", seed, lo=0, hi=2**64 - 1, integer=True)
        object.__setattr__(self, "_own_gen", own_generator(seed))
        if decay_policy is not None and type(self) is NoiseGaussianRandom:
            raise ValueError(f"{owner}: decay_policy must be None (use 'AdaGaussian' for a decaying noise), "
                             f"got {decay_policy!r}")
        self.std = self._norm_bound * self._initial_noise_multiplier

    def construct(self, gradients):
        noise = ()
        for g in gradients:
            noise = noise + (ops.normal(g.shape) * self.std,)
        return noise


class NoiseAdaGaussianRandom(NoiseGaussianRandom):
    """Gaussian noise whose multiplier decays with the step: 'Time' sigma0 / (1 + rate t), 'Step'
    sigma0 (1 - rate)^t, 'Exp' sigma0 exp(-rate t); t counts the calls (a Parameter)."""

    def __init__(self, norm_bound=1.0, initial_noise_multiplier=1.0, seed=0, noise_decay_rate=6e-6,
                 decay_policy="Exp"):
        super().__init__(norm_bound, initial_noise_multiplier, seed, decay_policy)
        if decay_policy not in _POLICIES:
            raise ValueError(f"NoiseAdaGaussianRandom: decay_policy must be one of {list(_POLICIES)}, got "
                             f"{decay_policy!r}")
        hi = 1.0 if decay_policy == "Step" else None
        rate = float(check_number("NoiseAdaGaussianRandom", "noise_decay_rate", noise_decay_rate, lo=0.0, hi=hi,
                                  hi_open=True))
        self.decay_policy, self.rate = decay_policy, rate
        self.log_keep = math.log1p(-rate) if decay_policy == "Step" else 0.0
        self.step = Parameter(Tensor(np.zeros((), np.float32)), name="dp_noise_step", requires_grad=False)

    def construct(self, gradients):
        t = self.step
        if self.decay_policy == "Time":
            sigma = self._initial_noise_multiplier / (1.0 + self.rate * t)
        elif self.decay_policy == "Step":
            sigma = self._initial_noise_multiplier * ops.exp(t * self.log_keep)
        else:
            sigma = self._initial_noise_multiplier * ops.exp(t * (-self.rate))
        std = sigma * self._norm_bound
        noise = ()
        for g in gradients:
            noise = noise + (ops.normal(g.shape) * std,)
        ops.assign(self.step, t + 1.0)
        return noise


class NoiseMechanismsFactory:
    """create('Gaussian' | 'AdaGaussian', norm_bound=1.0, initial_noise_multiplier=1.0, seed=0,
    noise_decay_rate=6e-6, decay_policy=None)."""

    @staticmethod
    def create(mech_name, norm_bound=1.0, initial_noise_multiplier=1.0, seed=0, noise_decay_rate=6e-6,
               decay_policy=None):
        if mech_name == "Gaussian":
            return NoiseGaussianRandom(norm_bound, initial_noise_multiplier, seed, decay_policy)
        if mech_name == "AdaGaussian":
            return NoiseAdaGaussianRandom(norm_bound, initial_noise_multiplier, seed, noise_decay_rate,
                                          "Exp" if decay_policy is None else decay_policy)
        raise ValueError(f"NoiseMechanismsFactory.create: mech_name must be 'Gaussian' or 'AdaGaussian', got "
                         f"{mech_name!r}")


_CLIP_POLICIES = ("Linear", "Geometric")


class AdaClippingWithGaussianRandom(_Seeded):
    """Adaptive clipping (Andrew et al. 2019): construct(empirical_fraction, norm_bound) -> the next
    norm bound, moved towards the target_unclipped_quantile of the gradient norms: with b the
    fraction of groups left unclipped plus N(0, fraction_stddev^2) noise, 'Linear' gives
    C - lr (b - q) and 'Geometric' C exp(-lr (b - q)). The noisy fraction itself costs privacy
    that the monitors do not count (small for fraction_stddev of order batch_size / 20)."""

    def __init__(self, decay_policy="Linear", learning_rate=0.001, target_unclipped_quantile=0.9,
                 fraction_stddev=0.01, seed=0):
        super().__init__()
        owner = "AdaClippingWithGaussianRandom"
        if decay_policy not in _CLIP_POLICIES:
            raise ValueError(f"{owner}: decay_policy must be one of {list(_CLIP_POLICIES)}, got {decay_policy!r}")
        self.decay_policy = decay_policy
        self.lr = float(check_number(owner, "learning_rate", learning_rate, lo=0.0, lo_open=True))
        self.target = float(check_number(owner, "target_unclipped_quantile", target_unclipped_quantile, lo=0.0,
                                         hi=1.0))
        self.fraction_stddev = float(check_number(owner, "fraction_stddev", fraction_stddev, lo=0.0))
        check_number(owner, "seed", seed, lo=0, hi=2**64 - 1, integer=True)
        object.__setattr__(self, "_own_gen", own_generator(seed))

    def construct(self, empirical_fraction, norm_bound):
        noisy = empirical_fraction + ops.normal(()) * self.fraction_stddev
        if self.decay_policy == "Linear":
            nxt = norm_bound - self.lr * (noisy - self.target)
        else:
            nxt = norm_bound * ops.exp((noisy - self.target) * (-self.lr))
        return ops.maximum(nxt, 1e-6)  # a bound must stay positive


class ClipMechanismsFactory:
    """create('Gaussian', decay_policy='Linear', learning_rate=0.001, target_unclipped_quantile=0.9,
    fraction_stddev=0.01, seed=0) -> AdaClippingWithGaussianRandom."""

    @staticmethod
    def create(mech_name, decay_policy="Linear", learning_rate=0.001, target_unclipped_quantile=0.9,
               fraction_stddev=0.01, seed=0):
        if mech_name != "Gaussian":
            raise ValueError(f"ClipMechanismsFactory.create: mech_name must be 'Gaussian', got {mech_name!r}")
        return AdaClippingWithGaussianRandom(decay_policy, learning_rate, target_unclipped_quantile, fraction_stddev,
                                             seed)
