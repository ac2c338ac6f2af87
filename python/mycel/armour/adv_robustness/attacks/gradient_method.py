"""One-step gradient attacks (FGM, FGSM, R+FGSM, least-likely class). As in MindArmour, eps is a
fraction of the bounds' range: the step is eps * (max - min) * normalized gradient."""
import numpy as np

from mycel import Tensor, nn
from mycel.armour._checks import check_bounds, check_norm_level, check_number
from mycel.armour.adv_robustness.attacks.attack import Attack, _LossInputGrad, _SoftmaxCE


def normalize_grad(g, norm_level):
    """Per sample: sign for 'inf', g / ||g||_1 for 1, g / ||g||_2 for 2 (zero gradients stay zero)."""
    if norm_level == "inf":
        return np.sign(g)
    flat = g.reshape(g.shape[0], -1).astype(np.float64)
    norms = np.abs(flat).sum(axis=1) if norm_level == 1 else np.sqrt((flat * flat).sum(axis=1))
    norms = np.where(norms > 0, norms, 1.0).reshape((-1,) + (1,) * (g.ndim - 1))
    return (g / norms).astype(np.float32)


class _GradientAttack(Attack):
    """Shared state: the loss (cross entropy on one-hot labels unless loss_fn is given), bounds,
    and the compiled input-gradient Cell."""

    def __init__(self, network, bounds, is_targeted, loss_fn):
        super().__init__(network)
        self._bounds = check_bounds(self._name(), bounds)
        if not isinstance(is_targeted, bool):
            raise TypeError(f"{self._name()}: is_targeted must be a bool, got {type(is_targeted).__name__}")
        self._is_targeted = is_targeted
        if loss_fn is not None and not isinstance(loss_fn, nn.Cell):
            raise TypeError(f"{self._name()}: loss_fn must be a Cell (logits, one-hot labels) -> loss, got "
                            f"{type(loss_fn).__name__}")
        self._grad_cell = _LossInputGrad(network, loss_fn if loss_fn is not None else _SoftmaxCE())

    def _scale(self):
        return 1.0 if self._bounds is None else self._bounds[1] - self._bounds[0]

    def _clip(self, x):
        return x if self._bounds is None else np.clip(x, self._bounds[0], self._bounds[1])

    def _loss_grad(self, x, onehot):
        """The gradient that increases the attack objective: +grad(loss) untargeted, -grad towards a target."""
        g = self._grad_cell(Tensor(np.ascontiguousarray(x, np.float32)), Tensor(onehot)).asnumpy()
        return -g if self._is_targeted else g


class FastGradientMethod(_GradientAttack):
    """x + eps * (max - min) * g / ||g|| (norm_level 1, 2 or inf = sign); with alpha, a random
    sign step of size alpha first and eps - alpha for the gradient step."""

    def __init__(self, network, eps=0.07, alpha=None, bounds=(0.0, 1.0), norm_level=2, is_targeted=False,
                 loss_fn=None):
        super().__init__(network, bounds, is_targeted, loss_fn)
        self._eps = check_number(self._name(), "eps", eps, lo=0.0)
        self._alpha = None if alpha is None else check_number(self._name(), "alpha", alpha, lo=0.0)
        if self._alpha is not None and self._alpha > self._eps:
            raise ValueError(f"{self._name()}: alpha must be <= eps, got alpha={alpha} > eps={eps}")
        self._norm_level = check_norm_level(self._name(), norm_level)

    def _targets(self, x, onehot):
        return onehot

    def generate(self, inputs, labels):
        x, onehot, _ = self._prepare(inputs, labels)
        onehot = self._targets(x, onehot)
        eps, start = self._eps, x
        if self._alpha is not None:
            start = self._clip(x + self._alpha * self._scale() * np.sign(np.random.normal(size=x.shape)))
            start = start.astype(np.float32)
            eps = self._eps - self._alpha
        g = self._loss_grad(start, onehot)
        adv = start + eps * self._scale() * normalize_grad(g, self._norm_level)
        return self._clip(adv).astype(np.float32)


class FastGradientSignMethod(FastGradientMethod):
    """FGSM (Goodfellow et al.): x + eps * (max - min) * sign(grad_x loss)."""

    def __init__(self, network, eps=0.07, alpha=None, bounds=(0.0, 1.0), is_targeted=False, loss_fn=None):
        super().__init__(network, eps, alpha, bounds, "inf", is_targeted, loss_fn)


class RandomFastGradientMethod(FastGradientMethod):
    """FGM after a random sign step of size alpha (Tramer et al.)."""

    def __init__(self, network, eps=0.07, alpha=0.035, bounds=(0.0, 1.0), norm_level=2, is_targeted=False,
                 loss_fn=None):
        if alpha is None:
            raise ValueError(f"{type(self).__name__}: alpha must be a number, got None")
        super().__init__(network, eps, alpha, bounds, norm_level, is_targeted, loss_fn)


class RandomFastGradientSignMethod(RandomFastGradientMethod):
    """R+FGSM: a random sign step of size alpha, then FGSM with eps - alpha."""

    def __init__(self, network, eps=0.07, alpha=0.035, bounds=(0.0, 1.0), is_targeted=False, loss_fn=None):
        super().__init__(network, eps, alpha, bounds, "inf", is_targeted, loss_fn)


class LeastLikelyClassMethod(FastGradientSignMethod):
    """Targeted FGSM towards each input's least likely class under the network (labels are
    checked for shape but the target is the network's arg-min class)."""

    def __init__(self, network, eps=0.07, alpha=None, bounds=(0.0, 1.0), loss_fn=None):
        super().__init__(network, eps, alpha, bounds, True, loss_fn)

    def _targets(self, x, onehot):
        least = self._logits(x).argmin(axis=1)
        return np.eye(onehot.shape[1], dtype=np.float32)[least]


class RandomLeastLikelyClassMethod(LeastLikelyClassMethod):
    """The least-likely-class method after a random sign step of size alpha."""

    def __init__(self, network, eps=0.07, alpha=0.035, bounds=(0.0, 1.0), loss_fn=None):
        if alpha is None:
            raise ValueError(f"{type(self).__name__}: alpha must be a number, got None")
        super().__init__(network, eps, alpha, bounds, loss_fn)
