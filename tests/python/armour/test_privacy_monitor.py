"""Privacy accounting against Google's dp-accounting (tests only) and against numerical
integration. On integer orders both compute the RDP of the sampled Gaussian exactly, so eps and
delta must agree to 3 significant digits over a grid of sampling rates, noise multipliers and step
counts. On fractional orders dp-accounting 0.6 sums the series' absolute terms (an upper bound);
ours keeps the signs, so it is checked against the integral that defines A_alpha instead."""
import math

import numpy as np
import pytest

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import rdp as dp_rdp  # noqa: E402

from mycel.armour.privacy.diff_privacy import PrivacyMonitorFactory, RDPMonitor, ZCDPMonitor  # noqa: E402
from mycel.armour.privacy.diff_privacy.monitor.rdp_accountant import (_log_a_frac, delta_from_rdp,  # noqa: E402
                                                                      eps_from_rdp, rdp_sampled_gaussian)
from mycel.train.callback import RunContext  # noqa: E402

INT_ORDERS = [2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0]


def reference(q, sigma, steps, orders):
    acc = dp_rdp.RdpAccountant(orders)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return acc


@pytest.mark.parametrize("q", [0.001, 0.01, 0.1, 0.5])
@pytest.mark.parametrize("sigma", [0.7, 1.1, 2.0, 5.0])
@pytest.mark.parametrize("steps", [1, 100, 10000])
def test_eps_and_delta_agree_with_dp_accounting(q, sigma, steps):
    acc = reference(q, sigma, steps, INT_ORDERS)
    rdp = rdp_sampled_gaussian(q, [sigma], INT_ORDERS) * steps
    eps, _ = eps_from_rdp(INT_ORDERS, rdp, 1e-5)
    np.testing.assert_allclose(eps, acc.get_epsilon(1e-5), rtol=1e-3)
    for target_eps in (1.0, 8.0):
        want = acc.get_delta(target_eps)
        got, _ = delta_from_rdp(INT_ORDERS, rdp, target_eps)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-300)


def _log_a_integral(q, sigma, alpha):
    """log E_{z ~ N(0, s^2)} [(mu(z) / mu0(z))^alpha], mu = (1-q) N(0, s^2) + q N(1, s^2), by quadrature."""
    z = np.linspace(-40 * sigma - 5, 40 * sigma + 5, 400001)
    l0 = -z ** 2 / (2 * sigma ** 2)
    lmu = np.logaddexp(math.log1p(-q) + l0, math.log(q) - (z - 1) ** 2 / (2 * sigma ** 2))
    f = np.exp(alpha * lmu + (1 - alpha) * l0) / math.sqrt(2 * math.pi * sigma ** 2)
    return math.log(np.trapezoid(f, z))


@pytest.mark.parametrize("q,sigma,alpha", [(0.1, 1.0, 1.75), (0.1, 1.0, 2.5), (0.01, 0.7, 2.5),
                                           (0.1, 2.0, 3.5), (0.1, 5.0, 5.5), (0.05, 1.5, 1.5)])
def test_fractional_orders_match_the_defining_integral(q, sigma, alpha):
    got = _log_a_frac(q, np.array([sigma]), alpha)[0]
    np.testing.assert_allclose(got, _log_a_integral(q, sigma, alpha), rtol=1e-6)
    # dp-accounting's value is an upper bound of the same quantity
    ref = dp_rdp.rdp_privacy_accountant._compute_log_a_frac(q, sigma, alpha)
    assert got <= ref * (1 + 1e-9)


def test_monitor_reports_eps_per_epoch_like_the_accountant():
    n, b, sigma = 60000, 256, 1.1
    mon = RDPMonitor(n, b, initial_noise_multiplier=sigma, max_eps=3.0, target_delta=1e-5, noise_decay_mode=None)
    ctx = {"cur_epoch_num": 0}
    run = RunContext(ctx)
    for epoch in range(1, 4):
        for _ in range(n // b):
            mon.step_end(run)
        ctx["cur_epoch_num"] = epoch
        mon.epoch_end(run)
    acc = reference(b / n, sigma, 3 * (n // b), list(mon._orders))
    assert mon.history[-1][0] == 3 and mon.history[-1][2] == 1e-5
    # the default orders include fractional ones, where ours is tighter: never above the reference
    assert mon.history[-1][1] <= acc.get_epsilon(1e-5) * (1 + 1e-9)
    np.testing.assert_allclose(mon.history[-1][1], acc.get_epsilon(1e-5), rtol=2e-2)
    assert mon.history[0][1] < mon.history[1][1] < mon.history[2][1]
    assert not run.get_stop_requested()


def test_max_epoch_suggest_is_the_last_epoch_within_budget():
    n, b = 60000, 256
    mon = RDPMonitor(n, b, initial_noise_multiplier=1.1, max_eps=3.0, target_delta=1e-5, noise_decay_mode=None,
                     orders=[2.0, 4.0, 8.0, 16.0, 32.0])
    e = mon.max_epoch_suggest()
    steps = n // b
    orders = [2.0, 4.0, 8.0, 16.0, 32.0]

    def eps_after(epochs):
        return reference(b / n, 1.1, epochs * steps, orders).get_epsilon(1e-5)
    assert e > 0 and eps_after(e) <= 3.0 < eps_after(e + 1)


@pytest.mark.parametrize("mode,rate", [("Time", 6e-4), ("Step", 1e-3), ("Exp", 1e-3)])
def test_decaying_noise_is_composed_step_by_step(mode, rate):
    n, b, steps = 6000, 100, 60
    mon = RDPMonitor(n, b, initial_noise_multiplier=2.0, target_delta=1e-5, noise_decay_mode=mode,
                     noise_decay_rate=rate, orders=INT_ORDERS)
    run = RunContext({"cur_epoch_num": 1})
    for _ in range(steps):
        mon.step_end(run)
    acc = dp_rdp.RdpAccountant(INT_ORDERS)
    t = np.arange(steps)
    sig = {"Time": 2.0 / (1 + rate * t), "Step": 2.0 * (1 - rate) ** t, "Exp": 2.0 * np.exp(-rate * t)}[mode]
    for s in sig:
        acc.compose(dp_accounting.PoissonSampledDpEvent(b / n, dp_accounting.GaussianDpEvent(float(s))))
    np.testing.assert_allclose(mon.privacy_spent()[0], acc.get_epsilon(1e-5), rtol=1e-3)


def test_target_eps_reports_delta_and_stops_when_spent():
    mon = RDPMonitor(1000, 500, initial_noise_multiplier=0.5, max_eps=None, target_eps=1.0, target_delta=None,
                     max_delta=1e-3, noise_decay_mode=None, orders=INT_ORDERS)
    ctx = {"cur_epoch_num": 1}
    run = RunContext(ctx)
    mon.step_end(run)
    mon.step_end(run)
    mon.epoch_end(run)
    acc = reference(0.5, 0.5, 2, INT_ORDERS)
    np.testing.assert_allclose(mon.history[0][2], acc.get_delta(1.0), rtol=1e-3)
    assert run.get_stop_requested()


def test_zcdp_composes_one_gaussian_per_epoch():
    n, b, sigma = 1000, 100, 4.0
    mon = PrivacyMonitorFactory.create("zcdp", n, b, initial_noise_multiplier=sigma, target_delta=1e-5,
                                       noise_decay_mode=None)
    assert isinstance(mon, ZCDPMonitor)
    run = RunContext({"cur_epoch_num": 1})
    for _ in range(3 * (n // b)):
        mon.step_end(run)
    rho = 3 / (2 * sigma ** 2)
    eps, delta = mon.privacy_spent()
    assert delta == 1e-5
    np.testing.assert_allclose(eps, rho + 2 * math.sqrt(rho * math.log(1e5)), rtol=1e-12)
    # a Gaussian with rho-zCDP is (alpha, alpha rho)-RDP: the zCDP eps is never below RDP's bound for it
    rdp_eps, _ = eps_from_rdp(INT_ORDERS, np.array(INT_ORDERS) * rho, 1e-5)
    assert eps >= rdp_eps


def test_bad_monitor_arguments():
    with pytest.raises(ValueError, match="batch_size must be <= num_samples"):
        RDPMonitor(10, 20)
    with pytest.raises(ValueError, match="initial_noise_multiplier must be > 0"):
        RDPMonitor(100, 10, initial_noise_multiplier=0.0)
    with pytest.raises(ValueError, match="exactly one of target_eps and target_delta"):
        RDPMonitor(100, 10, target_eps=1.0, target_delta=1e-5)
    with pytest.raises(ValueError, match="target_delta must be < 1"):
        RDPMonitor(100, 10, target_delta=1.5)
    with pytest.raises(ValueError, match="noise_decay_mode must be one of"):
        RDPMonitor(100, 10, noise_decay_mode="Linear")
    with pytest.raises(ValueError, match="every order > 1"):
        RDPMonitor(100, 10, orders=[0.5, 2])
    with pytest.raises(ValueError, match="max_eps must be > 0"):
        ZCDPMonitor(100, 10, max_eps=-1.0)
    with pytest.raises(ValueError, match="policy must be"):
        PrivacyMonitorFactory.create("gdp", 100, 10)
