"""Pruning for deployment, in MindSpore Golden Stick's shape (an algorithm object whose apply(net)
returns the network to train, and callbacks() the training hooks it needs):

- MagnitudePruner: unstructured magnitude pruning. The smallest-|w| fraction of each Conv2d /
  Dense weight (or of all of them together, scope="global") is set to zero; its callback puts the
  zeros back after every optimizer step, so fine-tuning trains only the kept weights.
- ChannelPruner: structured channel pruning. For each (producer, consumer) pair of layers the
  producer's output channels with the smallest L1 filter norm are removed, together with the
  matching BatchNorm channels and the consumer's input channels (a Dense after a flatten loses
  the block of features of each removed channel). The layers are replaced by smaller ones, so
  the pruned net trains, exports and runs with smaller shapes."""
import numpy as np

from mycel import nn
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor
from mycel.train.callback import Callback


def _prunable(net):
    """(name, layer) of every Conv2d and Dense in net."""
    return [(name, c) for name, c in net.cells_and_names() if isinstance(c, (nn.Conv2d, nn.Dense))]


def _check_ratio(name, v):
    if not isinstance(v, (int, float)) or not 0 <= v < 1:
        raise ValueError(f"{name} must be a fraction in [0, 1), got {v!r}")
    return float(v)


class MagnitudePruner:
    """Unstructured magnitude pruning to `sparsity` (the fraction of weights set to zero), per
    layer (scope="layer") or over all layers together (scope="global")."""

    def __init__(self, sparsity=0.5, scope="layer"):
        self.sparsity = _check_ratio("MagnitudePruner: sparsity", sparsity)
        if scope not in ("layer", "global"):
            raise ValueError(f"MagnitudePruner: scope must be 'layer' or 'global', got {scope!r}")
        self.scope = scope
        self.masks = {}  # weight Parameter -> 0/1 float32 mask

    def apply(self, net):
        """Zeroes the smallest weights of net's Conv2d/Dense layers in place; returns net."""
        layers = _prunable(net)
        if not layers:
            raise ValueError("MagnitudePruner: the network has no Conv2d or Dense layer")
        weights = [layer.weight for _, layer in layers]
        arrays = [w.asnumpy() for w in weights]
        if self.scope == "global":
            flat = np.concatenate([np.abs(a).reshape(-1) for a in arrays])
            k = int(self.sparsity * flat.size)
            threshold = np.partition(flat, k - 1)[k - 1] if k else -np.inf
        for w, a in zip(weights, arrays):
            mask = np.ones(a.size, np.float32)
            if self.scope == "layer":
                k = int(self.sparsity * a.size)
                if k:  # exactly k zeros: the k smallest |w| (ties broken by position)
                    mask[np.argsort(np.abs(a).reshape(-1), kind="stable")[:k]] = 0
            else:
                mask[np.abs(a).reshape(-1) <= threshold] = 0
            mask = mask.reshape(a.shape)
            self.masks[w] = mask
            w.set_data(Tensor((a * mask).astype(a.dtype)))
        return net

    def reapply(self):
        """Puts the pruned zeros back (after an optimizer step moved them)."""
        for w, mask in self.masks.items():
            w.set_data(Tensor((w.asnumpy() * mask).astype(np.float32)))

    def callbacks(self):
        """Training callbacks: re-apply the masks after each step."""
        return [_ReapplyMasks(self)]

    def sparsity_of(self, net):
        """Fraction of zero weights over net's Conv2d/Dense layers."""
        arrays = [layer.weight.asnumpy() for _, layer in _prunable(net)]
        return float(sum((a == 0).sum() for a in arrays) / sum(a.size for a in arrays))


class _ReapplyMasks(Callback):
    def __init__(self, pruner):
        self.pruner = pruner

    def step_end(self, run_context):
        self.pruner.reapply()


def _resolve(net, path):
    """(parent cell, attribute name, cell) for a dotted attribute path such as "layer1.0.conv1"."""
    parent, parts = net, path.split(".")
    for p in parts[:-1]:
        parent = getattr(parent, p, None)
        if parent is None:
            raise ValueError(f"ChannelPruner: the network has no cell '{path}'")
    cell = getattr(parent, parts[-1], None)
    if cell is None:
        raise ValueError(f"ChannelPruner: the network has no cell '{path}'")
    return parent, parts[-1], cell


def _param(a, like):
    return Parameter(Tensor(np.ascontiguousarray(a).astype(np.float32)), name=like.name,
                     requires_grad=like.requires_grad)


def _smaller_conv(conv, out_keep=None, in_keep=None):
    w = conv.weight.asnumpy()
    if conv.group != 1:
        raise NotImplementedError("ChannelPruner: grouped convolutions are not pruned")
    if out_keep is not None:
        w = w[out_keep]
    if in_keep is not None:
        w = w[:, in_keep]
    new = nn.Conv2d(w.shape[1], w.shape[0], tuple(w.shape[2:]), stride=conv.stride, pad_mode=conv.pad_mode,
                    padding=conv.padding, dilation=conv.dilation, has_bias=conv.bias is not None)
    new.weight = _param(w, conv.weight)
    if conv.bias is not None:
        b = conv.bias.asnumpy()
        new.bias = _param(b[out_keep] if out_keep is not None else b, conv.bias)
    return new


def _smaller_dense(dense, out_keep=None, in_keep=None):
    w = dense.weight.asnumpy()
    if out_keep is not None:
        w = w[out_keep]
    if in_keep is not None:
        w = w[:, in_keep]
    new = nn.Dense(w.shape[1], w.shape[0], has_bias=dense.bias is not None, activation=dense.activation)
    new.weight = _param(w, dense.weight)
    if dense.bias is not None:
        b = dense.bias.asnumpy()
        new.bias = _param(b[out_keep] if out_keep is not None else b, dense.bias)
    return new


def _smaller_bn(bn, keep):
    new = nn.BatchNorm2d(len(keep), eps=bn.eps, momentum=bn.momentum)
    for name in ("gamma", "beta", "moving_mean", "moving_variance"):
        old = getattr(bn, name)
        setattr(new, name, _param(old.asnumpy()[keep], old))
    return new


def _smaller(layer, out_keep=None, in_keep=None):
    if isinstance(layer, nn.Conv2d):
        return _smaller_conv(layer, out_keep, in_keep)
    if isinstance(layer, nn.Dense):
        return _smaller_dense(layer, out_keep, in_keep)
    raise TypeError(f"ChannelPruner: {type(layer).__name__} is not a Conv2d or Dense")


class ChannelPruner:
    """Structured pruning of output channels: `pairs` lists (producer, consumer) or (producer,
    batch_norm, consumer) attribute paths of the net (e.g. ("conv1", "conv2"), ("conv2", "fc1"),
    ("layer1.0.conv1", "layer1.0.bn1", "layer1.0.conv2")); each producer keeps the (1 - ratio)
    fraction of its channels with the largest L1 filter norms (at least one). A producer must
    feed only its consumer (through elementwise ops, pooling and flatten)."""

    def __init__(self, pairs, ratio=0.5):
        self.ratio = _check_ratio("ChannelPruner: ratio", ratio)
        self.pairs = [tuple(p) for p in pairs]
        for p in self.pairs:
            if len(p) not in (2, 3):
                raise ValueError(f"ChannelPruner: a pair is (producer, consumer) or (producer, batch_norm, "
                                 f"consumer), got {p!r}")
        self.kept = {}  # producer path -> kept channel indices

    def apply(self, net):
        """Replaces the listed layers by smaller ones in place; returns net."""
        plan = []
        for pair in self.pairs:
            prod_path, cons_path = pair[0], pair[-1]
            _, _, prod = _resolve(net, prod_path)
            w = prod.weight.asnumpy()
            n = w.shape[0]
            keep_n = max(1, n - int(self.ratio * n))
            norms = np.abs(w.reshape(n, -1)).sum(axis=1)
            keep = np.sort(np.argsort(-norms, kind="stable")[:keep_n])
            self.kept[prod_path] = keep
            plan.append((pair, keep, n))
        # Consumers first read the old producers' shapes, so every replacement is computed before
        # any is installed (a layer may be the consumer of one pair and the producer of the next).
        out_keep, in_keep = {}, {}
        for pair, keep, n in plan:
            out_keep[pair[0]] = keep
            _, _, cons = _resolve(net, pair[-1])
            if isinstance(cons, nn.Dense):
                per = cons.weight.shape[1] // n
                if per * n != cons.weight.shape[1]:
                    raise ValueError(f"ChannelPruner: {pair[-1]} has {cons.weight.shape[1]} input features, not a "
                                     f"multiple of {pair[0]}'s {n} channels")
                in_keep[pair[-1]] = (keep[:, None] * per + np.arange(per)[None, :]).reshape(-1)
            else:
                in_keep[pair[-1]] = keep
        for path in set(out_keep) | set(in_keep):
            parent, attr, layer = _resolve(net, path)
            setattr(parent, attr, _smaller(layer, out_keep.get(path), in_keep.get(path)))
        for pair, keep, _ in plan:
            if len(pair) == 3:
                parent, attr, bn = _resolve(net, pair[1])
                setattr(parent, attr, _smaller_bn(bn, keep))
        return net

    def callbacks(self):
        return []
