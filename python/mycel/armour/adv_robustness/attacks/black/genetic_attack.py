"""Genetic attack (Alzantot et al. 2019, as MindArmour's GeneticAttack): a population of pop_size
perturbed copies per sample, inside the L-inf ball of radius per_bounds (a fraction of the bounds'
range), evolves by fitness-proportional selection (softmax of fitness / temp), crossover weighted
by the parents' selection probabilities and sparse uniform mutation; the elite is kept. Fitness
is the label's score minus the other classes' (targeted) or its negative (untargeted). All active
samples' populations go to the model in one query per generation. A found example is shrunk
towards the input along the line between them (one query of 8 points)."""
import numpy as np

from mycel.armour._checks import check_bounds, check_number
from mycel.armour.adv_robustness.attacks.black._common import (Queries, as_batch, check_bool, check_choice,
                                                               check_model, make_rng, sparse_labels, success)

_SHRINK = np.linspace(0.125, 1.0, 8)


class GeneticAttack:
    """generate(inputs, labels) -> (is_adv (N,), adv_data, query_times (N,)); labels are the targets
    when targeted, else the true labels. seed (ours): None draws from numpy's global generator."""

    def __init__(self, model, model_type="classification", targeted=True, reserve_ratio=0.3, sparse=True,
                 pop_size=6, mutation_rate=0.005, per_bounds=0.15, max_steps=1000, step_size=0.20, temp=0.3,
                 bounds=(0, 1.0), adaptive=False, c=0.1, *, seed=None):
        o = "GeneticAttack"
        self._model = check_model(o, model)
        if check_choice(o, "model_type", model_type, ("classification", "detection")) == "detection":
            raise ValueError("GeneticAttack: model_type='detection' is not supported; use 'classification'")
        self._targeted = check_bool(o, "targeted", targeted)
        check_number(o, "reserve_ratio", reserve_ratio, lo=0.0, hi=1.0)  # detection only
        self._sparse = check_bool(o, "sparse", sparse)
        self._pop_size = check_number(o, "pop_size", pop_size, lo=1, integer=True)
        self._mutation_rate = float(check_number(o, "mutation_rate", mutation_rate, lo=0.0, hi=1.0))
        self._per_bounds = float(check_number(o, "per_bounds", per_bounds, lo=0.0, lo_open=True))
        self._max_steps = check_number(o, "max_steps", max_steps, lo=1, integer=True)
        self._step_size = float(check_number(o, "step_size", step_size, lo=0.0, lo_open=True))
        self._temp = float(check_number(o, "temp", temp, lo=0.0, lo_open=True))
        self._bounds = check_bounds(o, bounds)
        self._adaptive = check_bool(o, "adaptive", adaptive)
        check_number(o, "c", c, lo=0.0, lo_open=True)  # weight of the perturbation loss in detection only
        self._rng = make_rng(o, seed)

    def _fitness(self, s, label):
        target = s[np.arange(len(s)), label]
        others = s.sum(axis=1) - target
        return target - others if self._targeted else others - target

    def generate(self, inputs, labels):
        o = "GeneticAttack"
        x = as_batch(o, inputs)
        n, shape = x.shape[0], x.shape[1:]
        y = sparse_labels(o, labels, n, self._sparse)
        lo, hi = self._bounds if self._bounds is not None else (float(x.min()), float(x.max()))
        span = hi - lo if hi > lo else 1.0
        radius = self._per_bounds * span
        flat = x.reshape(n, -1)
        d, p, rng = flat.shape[1], self._pop_size, self._rng
        q = Queries(o, self._model, n, y)
        pop = flat[:, None, :] + rng.uniform(-radius, radius, (n, p, d))
        adv = flat.copy()
        done = np.zeros(n, bool)
        best = np.full(n, -np.inf)
        plateau = np.zeros(n, np.int64)
        adapt = np.zeros(n, np.int64)
        active = np.arange(n)
        for _ in range(self._max_steps):
            if active.size == 0:
                break
            ref = flat[active][:, None, :]
            pop = np.clip(np.clip(pop, ref - radius, ref + radius), lo, hi)
            rows = pop.reshape(-1, d)
            ids = np.repeat(active, p)
            s = q(ids, rows.reshape((-1,) + shape))
            lab = np.repeat(y[active], p)
            ok = success(s, lab, self._targeted).reshape(-1, p)
            fit = self._fitness(s, lab).reshape(-1, p)
            elite = pop[np.arange(active.size), fit.argmax(axis=1)]
            adv[active] = elite
            hit = ok.any(axis=1)
            if hit.any():
                self._finish(q, flat, y, active[hit], pop[hit, ok[hit].argmax(axis=1)], adv, shape)
                done[active[hit]] = True
            keep = ~hit
            active, pop, fit, elite = active[keep], pop[keep], fit[keep], elite[keep]
            if active.size == 0:
                break
            pop = self._next_generation(pop, fit, elite, active, best, plateau, adapt, span)
        return done, adv.reshape(x.shape).astype(np.float32), q.count

    def _finish(self, q, flat, y, ids, found, adv, shape):
        """Shrinks each found example towards its input: the smallest of 8 scales still adversarial."""
        pert = found - flat[ids]
        trial = flat[ids][:, None, :] + _SHRINK[None, :, None] * pert[:, None, :]
        s = q(np.repeat(ids, len(_SHRINK)), trial.reshape((-1,) + shape))
        ok = success(s, np.repeat(y[ids], len(_SHRINK)), self._targeted).reshape(len(ids), -1)
        ok[:, -1] = True  # the found example itself is adversarial
        adv[ids] = trial[np.arange(len(ids)), ok.argmax(axis=1)]

    def _next_generation(self, pop, fit, elite, active, best, plateau, adapt, span):
        """Selection, crossover and mutation of each active sample's population; elite kept last."""
        rng, p = self._rng, self._pop_size
        m, d = pop.shape[0], pop.shape[2]
        top = fit.max(axis=1)
        better = top > best[active]
        best[active] = np.where(better, top, best[active])
        plateau[active] = np.where(better, 0, plateau[active] + 1)
        stuck = plateau[active] > np.where(top > -0.4, 100, 300)
        adapt[active] += stuck
        plateau[active[stuck]] = 0
        if self._adaptive:  # wider, denser mutations after each plateau, decaying as MindArmour's
            noise = np.maximum(self._step_size, 0.4 * 0.9 ** adapt[active])
            rate = np.maximum(self._mutation_rate, 0.5 * 0.9 ** adapt[active])
        else:
            noise = np.full(m, self._step_size)
            rate = np.full(m, self._mutation_rate)
        z = (fit - top[:, None]) / self._temp
        probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        cdf = np.cumsum(probs, axis=1)
        pick = (rng.random_sample((m, 2 * (p - 1), 1)) * cdf[:, None, -1:] > cdf[:, None, :]).sum(axis=2)
        pick = np.minimum(pick, p - 1)
        rows = np.arange(m)[:, None]
        a, b = pick[:, :p - 1], pick[:, p - 1:]
        pa, pb = probs[rows, a], probs[rows, b]
        take_a = rng.random_sample((m, p - 1, d)) < (pa / (pa + pb))[:, :, None]
        children = np.where(take_a, pop[rows, a], pop[rows, b])
        mutate = rng.random_sample(children.shape) < rate[:, None, None]
        step = (noise * self._per_bounds * span)[:, None, None]
        children = children + mutate * rng.uniform(-1.0, 1.0, children.shape) * step
        return np.concatenate([children, elite[:, None, :]], axis=1)
