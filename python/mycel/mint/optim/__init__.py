"""mindspore.mint.optim: PyTorch-style optimizers (params, lr, betas, ...)."""
from mycel import nn as _nn


class AdamW(_nn.AdamW):
    """AdamW with decoupled weight decay: AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    weight_decay=1e-2) over mycel.nn.AdamW; amsgrad and maximize are not supported."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 *, maximize=False):
        if amsgrad or maximize:
            raise NotImplementedError("mint.optim.AdamW: amsgrad and maximize are not supported")
        if len(tuple(betas)) != 2:
            raise ValueError(f"AdamW: betas must be a pair, got {betas!r}")
        super().__init__(params, learning_rate=lr, beta1=betas[0], beta2=betas[1], eps=eps,
                         weight_decay=weight_decay)


__all__ = ["AdamW"]
