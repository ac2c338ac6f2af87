"""Gradient rows for the 3-d windowed ops and ctc_loss (checked against central differences)."""
import numpy as np

from . import GradCase


def _ctc(t, n, c, s, blank=0):
    def gen(rng):
        logits = rng.standard_normal((t, n, c))
        lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        classes = [k for k in range(c) if k != blank]
        targets = rng.choice(classes, size=(n, s)).astype(np.int64)
        tl = rng.integers(1, s + 1, size=n).astype(np.int64)
        il = np.full(n, t, dtype=np.int64)
        il[0] = max(2 * tl[0] + 1, t - 1)
        return [lp, targets, il, tl]
    return gen


CASES = [
    GradCase("conv3d", [(2, 2, 4, 5, 4), (3, 2, 3, 2, 3), (3,)]),
    GradCase("conv3d", [(1, 4, 5, 4, 5), (4, 2, 2, 3, 2), None],
             attrs=dict(stride=(2, 1, 2), pad_mode="pad", pad=(1, 0, 1, 1, 0, 1), dilation=(1, 2, 1), groups=2),
             id="pad_groups"),
    GradCase("conv3d", [(1, 2, 5, 4, 4), (2, 2, 3, 3, 2), None], attrs=dict(stride=2, pad_mode="same"), id="same"),
    GradCase("conv3d_backprop_input", [(1, 3, 3, 4, 2), (3, 2, 3, 2, 3)], attrs=dict(input_size=(1, 2, 5, 5, 4))),
    GradCase("conv3d_backprop_filter", [(1, 3, 3, 4, 2), (1, 2, 5, 5, 4)], attrs=dict(filter_size=(3, 2, 3, 2, 3))),
    GradCase("max_pool3d", lambda rng: [rng.permutation(2 * 2 * 4 * 5 * 4).reshape(2, 2, 4, 5, 4) * 0.1],
             attrs=dict(kernel_size=2, strides=2)),
    GradCase("max_pool3d", lambda rng: [rng.permutation(2 * 5 * 5 * 5).reshape(2, 5, 5, 5) * 0.1],
             attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1), id="cdhw_pad"),
    GradCase("avg_pool3d", [(2, 2, 4, 5, 4)], attrs=dict(kernel_size=2, strides=2)),
    GradCase("avg_pool3d", [(1, 2, 5, 5, 5)], attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1,
                                                         count_include_pad=False), id="pad_exclude"),
    GradCase("avg_pool3d", [(1, 2, 5, 4, 5)], attrs=dict(kernel_size=(3, 2, 2), strides=2, pad_mode="same"),
             id="same"),
    GradCase("avg_pool3d_grad", [(1, 2, 5, 5, 5), (1, 2, 3, 3, 3)],
             attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1), wrt=[1]),
    GradCase("ctc_loss", _ctc(6, 3, 4, 2), wrt=[0], outputs=[0]),
    GradCase("ctc_loss", _ctc(5, 2, 3, 2, blank=1), attrs=dict(blank=1, reduction="sum"), wrt=[0], outputs=[0],
             id="sum_blank1"),
    GradCase("ctc_loss", _ctc(5, 2, 4, 2), attrs=dict(reduction="none"), wrt=[0], outputs=[0], id="none"),
]
