"""Renyi DP of the sampled Gaussian mechanism (Mironov, Talwar, Zhang 2019) and its conversion to
(eps, delta). Pure numpy/math: vectorized over noise multipliers so a decaying noise schedule (a
different sigma every step) costs one pass per order, not one per step."""
import math

import numpy as np

_MAX_TERMS = 1000


def _log_add(a, b):
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    with np.errstate(invalid="ignore"):
        return np.where(hi == -np.inf, -np.inf, hi + np.log1p(np.exp(lo - hi)))


def _log_sub(a, b):
    """log(exp(a) - exp(b)) for a >= b (-inf where they are equal)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.exp(np.minimum(b - a, 0.0))
        return np.where(b == -np.inf, a, a + np.log1p(-np.minimum(d, 1.0)))


def _log_erfc(x):
    """log(erfc(x)) elementwise, stable for large x (where erfc underflows)."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    small = x < 25.0
    out[small] = np.log(np.vectorize(math.erfc)(x[small])) if small.any() else 0.0
    big = x[~small]
    # erfc(x) = exp(-x^2) / (x sqrt(pi)) * (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + ...)
    z = 1.0 / (big * big)
    series = np.log1p(-0.5 * z + 0.75 * z * z - 1.875 * z ** 3)
    out[~small] = -big * big - np.log(big) - 0.5 * math.log(math.pi) + series
    return out


def _log_a_int(q, sigma, alpha):
    """log A_alpha for an integer alpha: the binomial expansion, exactly."""
    alpha = int(alpha)
    log_a = np.full(sigma.shape, -np.inf)
    for i in range(alpha + 1):
        coef = math.lgamma(alpha + 1) - math.lgamma(i + 1) - math.lgamma(alpha - i + 1)
        term = coef + i * math.log(q) + (alpha - i) * math.log1p(-q) + (i * i - i) / (2.0 * sigma ** 2)
        log_a = _log_add(log_a, term)
    return log_a


def _binom_sign(alpha, i):
    """Sign of the generalized binomial coefficient C(alpha, i) for a non-integer alpha."""
    negatives = max(0, i - math.floor(alpha) - 1)
    return -1 if negatives % 2 else 1


def _log_a_frac(q, sigma, alpha):
    """log A_alpha for a fractional alpha: the two series of section 3.3 (split at z0), summed until
    both terms decrease and fall e^30 below the total. An order whose series has not converged
    after _MAX_TERMS terms is unusable: +inf (the caller's minimum over orders skips it)."""
    log_a0 = np.full(sigma.shape, -np.inf)
    log_a1 = np.full(sigma.shape, -np.inf)
    last0 = np.full(sigma.shape, -np.inf)
    last1 = np.full(sigma.shape, -np.inf)
    result = np.full(sigma.shape, np.inf)
    done = np.zeros(sigma.shape, bool)
    z0 = sigma ** 2 * math.log(1.0 / q - 1.0) + 0.5
    for i in range(_MAX_TERMS):
        coef = math.lgamma(alpha + 1) - math.lgamma(i + 1) - math.lgamma(alpha - i + 1)
        j = alpha - i
        log_t0 = coef + i * math.log(q) + j * math.log1p(-q)
        log_t1 = coef + j * math.log(q) + i * math.log1p(-q)
        log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2.0) * sigma))
        log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2.0) * sigma))
        log_s0 = log_t0 + (i * i - i) / (2.0 * sigma ** 2) + log_e0
        log_s1 = log_t1 + (j * j - j) / (2.0 * sigma ** 2) + log_e1
        if _binom_sign(alpha, i) > 0:
            log_a0, log_a1 = _log_add(log_a0, log_s0), _log_add(log_a1, log_s1)
        else:
            log_a0, log_a1 = _log_sub(log_a0, log_s0), _log_sub(log_a1, log_s1)
        total = _log_add(log_a0, log_a1)
        conv = ~done & (log_s0 < last0) & (log_s1 < last1) & (np.maximum(log_s0, log_s1) < total - 30)
        result[conv] = total[conv]
        done |= conv
        if done.all():
            break
        last0, last1 = log_s0, log_s1
    return result


def rdp_sampled_gaussian(q, sigmas, orders):
    """RDP (one value per order) of the steps of the sampled Gaussian mechanism with sampling
    rate q and the given noise multipliers (one per step), composed: the sum over steps."""
    sigmas = np.atleast_1d(np.asarray(sigmas, np.float64))
    orders = np.asarray(orders, np.float64)
    total = np.zeros(len(orders))
    if q == 0 or sigmas.size == 0:
        return total
    for k, alpha in enumerate(orders):
        if np.any(sigmas == 0) or np.isinf(alpha):
            total[k] = np.inf
        elif q == 1.0:
            total[k] = float(np.sum(alpha / (2.0 * sigmas ** 2)))
        else:
            # distinct sigmas only: a constant schedule costs one evaluation
            uniq, counts = np.unique(sigmas, return_counts=True)
            log_a = _log_a_int(q, uniq, alpha) if float(alpha).is_integer() else _log_a_frac(q, uniq, alpha)
            total[k] = float(np.sum(counts * log_a / (alpha - 1)))
    return total


def eps_from_rdp(orders, rdp, delta):
    """The smallest eps over the orders for a target delta, by the conversion of Balle et al.
    2020 (Proposition 12): eps = rdp - (log delta + log alpha) / (alpha - 1) + log((alpha - 1) / alpha)."""
    orders = np.asarray(orders, np.float64)
    rdp = np.asarray(rdp, np.float64)
    ok = orders > 1.01  # below, the conversion's log terms lose all precision
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = rdp - (math.log(delta) + np.log(orders)) / (orders - 1) + np.log((orders - 1) / orders)
    eps = np.where(ok & np.isfinite(eps), eps, np.inf)
    # delta >= TV bound above means eps = 0 already holds at that order
    eps = np.where(delta ** 2 + np.expm1(-rdp) > 0, 0.0, eps)
    k = int(np.argmin(eps))
    return max(0.0, float(eps[k])), float(orders[k])


def delta_from_rdp(orders, rdp, eps):
    """The smallest delta over the orders for a target eps (the same bound solved for delta):
    log delta = (alpha - 1)(rdp - eps) + (alpha - 1) log(1 - 1/alpha) - log alpha."""
    orders = np.asarray(orders, np.float64)
    rdp = np.asarray(rdp, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_d = (orders - 1) * (rdp - eps) + (orders - 1) * np.log1p(-1.0 / orders) - np.log(orders)
        # delta(eps) <= delta(0) = TV <= sqrt(1 - exp(-D_alpha)) (Bretagnolle-Huber), whatever eps
        log_tv = np.where(rdp > 0, 0.5 * np.log1p(-np.exp(-np.maximum(rdp, 1e-300))), -np.inf)
    log_d = np.where((orders > 1.01) & np.isfinite(log_d), log_d, np.inf)
    log_d = np.minimum(log_d, np.where(np.isnan(log_tv), np.inf, log_tv))
    k = int(np.argmin(log_d))
    return min(1.0, math.exp(min(log_d[k], 0.0))), float(orders[k])
