"""ImageInversionAttack (Mahendran and Vedaldi 2015, as MindArmour's): reconstructs images from
their deep representations by descending, with signed gradient steps inside input_bound,
  w0 ||f(x) - t||^2 / ||t||^2 + w1 TV(x) + w2 mean(x^2)
(each a mean over its entries; TV is the mean squared difference of adjacent pixels over the
last two axes). The gradient of the whole batch comes from one compiled grad Cell per step; the
loss is a sum over images, so each image's gradient is its own."""
import numpy as np

from mycel import Tensor, nn, ops
from mycel.armour._checks import check_bounds, check_number
from mycel.armour.adv_robustness.attacks.black._common import make_rng
from mycel.armour.adv_robustness.evaluations.attack_evaluation import _SSIM_WIN, _ssim


class _InversionGrad(nn.Cell):
    def __init__(self, network, weights, image):
        super().__init__()
        self.network = network
        self.w0, self.w1, self.w2 = weights
        self.image = image          # TV over the last two axes only for images

    def _loss(self, x, target):
        n = x.shape[0]
        diff = ops.reshape(self.network(x) - target, (n, -1))
        t = ops.reshape(target, (n, -1))
        loss = ((diff * diff).mean(axis=1) / ((t * t).mean(axis=1) + 1e-12)).sum() * self.w0
        if self.image:
            dh = x[:, :, 1:, :] - x[:, :, :-1, :]
            dw = x[:, :, :, 1:] - x[:, :, :, :-1]
            tv = ops.reshape(dh * dh, (n, -1)).mean(axis=1) + ops.reshape(dw * dw, (n, -1)).mean(axis=1)
            loss = loss + tv.sum() * self.w1
        return loss + ops.reshape(x * x, (n, -1)).mean(axis=1).sum() * self.w2

    def construct(self, x, target):
        return ops.grad(self._loss, 0)(x, target)


class ImageInversionAttack:
    """ImageInversionAttack(network, input_shape (C, H, W), input_bound, loss_weights=(1, 0.2, 5));
    step_size (the signed step, as a fraction of the bound's range) and seed are ours."""

    def __init__(self, network, input_shape, input_bound, loss_weights=(1, 0.2, 5), *, step_size=0.01, seed=None):
        o = "ImageInversionAttack"
        if not isinstance(network, nn.Cell):
            raise TypeError(f"{o}: network must be a Cell, got {type(network).__name__}")
        if not isinstance(input_shape, tuple) or not input_shape or \
                not all(isinstance(d, int) and d > 0 for d in input_shape):
            raise ValueError(f"{o}: input_shape must be a tuple of positive ints, got {input_shape!r}")
        if not isinstance(loss_weights, (list, tuple)) or len(loss_weights) != 3:
            raise ValueError(f"{o}: loss_weights must be 3 numbers, got {loss_weights!r}")
        weights = [float(check_number(o, "loss_weights", w, lo=0.0, lo_open=True)) for w in loss_weights]
        self._network, self._shape = network, input_shape
        self._bound = check_bounds(o, input_bound, allow_none=False)
        self._step = float(check_number(o, "step_size", step_size, lo=0.0, lo_open=True))
        self._rng = make_rng(o, seed)
        self._grad = _InversionGrad(network, weights, len(input_shape) == 3)

    def generate(self, target_features, iters=100):
        o = "ImageInversionAttack"
        t = np.asarray(target_features, np.float32)
        check_number(o, "iters", iters, lo=1, integer=True)
        n = t.shape[0] if t.ndim else 0
        lo, hi = self._bound
        x = (lo + self._rng.random_sample((n,) + self._shape) * 0.05 * (hi - lo)).astype(np.float32)
        out = self._network(Tensor(x)).asnumpy()
        if out.shape != t.shape:
            raise ValueError(f"{o}: target_features must have the network's output shape {out.shape} for "
                             f"{n} images, got {t.shape}")
        target = Tensor(t)
        for _ in range(iters):
            g = self._grad(Tensor(x), target).asnumpy()
            x = np.clip(x - np.sign(g) * self._step * (hi - lo), lo, hi).astype(np.float32)
        return x

    def evaluate(self, original_images, inversion_images, labels=None, new_network=None):
        """(mean relative L2 distance, mean SSIM, mean confidence of new_network in the true labels on
        the inversions, or None without labels and new_network)."""
        o = "ImageInversionAttack"
        a = np.asarray(original_images, np.float64)
        b = np.asarray(inversion_images, np.float64)
        if a.shape != b.shape or a.ndim != 4 or min(a.shape[-2:]) < _SSIM_WIN:
            raise ValueError(f"{o}: original and inversion images must share an (N, C, H, W) shape with H, W >= "
                             f"{_SSIM_WIN}, got {a.shape} and {b.shape}")
        n = len(a)
        l2 = np.linalg.norm((a - b).reshape(n, -1), axis=1) / np.maximum(np.linalg.norm(a.reshape(n, -1), axis=1),
                                                                          1e-12)
        span = self._bound[1] - self._bound[0]
        ssim = np.mean([_ssim(p, q, span) for p, q in zip(a, b)])
        confi = None
        if labels is not None and new_network is not None:
            y = np.asarray(labels).reshape(-1).astype(np.int64)
            if y.shape != (n,):
                raise ValueError(f"{o}: labels must have one entry per image ({n}), got shape {np.shape(labels)}")
            z = new_network(Tensor(b.astype(np.float32))).asnumpy().astype(np.float64)
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            confi = float(p[np.arange(n), y].mean())
        return float(l2.mean()), float(ssim), confi
