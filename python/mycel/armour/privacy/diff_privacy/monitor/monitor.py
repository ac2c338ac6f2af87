"""Privacy budget monitors (MindArmour's RDPMonitor, ZCDPMonitor, PrivacyMonitorFactory): Model
callbacks that account for the DP-SGD steps taken, report (eps, delta) after every epoch, stop
training once the budget is spent, and say how many epochs a budget allows (max_epoch_suggest)."""
import math

import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.privacy.diff_privacy.monitor.rdp_accountant import (delta_from_rdp, eps_from_rdp,
                                                                      rdp_sampled_gaussian)
from mycel.train.callback import Callback

# dp-accounting's default orders: fine near 1 (small budgets), integers up to 64, a few large ones.
DEFAULT_ORDERS = (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5) + tuple(float(a) for a in range(5, 64)) + \
    (128.0, 256.0, 512.0)
_DECAY_MODES = (None, "Time", "Step", "Exp")


def noise_multipliers(initial, mode, rate, start, count):
    """The noise multiplier of steps start .. start + count - 1 under a decay schedule: None
    (constant), 'Time' sigma0 / (1 + rate t), 'Step' sigma0 (1 - rate)^t, 'Exp' sigma0 e^(-rate t).
    The AdaGaussian mechanism follows the same schedule in the compiled step."""
    t = np.arange(start, start + count, dtype=np.float64)
    if mode is None:
        return np.full(count, float(initial))
    if mode == "Time":
        return initial / (1.0 + rate * t)
    if mode == "Step":
        return initial * (1.0 - rate) ** t
    return initial * np.exp(-rate * t)


class _Monitor(Callback):
    def __init__(self, owner, num_samples, batch_size, initial_noise_multiplier, max_eps, target_eps, target_delta,
                 max_delta, noise_decay_mode, noise_decay_rate, per_print_times, dataset_sink_mode):
        self._owner = owner
        self._n = check_number(owner, "num_samples", num_samples, lo=1, integer=True)
        self._b = check_number(owner, "batch_size", batch_size, lo=1, integer=True)
        if self._b > self._n:
            raise ValueError(f"{owner}: batch_size must be <= num_samples ({num_samples}), got {batch_size}")
        self._sigma0 = float(check_number(owner, "initial_noise_multiplier", initial_noise_multiplier, lo=0.0,
                                          lo_open=True))
        if (target_eps is None) == (target_delta is None):
            raise ValueError(f"{owner}: give exactly one of target_eps and target_delta, got target_eps="
                             f"{target_eps!r}, target_delta={target_delta!r}")
        self._target_eps = None if target_eps is None else float(
            check_number(owner, "target_eps", target_eps, lo=0.0, lo_open=True))
        self._target_delta = None if target_delta is None else float(
            check_number(owner, "target_delta", target_delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
        self._max_eps = None if max_eps is None else float(
            check_number(owner, "max_eps", max_eps, lo=0.0, lo_open=True))
        self._max_delta = None if max_delta is None else float(
            check_number(owner, "max_delta", max_delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
        if noise_decay_mode not in _DECAY_MODES:
            raise ValueError(f"{owner}: noise_decay_mode must be one of {list(_DECAY_MODES)}, got {noise_decay_mode!r}")
        self._mode = noise_decay_mode
        hi = 1.0 if noise_decay_mode == "Step" else None
        self._rate = float(check_number(owner, "noise_decay_rate", noise_decay_rate, lo=0.0, hi=hi, hi_open=True))
        self._per_print = check_number(owner, "per_print_times", per_print_times, lo=1, integer=True)
        self._sink = bool(dataset_sink_mode)
        self._q = self._b / self._n
        self._steps_per_epoch = self._n // self._b
        self._steps = 0
        self.history = []  # (epoch, eps, delta) after every epoch

    # subclasses: _advance(count) accounts for `count` more steps; _budget() -> (eps, delta)

    def _over(self, eps, delta):
        if self._target_delta is not None:
            return self._max_eps is not None and eps > self._max_eps
        return self._max_delta is not None and delta > self._max_delta

    def step_end(self, run_context):
        if self._sink:  # sink mode accounts per epoch, from cur_step_num
            return
        self._advance(1)
        self._steps += 1
        if self._steps % self._per_print == 0:
            eps, delta = self._budget()
            print(f"{self._owner}: step {self._steps}: eps = {eps:.6g}, delta = {delta:.6g}")

    def epoch_end(self, run_context):
        cb = run_context.original_args()
        if self._sink:  # one call per sink: account for its steps now
            done = cb.get("cur_step_num", self._steps) - self._steps
            if done > 0:
                self._advance(done)
                self._steps += done
        eps, delta = self._budget()
        epoch = cb.get("cur_epoch_num", len(self.history) + 1)
        self.history.append((epoch, eps, delta))
        print(f"{self._owner}: epoch {epoch}, step {self._steps}: eps = {eps:.6g}, delta = {delta:.6g}")
        if self._over(eps, delta):
            print(f"{self._owner}: the privacy budget is spent (max_eps={self._max_eps}, max_delta={self._max_delta}); "
                  "stopping training")
            run_context.request_stop()

    def privacy_spent(self):
        """(eps, delta) of the steps accounted so far."""
        return self._budget()

    def max_epoch_suggest(self):
        """The largest number of epochs whose privacy loss stays within max_eps (with target_delta)
        or max_delta (with target_eps); 0 when not even one epoch fits."""
        if (self._target_delta is not None and self._max_eps is None) or \
                (self._target_eps is not None and self._max_delta is None):
            raise ValueError(f"{self._owner}: max_epoch_suggest needs max_eps (with target_delta) or max_delta "
                             "(with target_eps)")
        probe = type(self).__new__(type(self))
        probe.__dict__.update(self.__dict__)
        probe._reset()
        # with constant noise every epoch adds the same RDP: one evaluation serves all epochs
        if isinstance(probe, RDPMonitor) and self._mode is None:
            per_epoch = rdp_sampled_gaussian(self._q, [self._sigma0] * self._steps_per_epoch, self._orders)
            epochs = 0
            while epochs < 100000:
                probe._rdp = per_epoch * (epochs + 1)
                if self._over(*probe._budget()):
                    return epochs
                epochs += 1
            return epochs
        epochs = 0
        while epochs < 100000:
            probe._advance(self._steps_per_epoch)
            probe._steps += self._steps_per_epoch
            if self._over(*probe._budget()):
                return epochs
            epochs += 1
        return epochs


class RDPMonitor(_Monitor):
    """Renyi-DP accounting of DP-SGD with Poisson sampling rate batch_size / num_samples (Abadi et
    al.; Mironov et al. 2019), converted to (eps, delta) by Balle et al. 2020. Give target_delta to
    report eps (checked against max_eps), or target_eps to report delta (against max_delta)."""

    def __init__(self, num_samples, batch_size, initial_noise_multiplier=1.5, max_eps=10.0, target_eps=None,
                 target_delta=1e-3, max_delta=None, noise_decay_mode="Time", noise_decay_rate=6e-4,
                 per_print_times=50, orders=None, dataset_sink_mode=False):
        super().__init__("RDPMonitor", num_samples, batch_size, initial_noise_multiplier, max_eps, target_eps,
                         target_delta, max_delta, noise_decay_mode, noise_decay_rate, per_print_times,
                         dataset_sink_mode)
        orders = DEFAULT_ORDERS if orders is None else orders
        try:
            self._orders = np.asarray([float(a) for a in orders])
        except (TypeError, ValueError):
            raise TypeError(f"RDPMonitor: orders must be a sequence of numbers, got {orders!r}") from None
        if self._orders.size == 0 or not (self._orders > 1).all():
            raise ValueError(f"RDPMonitor: orders must be non-empty and every order > 1, got {list(orders)}")
        self._reset()

    def _reset(self):
        self._rdp = np.zeros(len(self._orders))
        self._steps = 0
        self._pending = []  # (first step, count) not yet added to _rdp

    def _advance(self, count):
        # steps are recorded and composed in one batch when a budget is asked for: the per-order
        # series then runs once per distinct noise multiplier, not once per step.
        if self._pending and sum(self._pending[-1]) == self._steps:
            start, n = self._pending[-1]
            self._pending[-1] = (start, n + count)
        else:
            self._pending.append((self._steps, count))

    def _flush(self):
        for start, count in self._pending:
            sig = noise_multipliers(self._sigma0, self._mode, self._rate, start, count)
            self._rdp = self._rdp + rdp_sampled_gaussian(self._q, sig, self._orders)
        self._pending = []

    def _budget(self):
        self._flush()
        if self._target_delta is not None:
            return eps_from_rdp(self._orders, self._rdp, self._target_delta)[0], self._target_delta
        return self._target_eps, delta_from_rdp(self._orders, self._rdp, self._target_eps)[0]


class ZCDPMonitor(_Monitor):
    """Zero-concentrated DP accounting (Bun and Steinke 2016) for training whose every epoch splits
    the shuffled data into disjoint batches: by parallel composition an epoch costs
    rho = max over its steps of 1 / (2 sigma_t^2); epochs compose by adding rho, and
    eps = rho + 2 sqrt(rho log(1/delta)). No subsampling amplification is assumed (zCDP has none),
    so its budgets are far looser than RDPMonitor's for Poisson-sampled batches."""

    def __init__(self, num_samples, batch_size, initial_noise_multiplier=1.5, max_eps=10.0, target_eps=None,
                 target_delta=1e-3, max_delta=None, noise_decay_mode="Time", noise_decay_rate=6e-4,
                 per_print_times=50, dataset_sink_mode=False):
        super().__init__("ZCDPMonitor", num_samples, batch_size, initial_noise_multiplier, max_eps, target_eps,
                         target_delta, max_delta, noise_decay_mode, noise_decay_rate, per_print_times,
                         dataset_sink_mode)
        self._reset()

    def _reset(self):
        self._rho = 0.0
        self._epoch_rho = 0.0  # the open epoch's max per-step rho, added when the epoch completes
        self._steps = 0

    def _advance(self, count):
        for start in range(self._steps, self._steps + count):
            sig = noise_multipliers(self._sigma0, self._mode, self._rate, start, 1)[0]
            self._epoch_rho = max(self._epoch_rho, 1.0 / (2.0 * sig * sig))
            if (start + 1) % max(self._steps_per_epoch, 1) == 0:
                self._rho += self._epoch_rho
                self._epoch_rho = 0.0

    def _rho_now(self):
        return self._rho + self._epoch_rho  # a partial epoch counts as a whole one

    def _budget(self):
        rho = self._rho_now()
        if self._target_delta is not None:
            return rho + 2.0 * math.sqrt(rho * math.log(1.0 / self._target_delta)), self._target_delta
        eps = self._target_eps
        delta = 1.0 if eps <= rho else math.exp(-((eps - rho) ** 2) / (4.0 * rho)) if rho > 0 else 0.0
        return eps, min(1.0, delta)


class PrivacyMonitorFactory:
    """create('rdp' | 'zcdp', *args, **kwargs) -> RDPMonitor or ZCDPMonitor."""

    @staticmethod
    def create(policy="rdp", *args, **kwargs):
        if policy == "rdp":
            return RDPMonitor(*args, **kwargs)
        if policy == "zcdp":
            return ZCDPMonitor(*args, **kwargs)
        raise ValueError(f"PrivacyMonitorFactory.create: policy must be 'rdp' or 'zcdp', got {policy!r}")
