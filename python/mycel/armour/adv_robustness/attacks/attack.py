"""Attack base class and the compiled gradient Cells the white-box attacks share. Every gradient
is one call of a Cell whose construct takes mycel.grad of a loss over the whole batch: the loss is
a sum over samples, so each sample's input gradient is its own (no per-sample Python loop)."""
import numpy as np

from mycel import Tensor, nn, ops
from mycel.armour._checks import as_inputs, as_onehot


class _SoftmaxCE(nn.Cell):
    """Cross entropy of logits against one-hot rows, summed over the batch (so the gradient of
    sample i depends only on sample i, whatever the batch size)."""

    def construct(self, logits, onehot):
        return -(onehot * ops.log_softmax(logits, axis=-1)).sum()


class _LossInputGrad(nn.Cell):
    """d loss(network(x), labels) / dx for the whole batch, in one compiled program."""

    def __init__(self, network, loss_fn):
        super().__init__()
        self.network, self.loss_fn = network, loss_fn

    def _loss(self, x, labels):
        return self.loss_fn(self.network(x), labels)

    def construct(self, x, labels):
        return ops.grad(self._loss, 0)(x, labels)


class _WeightedLogitGrad(nn.Cell):
    """d sum(network(x) * seed) / dx: with a one-hot column as seed, the gradient of one logit of
    every sample (a row of each sample's Jacobian), as DeepFool needs."""

    def __init__(self, network):
        super().__init__()
        self.network = network

    def _weighted(self, x, seed):
        return (self.network(x) * seed).sum()

    def construct(self, x, seed):
        return ops.grad(self._weighted, 0)(x, seed)


class Attack:
    """Base class: generate(inputs, labels) returns adversarial examples as a numpy array."""

    def __init__(self, network):
        if not isinstance(network, nn.Cell):
            raise TypeError(f"{type(self).__name__}: network must be a Cell, got {type(network).__name__}")
        self._network = network
        self._num_classes_cache = None

    def _name(self):
        return type(self).__name__

    def _logits(self, x):
        out = self._network(Tensor(np.ascontiguousarray(x, dtype=np.float32)))
        return out.asnumpy()

    def _prepare(self, inputs, labels):
        """(x float32, one-hot labels float32, K) after checking shapes."""
        x = as_inputs(self._name(), inputs)
        logits = self._logits(x)
        if logits.ndim != 2 or logits.shape[0] != x.shape[0]:
            raise ValueError(f"{self._name()}: the network must map a batch of {x.shape[0]} inputs to "
                             f"(batch, classes) logits, got shape {logits.shape}")
        k = logits.shape[1]
        return x, as_onehot(self._name(), labels, x.shape[0], k), k

    def generate(self, inputs, labels):
        raise NotImplementedError(f"{self._name()}.generate")

    def batch_generate(self, inputs, labels, batch_size=64):
        """generate() over slices of batch_size, concatenated."""
        x = np.asarray(inputs)
        y = np.asarray(labels)
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"{self._name()}: batch_size must be a positive int, got {batch_size!r}")
        parts = [self.generate(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(x), batch_size)]
        return np.concatenate(parts, axis=0)
