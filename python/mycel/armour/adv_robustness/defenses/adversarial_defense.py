"""Adversarial training (MindArmour's defences): each defense(inputs, labels) call is one training
step of the network on a batch in which part of the samples are replaced by adversarial examples
made against the current weights."""
import numpy as np

from mycel import Tensor, nn
from mycel.armour._checks import as_inputs, check_bounds, check_number
from mycel.armour.adv_robustness.attacks import Attack, FastGradientSignMethod, ProjectedGradientDescent



class AdversarialDefense:
    """defense(inputs, labels): one optimizer step on the batch as given; returns the loss.
    Default loss: sparse softmax cross entropy (mean); default optimizer: Momentum(0.01, 0.9)."""

    def __init__(self, network, loss_fn=None, optimizer=None):
        if not isinstance(network, nn.Cell):
            raise TypeError(f"{type(self).__name__}: network must be a Cell, got {type(network).__name__}")
        self._network = network
        loss_fn = loss_fn if loss_fn is not None else nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        optimizer = optimizer if optimizer is not None else nn.Momentum(network.trainable_params(), 0.01, 0.9)
        self._step = nn.TrainOneStepCell(nn.WithLossCell(network, loss_fn), optimizer)
        self._step.set_train()

    def defense(self, inputs, labels):
        x = as_inputs(type(self).__name__, inputs)
        y = np.asarray(labels)
        if y.shape[0] != x.shape[0]:
            raise ValueError(f"{type(self).__name__}: labels must have one entry per input ({x.shape[0]}), got "
                             f"shape {y.shape}")
        return self._step(Tensor(x), Tensor(y)).asnumpy()

    def batch_defense(self, inputs, labels, batch_size=32, epochs=5):
        """defense() over the data in slices of batch_size, `epochs` times; returns the last loss."""
        loss = None
        for _ in range(epochs):
            for i in range(0, len(inputs), batch_size):
                loss = self.defense(inputs[i:i + batch_size], labels[i:i + batch_size])
        return loss


class AdversarialDefenseWithAttacks(AdversarialDefense):
    """A random replace_ratio of each batch (np.random) is replaced by adversarial examples, the
    chosen samples split evenly among the attacks (made against the current weights)."""

    def __init__(self, network, attacks, loss_fn=None, optimizer=None, bounds=(0.0, 1.0), replace_ratio=0.5):
        super().__init__(network, loss_fn, optimizer)
        attacks = list(attacks) if isinstance(attacks, (list, tuple)) else [attacks]
        if not attacks or not all(isinstance(a, Attack) for a in attacks):
            raise TypeError(f"{type(self).__name__}: attacks must be a non-empty list of Attack objects, got "
                            f"{attacks!r}")
        self._attacks = attacks
        self._bounds = check_bounds(type(self).__name__, bounds)
        self._ratio = check_number(type(self).__name__, "replace_ratio", replace_ratio, lo=0.0, hi=1.0)

    def defense(self, inputs, labels):
        x = as_inputs(type(self).__name__, inputs).copy()
        y = np.asarray(labels)
        n_adv = int(np.ceil(self._ratio * len(x)))
        ids = np.random.choice(len(x), size=n_adv, replace=False)
        for k, part in enumerate(np.array_split(ids, len(self._attacks))):
            if len(part):
                x[part] = self._attacks[k].generate(x[part], y[part])
        if self._bounds is not None:
            x = np.clip(x, self._bounds[0], self._bounds[1])
        return super().defense(x, y)


class EnsembleAdversarialDefense(AdversarialDefenseWithAttacks):
    """Adversarial training with several attacks (the name MindArmour gives the same procedure)."""


class NaturalAdversarialDefense(AdversarialDefenseWithAttacks):
    """Adversarial training with FGSM (eps)."""

    def __init__(self, network, loss_fn=None, optimizer=None, bounds=(0.0, 1.0), replace_ratio=0.5, eps=0.1):
        attack = FastGradientSignMethod(network, eps=eps, bounds=bounds)
        super().__init__(network, [attack], loss_fn, optimizer, bounds, replace_ratio)


class ProjectedAdversarialDefense(AdversarialDefenseWithAttacks):
    """Adversarial training with PGD (Madry et al.)."""

    def __init__(self, network, loss_fn=None, optimizer=None, bounds=(0.0, 1.0), replace_ratio=0.5, eps=0.3,
                 eps_iter=0.1, nb_iter=5, norm_level="inf"):
        attack = ProjectedGradientDescent(network, eps=eps, eps_iter=eps_iter, nb_iter=nb_iter, bounds=bounds,
                                          norm_level=norm_level)
        super().__init__(network, [attack], loss_fn, optimizer, bounds, replace_ratio)
