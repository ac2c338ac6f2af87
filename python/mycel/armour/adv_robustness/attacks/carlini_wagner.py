"""Carlini-Wagner L2 attack: minimize ||x' - x||^2 + c * max(margin + confidence, 0) over
x' = box_min + (tanh(w) + 1) / 2 * (box_max - box_min), with Adam on w and a binary search over
c per sample. The gradient in w is one compiled batch grad per iteration."""
import numpy as np

from mycel import Tensor, nn, ops
from mycel.armour._checks import check_number
from mycel.armour.adv_robustness.attacks.attack import Attack


class _CWLossGrad(nn.Cell):
    def __init__(self, network, box_min, box_max, confidence, targeted):
        super().__init__()
        self.network = network
        self.lo, self.span = box_min, box_max - box_min
        self.confidence = confidence
        self.sign = -1.0 if targeted else 1.0

    def _loss(self, w, x0, onehot, const):
        x = (ops.tanh(w) + 1.0) * (0.5 * self.span) + self.lo
        z = self.network(x)
        real = (z * onehot).sum(axis=1)
        other = ops.amax(z - onehot * 1e9, axis=1)
        # untargeted: push the true logit below the best other; targeted: the target above it.
        margin = ops.relu(self.sign * (real - other) + self.confidence)
        d = x - x0
        l2 = ops.reshape(d * d, (d.shape[0], -1)).sum(axis=1)
        return (l2 + const * margin).sum()

    def construct(self, w, x0, onehot, const):
        return ops.grad(self._loss, 0)(w, x0, onehot, const)


class CarliniWagnerL2Attack(Attack):
    def __init__(self, network, num_classes, box_min=0.0, box_max=1.0, bin_search_steps=5, max_iterations=1000,
                 confidence=0, learning_rate=5e-3, initial_const=1e-2, abort_early_check_ratio=5e-2,
                 targeted=False, fast=True, abort_early=True, sparse=True):
        super().__init__(network)
        name = "CarliniWagnerL2Attack"
        self._num_classes = check_number(name, "num_classes", num_classes, lo=2, integer=True)
        self._lo = float(check_number(name, "box_min", box_min))
        self._hi = float(check_number(name, "box_max", box_max))
        if not self._lo < self._hi:
            raise ValueError(f"{name}: box_min must be < box_max, got {box_min} and {box_max}")
        self._bs_steps = check_number(name, "bin_search_steps", bin_search_steps, lo=1, integer=True)
        self._iters = check_number(name, "max_iterations", max_iterations, lo=1, integer=True)
        self._confidence = float(check_number(name, "confidence", confidence, lo=0.0))
        self._lr = check_number(name, "learning_rate", learning_rate, lo=0.0, lo_open=True)
        self._c0 = check_number(name, "initial_const", initial_const, lo=0.0, lo_open=True)
        self._check_ratio = check_number(name, "abort_early_check_ratio", abort_early_check_ratio,
                                         lo=0.0, hi=1.0, lo_open=True)
        for flag, v in (("targeted", targeted), ("fast", fast), ("abort_early", abort_early), ("sparse", sparse)):
            if not isinstance(v, bool):
                raise TypeError(f"{name}: {flag} must be a bool, got {type(v).__name__}")
        self._targeted, self._abort_early, self._sparse = targeted, abort_early, sparse
        self._grad = _CWLossGrad(network, self._lo, self._hi, self._confidence, targeted)

    def _success(self, logits, label):
        z = logits.astype(np.float64).copy()
        idx = np.arange(len(label))
        if self._targeted:
            z[idx, label] -= self._confidence
            return z.argmax(axis=1) == label
        z[idx, label] += self._confidence
        return z.argmax(axis=1) != label

    def generate(self, inputs, labels):
        y = np.asarray(labels)
        if self._sparse and y.ndim != 1:
            raise ValueError(f"CarliniWagnerL2Attack: with sparse=True labels must have shape (N,), got {y.shape}")
        x0, onehot, k = self._prepare(inputs, y)
        if k != self._num_classes:
            raise ValueError(f"CarliniWagnerL2Attack: the network has {k} classes, num_classes is {self._num_classes}")
        if x0.min() < self._lo or x0.max() > self._hi:
            raise ValueError(f"CarliniWagnerL2Attack: inputs must lie in [box_min, box_max] = "
                             f"[{self._lo}, {self._hi}], got [{x0.min()}, {x0.max()}]")
        label = onehot.argmax(axis=1)
        n, span = x0.shape[0], self._hi - self._lo
        w0 = np.arctanh(np.clip((x0 - self._lo) / span * 2.0 - 1.0, -1 + 1e-6, 1 - 1e-6)).astype(np.float32)
        lower, upper = np.zeros(n), np.full(n, 1e10)
        const = np.full(n, float(self._c0))
        best_l2, best_adv = np.full(n, np.inf), x0.copy()
        x0_t, oh_t = Tensor(x0), Tensor(onehot)
        check_every = max(1, int(self._iters * self._check_ratio))
        for _ in range(self._bs_steps):
            w = w0.copy()
            m, v = np.zeros_like(w), np.zeros_like(w)
            found = np.zeros(n, bool)
            prev = np.inf
            c_t = Tensor(const.astype(np.float32))
            for t in range(1, self._iters + 1):
                g = self._grad(Tensor(w), x0_t, oh_t, c_t).asnumpy()
                m = 0.9 * m + 0.1 * g
                v = 0.999 * v + 0.001 * g * g
                w = (w - self._lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)).astype(np.float32)
                adv = (np.tanh(w) + 1.0) * 0.5 * span + self._lo
                logits = self._logits(adv)
                l2 = ((adv - x0).reshape(n, -1).astype(np.float64) ** 2).sum(axis=1)
                ok = self._success(logits, label)
                better = ok & (l2 < best_l2)
                best_l2[better] = l2[better]
                best_adv[better] = adv[better]
                found |= ok
                if self._abort_early and t % check_every == 0:
                    z = logits.astype(np.float64)
                    real = z[np.arange(n), label]
                    other = np.where(onehot > 0, -np.inf, z).max(axis=1)
                    sgn = -1.0 if self._targeted else 1.0
                    loss = (l2 + const * np.maximum(sgn * (real - other) + self._confidence, 0)).sum()
                    if loss > prev * 0.9999:
                        break
                    prev = loss
            # binary search on c: smaller where the attack succeeded, larger where it did not.
            upper = np.where(found, np.minimum(upper, const), upper)
            lower = np.where(found, lower, np.maximum(lower, const))
            const = np.where(upper < 1e9, (lower + upper) / 2, const * 10)
        return best_adv.astype(np.float32)
