"""HopSkipJumpAttack (Chen, Jordan and Wainwright 2020), a decision-based attack: from an
adversarial starting point it alternates a binary search to the decision boundary, a Monte-Carlo
estimate of the boundary's normal from the model's yes/no answers at num_evals random points
around it (one batched query per batch_size points), and a step along that estimate whose size
is found by geometric progression or a grid; 'l2' or 'linf' is the distance it shrinks."""
import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.black._common import (Queries, as_batch, check_bool, check_choice,
                                                               check_model, make_rng, sparse_labels, success)


class HopSkipJumpAttack:
    """generate(inputs, labels) -> (is_adv, adv_data, query_times). labels=None: untargeted (away from
    the model's own prediction); labels given: targeted at them, starting from the images of
    set_target_images(...) if set, else from random points of the target class."""

    def __init__(self, model, init_num_evals=100, max_num_evals=1000, stepsize_search="geometric_progression",
                 num_iterations=20, gamma=1.0, constraint="l2", batch_size=32, clip_min=0.0, clip_max=1.0,
                 sparse=True, *, seed=None):
        o = "HopSkipJumpAttack"
        self._model = check_model(o, model)
        self._init_num_evals = check_number(o, "init_num_evals", init_num_evals, lo=1, integer=True)
        self._max_num_evals = check_number(o, "max_num_evals", max_num_evals, lo=1, integer=True)
        self._stepsize_search = check_choice(o, "stepsize_search", stepsize_search,
                                             ("geometric_progression", "grid_search"))
        self._num_iterations = check_number(o, "num_iterations", num_iterations, lo=1, integer=True)
        self._gamma = float(check_number(o, "gamma", gamma, lo=0.0, lo_open=True))
        self._constraint = check_choice(o, "constraint", constraint, ("l2", "linf"))
        self._batch_size = check_number(o, "batch_size", batch_size, lo=1, integer=True)
        self._clip_min = float(check_number(o, "clip_min", clip_min))
        self._clip_max = float(check_number(o, "clip_max", clip_max))
        if not self._clip_min < self._clip_max:
            raise ValueError(f"{o}: clip_min must be < clip_max, got {clip_min!r} and {clip_max!r}")
        self._sparse = check_bool(o, "sparse", sparse)
        self._rng = make_rng(o, seed)
        self._target_images = None

    def set_target_images(self, target_images):
        """Starting points of a targeted attack, one per input, classified as the target labels."""
        self._target_images = as_batch("HopSkipJumpAttack", target_images)

    def generate(self, inputs, labels=None):
        o = "HopSkipJumpAttack"
        x = as_batch(o, inputs)
        n = x.shape[0]
        targeted = labels is not None
        y = sparse_labels(o, labels, n, self._sparse) if targeted else None
        if self._target_images is not None and targeted and self._target_images.shape != x.shape:
            raise ValueError(f"{o}: target images must have the inputs' shape {x.shape}, got "
                             f"{self._target_images.shape}")
        q = Queries(o, self._model, n, y)
        if not targeted:  # untargeted: move away from the model's own label
            y = q(np.arange(n), x).argmax(axis=1)
        adv = x.copy()
        ok = np.zeros(n, bool)
        for i in range(n):
            start = self._target_images[i] if targeted and self._target_images is not None else None
            found = self._attack_one(q, i, x[i], y[i], targeted, start)
            if found is not None:
                ok[i], adv[i] = True, found
        return ok, adv, q.count

    # --- one sample ---------------------------------------------------------------------------
    def _is_adv(self, q, i, pts, label, targeted):
        hit = np.zeros(len(pts), bool)
        for s in range(0, len(pts), self._batch_size):
            part = pts[s:s + self._batch_size]
            hit[s:s + len(part)] = success(q(np.full(len(part), i), part), label, targeted)
        return hit

    def _dist(self, a, b):
        v = (a - b).ravel()
        return np.linalg.norm(v) if self._constraint == "l2" else np.abs(v).max()

    def _project(self, x, p, alpha):
        """The point a fraction alpha of the way from x to p (l2), or p clipped to the box of radius
        alpha * ||p - x||_inf around x (linf)."""
        if self._constraint == "l2":
            return (1 - alpha) * x + alpha * p
        r = alpha * np.abs(p - x).max()
        return np.clip(p, x - r, x + r)

    def _boundary(self, q, i, x, p, label, targeted, theta):
        """Binary search between x (not adversarial) and p (adversarial) until within theta."""
        lo, hi = 0.0, 1.0
        tol = theta if self._constraint == "l2" else min(theta, 1.0)
        while hi - lo > tol:
            mid = (lo + hi) / 2
            if self._is_adv(q, i, self._project(x, p, mid)[None], label, targeted)[0]:
                hi = mid
            else:
                lo = mid
        return self._project(x, p, hi)

    def _start(self, q, i, x, label, targeted, start):
        if start is not None:
            return start if self._is_adv(q, i, start[None], label, targeted)[0] else None
        for _ in range(10):  # random points, a batch at a time
            pts = self._rng.uniform(self._clip_min, self._clip_max, (self._batch_size,) + x.shape)
            hit = self._is_adv(q, i, pts.astype(np.float32), label, targeted)
            if hit.any():
                return pts[hit.argmax()].astype(np.float32)
        return None

    def _attack_one(self, q, i, x, label, targeted, start):
        d = x.size
        theta = self._gamma / (np.sqrt(d) * d) if self._constraint == "l2" else self._gamma / (d * d)
        p = self._start(q, i, x, label, targeted, start)
        if p is None:
            return None
        xb = self._boundary(q, i, x, p, label, targeted, theta)
        dist = self._dist(xb, x)
        for t in range(1, self._num_iterations + 1):
            if t == 1:
                delta = 0.1 * (self._clip_max - self._clip_min)
            else:
                delta = (np.sqrt(d) if self._constraint == "l2" else d) * theta * dist
            evals = int(min(self._init_num_evals * np.sqrt(t), self._max_num_evals))
            grad = self._estimate_normal(q, i, xb, label, targeted, evals, delta)
            update = grad if self._constraint == "l2" else np.sign(grad)
            if self._stepsize_search == "geometric_progression":
                eps = dist / np.sqrt(t)
                while eps > 1e-12:
                    cand = np.clip(xb + eps * update, self._clip_min, self._clip_max)
                    if self._is_adv(q, i, cand[None], label, targeted)[0]:
                        break
                    eps /= 2
                else:
                    cand = xb
            else:  # grid: all 20 sizes in one query, the best of those still adversarial after the search
                sizes = np.logspace(-4, 0, 20) * dist
                cands = np.clip(xb[None] + sizes.reshape((-1,) + (1,) * x.ndim) * update[None],
                                self._clip_min, self._clip_max)
                hit = self._is_adv(q, i, cands, label, targeted)
                cand = cands[np.nonzero(hit)[0][-1]] if hit.any() else xb
            new = self._boundary(q, i, x, cand.astype(np.float32), label, targeted, theta)
            if self._dist(new, x) <= dist:
                xb, dist = new, self._dist(new, x)
        return xb.astype(np.float32)

    def _estimate_normal(self, q, i, xb, label, targeted, evals, delta):
        shape = (evals,) + xb.shape
        u = self._rng.standard_normal(shape) if self._constraint == "l2" else self._rng.uniform(-1, 1, shape)
        u /= np.sqrt((u.reshape(evals, -1) ** 2).sum(axis=1)).reshape((-1,) + (1,) * xb.ndim)
        pts = np.clip(xb[None] + delta * u, self._clip_min, self._clip_max)
        u = (pts - xb[None]) / delta
        f = 2.0 * self._is_adv(q, i, pts.astype(np.float32), label, targeted) - 1.0
        if abs(f.mean()) < 1.0:  # a baseline lowers the variance unless every answer agrees
            f = f - f.mean()
        g = (f.reshape((-1,) + (1,) * xb.ndim) * u).mean(axis=0)
        return g / max(np.linalg.norm(g), 1e-12)
