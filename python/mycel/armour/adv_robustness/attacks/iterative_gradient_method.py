"""Iterative gradient attacks: BIM, momentum (MI-FGSM) and PGD in L-inf or L2. Each step is one
compiled batch gradient; the iterate is projected back into the eps ball around the input (radius
eps * (max - min), as for the one-step methods) and into the bounds."""
import numpy as np

from mycel.armour._checks import check_norm_level, check_number
from mycel.armour.adv_robustness.attacks.gradient_method import _GradientAttack, normalize_grad


def project(delta, radius, norm_level):
    """The nearest point of the norm_level ball of `radius` (per sample) to delta."""
    if norm_level == "inf":
        return np.clip(delta, -radius, radius)
    flat = delta.reshape(delta.shape[0], -1).astype(np.float64)
    norms = np.abs(flat).sum(axis=1) if norm_level == 1 else np.sqrt((flat * flat).sum(axis=1))
    if norm_level == 1:
        # L1 ball: exact projection by soft thresholding (Duchi et al. 2008), per sample.
        out = flat.copy()
        for i in np.nonzero(norms > radius)[0]:
            a = np.sort(np.abs(flat[i]))[::-1]
            cs = np.cumsum(a)
            j = np.arange(1, a.size + 1)
            rho = np.nonzero(a - (cs - radius) / j > 0)[0][-1]
            theta = (cs[rho] - radius) / (rho + 1)
            out[i] = np.sign(flat[i]) * np.maximum(np.abs(flat[i]) - theta, 0)
        return out.reshape(delta.shape).astype(np.float32)
    factor = np.minimum(1.0, radius / np.maximum(norms, 1e-30)).reshape((-1,) + (1,) * (delta.ndim - 1))
    return (delta * factor).astype(np.float32)


class _IterativeAttack(_GradientAttack):
    def __init__(self, network, eps, eps_iter, bounds, is_targeted, nb_iter, loss_fn, norm_level):
        super().__init__(network, bounds, is_targeted, loss_fn)
        self._eps = check_number(self._name(), "eps", eps, lo=0.0)
        self._eps_iter = check_number(self._name(), "eps_iter", eps_iter, lo=0.0)
        self._nb_iter = check_number(self._name(), "nb_iter", nb_iter, lo=1, integer=True)
        self._norm_level = check_norm_level(self._name(), norm_level)

    def _direction(self, g, state):
        return normalize_grad(g, self._norm_level)

    def generate(self, inputs, labels):
        x, onehot, _ = self._prepare(inputs, labels)
        scale = self._scale()
        adv, state = x.copy(), {}
        for _ in range(self._nb_iter):
            g = self._loss_grad(adv, onehot)
            step = adv + self._eps_iter * scale * self._direction(g, state)
            adv = self._clip(x + project(step - x, self._eps * scale, self._norm_level)).astype(np.float32)
        return adv


class BasicIterativeMethod(_IterativeAttack):
    """BIM (Kurakin et al.): nb_iter FGSM steps of eps_iter, clipped to the L-inf eps ball."""

    def __init__(self, network, eps=0.3, eps_iter=0.1, bounds=(0.0, 1.0), is_targeted=False, nb_iter=5,
                 loss_fn=None):
        super().__init__(network, eps, eps_iter, bounds, is_targeted, nb_iter, loss_fn, "inf")


class ProjectedGradientDescent(_IterativeAttack):
    """PGD (Madry et al.): steps of eps_iter along the normalized gradient (sign for 'inf'),
    projected onto the norm_level ball of radius eps."""

    def __init__(self, network, eps=0.3, eps_iter=0.1, bounds=(0.0, 1.0), is_targeted=False, nb_iter=5,
                 norm_level="inf", loss_fn=None):
        super().__init__(network, eps, eps_iter, bounds, is_targeted, nb_iter, loss_fn, norm_level)


class MomentumIterativeMethod(_IterativeAttack):
    """MI-FGSM (Dong et al.): the gradient, divided by its mean absolute value per sample, is
    accumulated with decay_factor; steps follow the accumulated direction."""

    def __init__(self, network, eps=0.3, eps_iter=0.1, bounds=(0.0, 1.0), is_targeted=False, nb_iter=5,
                 decay_factor=1.0, norm_level="inf", loss_fn=None):
        super().__init__(network, eps, eps_iter, bounds, is_targeted, nb_iter, loss_fn, norm_level)
        self._decay = check_number(self._name(), "decay_factor", decay_factor, lo=0.0)

    def _direction(self, g, state):
        l1 = np.abs(g.reshape(g.shape[0], -1)).mean(axis=1).reshape((-1,) + (1,) * (g.ndim - 1))
        state["m"] = self._decay * state.get("m", 0.0) + g / np.where(l1 > 0, l1, 1.0)
        return normalize_grad(state["m"], self._norm_level)
