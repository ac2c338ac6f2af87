"""NES attack (Ilyas et al. 2018, "Black-box adversarial attacks with limited queries and
information"), targeted, in MindArmour's three scenes:
  'Query_Limit'  the model's full scores: projected sign-gradient descent on the target's cross
                 entropy inside the L-inf ball of radius epsilon, the gradient estimated by NES
                 (antithetic Gaussian samples, samples_per_draw points per step);
  'Partial_Info' only the top_k classes' probabilities: start from an image of the target class
                 (set_target_images) and shrink the ball from starting_eps to epsilon while the
                 target stays in the top k, backtracking the learning rate and the shrink;
  'Label_Only'   only the top_k labels: as Partial_Info with a proxy score, the target's rank in
                 the top k averaged over zero_iters noisy copies of each point.
Inputs lie in [0, 1]. Every row sent to the model counts as a query; an attack stops before it
would exceed max_queries."""
import numpy as np

from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.black._common import (Queries, as_batch, check_bool, check_choice,
                                                               check_model, make_rng, sparse_labels)

_SCENES = ("Query_Limit", "Partial_Info", "Label_Only")


def _softmax(s):
    z = np.exp(s - s.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _box(x, eps):
    """The L-inf ball of radius eps around x within the data range [0, 1] (as MindArmour's NES)."""
    return np.clip(x - eps, 0.0, 1.0), np.clip(x + eps, 0.0, 1.0)


class _OutOfQueries(Exception):
    pass


class NES:
    """generate(inputs, labels) with target labels -> (is_adv, adv_data, query_times)."""

    def __init__(self, model, scene, max_queries=10000, top_k=-1, num_class=10, batch_size=128, epsilon=0.3,
                 samples_per_draw=128, momentum=0.9, learning_rate=1e-3, max_lr=5e-2, min_lr=5e-4, sigma=1e-3,
                 plateau_length=20, plateau_drop=2.0, adv_thresh=0.25, zero_iters=10, starting_eps=1.0,
                 starting_delta_eps=0.5, label_only_sigma=1e-3, conservative=2, sparse=True, *, seed=None):
        o = "NES"
        self._model = check_model(o, model)
        self._scene = check_choice(o, "scene", scene, _SCENES)
        self._max_queries = check_number(o, "max_queries", max_queries, lo=1, integer=True)
        self._num_class = check_number(o, "num_class", num_class, lo=2, integer=True)
        check_number(o, "top_k", top_k, integer=True)
        if self._scene == "Query_Limit":
            top_k = self._num_class
        elif not 1 <= top_k <= self._num_class:
            raise ValueError(f"{o}: in scene {scene!r} top_k must be in [1, num_class={num_class}], got {top_k}")
        self._k = top_k
        self._batch_size = check_number(o, "batch_size", batch_size, lo=2, integer=True)
        self._samples_per_draw = check_number(o, "samples_per_draw", samples_per_draw, lo=2, integer=True)
        pos = dict(lo=0.0, lo_open=True)
        self._epsilon = float(check_number(o, "epsilon", epsilon, **pos))
        self._momentum = float(check_number(o, "momentum", momentum, lo=0.0, hi=1.0, hi_open=True))
        check_number(o, "learning_rate", learning_rate, **pos)  # MindArmour's argument; steps use max_lr..min_lr
        self._max_lr = float(check_number(o, "max_lr", max_lr, **pos))
        self._min_lr = float(check_number(o, "min_lr", min_lr, **pos))
        if self._min_lr > self._max_lr:
            raise ValueError(f"{o}: min_lr must be <= max_lr, got {min_lr!r} > {max_lr!r}")
        self._sigma = float(check_number(o, "sigma", sigma, **pos))
        self._plateau_length = check_number(o, "plateau_length", plateau_length, lo=1, integer=True)
        self._plateau_drop = float(check_number(o, "plateau_drop", plateau_drop, lo=1.0, lo_open=True))
        self._adv_thresh = float(check_number(o, "adv_thresh", adv_thresh, **pos))
        self._zero_iters = check_number(o, "zero_iters", zero_iters, lo=1, integer=True)
        self._starting_eps = float(check_number(o, "starting_eps", starting_eps, **pos))
        self._starting_delta_eps = float(check_number(o, "starting_delta_eps", starting_delta_eps, **pos))
        self._label_only_sigma = float(check_number(o, "label_only_sigma", label_only_sigma, **pos))
        self._conservative = check_number(o, "conservative", conservative, lo=1, integer=True)
        self._sparse = check_bool(o, "sparse", sparse)
        self._rng = make_rng(o, seed)
        self._target_images = None

    def set_target_images(self, target_images):
        """Images of the target classes, one per input: the starting points of Partial_Info and Label_Only."""
        self._target_images = as_batch("NES", target_images)

    def generate(self, inputs, labels):
        o = "NES"
        x = as_batch(o, inputs)
        n = x.shape[0]
        y = sparse_labels(o, labels, n, self._sparse)
        if y.size and (y.min() < 0 or y.max() >= self._num_class):
            raise ValueError(f"{o}: labels must lie in [0, num_class={self._num_class}), got [{y.min()}, {y.max()}]")
        if self._scene != "Query_Limit":
            if self._target_images is None:
                raise ValueError(f"{o}: scene {self._scene!r} starts from target images: call set_target_images first")
            if self._target_images.shape != x.shape:
                raise ValueError(f"{o}: target images must have the inputs' shape {x.shape}, got "
                                 f"{self._target_images.shape}")
        q = Queries(o, self._model, n, y)
        ok = np.zeros(n, bool)
        adv = x.copy()
        for i in range(n):
            start = x[i] if self._scene == "Query_Limit" else self._target_images[i]
            ok[i], adv[i] = self._attack_one(q, i, x[i], int(y[i]), start)
        return ok, adv, q.count

    # --- one sample ---------------------------------------------------------------------------
    def _ask(self, q, i, pts):
        if q.count[i] + len(pts) > self._max_queries:
            raise _OutOfQueries
        out = q(np.full(len(pts), i), pts)
        if out.shape[1] != self._num_class:
            raise ValueError(f"NES: the model returns {out.shape[1]} classes, num_class is {self._num_class}")
        return out

    def _in_top_k(self, s, target):
        return (np.argsort(-s, axis=1, kind="stable")[:, :self._k] == target).any(axis=1)

    def _losses(self, q, i, pts, target):
        """Per point: the loss whose NES gradient the attack descends (see the module doc)."""
        if self._scene == "Query_Limit":
            return -np.log(np.maximum(_softmax(self._ask(q, i, pts))[:, target], 1e-30))
        if self._scene == "Partial_Info":
            s = self._ask(q, i, pts)
            p = np.where(self._in_top_k(s, target), _softmax(s)[:, target], 0.0)
            return -np.log(np.maximum(p, 1e-30))
        z = self._zero_iters
        noisy = pts[None] + self._label_only_sigma * self._rng.standard_normal((z,) + pts.shape)
        s = self._ask(q, i, noisy.reshape((-1,) + pts.shape[1:]).astype(np.float32))
        order = np.argsort(-s, axis=1, kind="stable")[:, :self._k]           # best first
        rank = np.where(order == target, (self._k - np.arange(self._k)) / self._k, 0.0).sum(axis=1)
        return 1.0 - rank.reshape(z, -1).mean(axis=0)

    def _gradient(self, q, i, adv, target):
        half = self._batch_size // 2
        grads, losses = [], []
        for _ in range(max(1, self._samples_per_draw // self._batch_size)):
            u = self._rng.standard_normal((half,) + adv.shape)
            u = np.concatenate([u, -u])
            loss = self._losses(q, i, (adv[None] + self._sigma * u).astype(np.float32), target)
            grads.append((loss.reshape((-1,) + (1,) * adv.ndim) * u).mean(axis=0) / self._sigma)
            losses.append(loss.mean())
        return float(np.mean(losses)), np.mean(grads, axis=0)

    def _attack_one(self, q, i, x, target, start):
        limited = self._scene == "Query_Limit"
        eps = self._epsilon if limited else self._starting_eps
        delta_eps, max_lr = self._starting_delta_eps, self._max_lr
        adv = np.clip(start, *_box(x, eps)).astype(np.float32)
        grad, history = 0.0, []
        try:
            while True:
                if eps <= self._epsilon and self._ask(q, i, adv[None]).argmax(axis=1)[0] == target:
                    return True, adv
                loss, g = self._gradient(q, i, adv, target)
                grad = self._momentum * grad + (1.0 - self._momentum) * g
                history = (history + [loss])[-self._plateau_length:]
                if len(history) == self._plateau_length and history[-1] > history[0]:
                    max_lr, history = max(max_lr / self._plateau_drop, self._min_lr), []
                lr = max_lr
                shrink = delta_eps if (not limited and loss < self._adv_thresh and eps > self._epsilon) else 0.0
                while True:
                    new_eps = max(eps - shrink, self._epsilon) if not limited else eps
                    prop = np.clip(adv - lr * np.sign(grad), *_box(x, new_eps)).astype(np.float32)
                    if limited or self._in_top_k(self._ask(q, i, prop[None]), target)[0]:
                        if shrink > 0:
                            delta_eps, history = max(shrink, 0.1), []
                        adv = prop
                        eps = max(eps - shrink / self._conservative, self._epsilon) if shrink > 0 else eps
                        break
                    if lr >= 2 * self._min_lr:
                        lr /= 2
                    else:
                        shrink /= 2
                        if shrink < 2e-3:
                            return False, adv  # no step keeps the target in the top k: did not converge
                        lr = max_lr
        except _OutOfQueries:
            return False, adv
