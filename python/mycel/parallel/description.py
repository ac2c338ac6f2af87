"""Model descriptions for the strategy search: each op as an iteration space (named dims, einsum
style), the tensors it reads and writes as lists of those dims, and its forward FLOPs. The search
needs nothing else, so a description can stand for a cluster-sized model that never runs here."""
import json

__all__ = ["ModelDescription", "Ref"]


class Ref:
    """An op's output (or a graph input): the producing op's name (None for an input) and shape."""

    def __init__(self, producer, shape):
        self.producer, self.shape = producer, tuple(int(s) for s in shape)

    def __repr__(self):
        return f"Ref({self.producer!r}, {self.shape})"


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


class ModelDescription:
    """Builds a model description op by op; `to_json()` is what `simulate` reads. Layers (`dense`,
    `conv2d`, ...) take and return `Ref`s and check shapes as they go."""

    def __init__(self, name="model", dtype_bytes=4, optimizer_slots=1, training=True):
        self.name, self.ops = name, []
        self.dtype_bytes, self.optimizer_slots, self.training = dtype_bytes, optimizer_slots, training
        self._names = set()

    # -- the raw form -------------------------------------------------------------------------
    def op(self, name, kind, dims, inputs, output, flops):
        """Adds one op. dims: [(name, size, splittable, is_batch)]; inputs: [(Ref or None for a
        parameter, axes)], axes a list of dim names or of lists of dim names (a merged axis);
        output: axes. Returns the output's Ref."""
        if name in self._names:
            raise ValueError(f"ModelDescription: two ops are named {name!r}")
        size = {d[0]: d[1] for d in dims}
        for axes in [a for _, a in inputs] + [output]:
            for a in axes:
                for n in (a if isinstance(a, list) else [a]):
                    if n not in size:
                        raise ValueError(f"ModelDescription: op {name!r} names axis {n!r}, which is not one "
                                         f"of its dims {sorted(size)}")
        jdims = [{"name": d[0], "size": int(d[1]), "split": bool(d[2]), "batch": bool(d[3])} for d in dims]
        jins = []
        for i, (ref, axes) in enumerate(inputs):
            t = {"axes": axes}
            if ref is None:
                t["parameter"] = True
            else:
                want = tuple(_prod(size[n] for n in (a if isinstance(a, list) else [a])) for a in axes)
                if want != ref.shape:
                    raise ValueError(f"ModelDescription: op {name!r} input {i} expects shape {want}, "
                                     f"got {ref.shape} from {ref.producer or 'a graph input'}")
                if ref.producer is not None:
                    t["from"] = ref.producer
            jins.append(t)
        self.ops.append({"name": name, "kind": kind, "dims": jdims, "inputs": jins,
                         "output": output, "flops": float(flops)})
        self._names.add(name)
        shape = tuple(_prod(size[n] for n in (a if isinstance(a, list) else [a])) for a in output)
        return Ref(name, shape)

    def to_json(self):
        return json.dumps({"name": self.name, "dtype_bytes": self.dtype_bytes,
                           "optimizer_slots": self.optimizer_slots, "training": self.training,
                           "ops": self.ops})

    def __len__(self):
        return len(self.ops)

    # -- layers -------------------------------------------------------------------------------
    @staticmethod
    def input(shape):
        """A graph input (data or labels) of this shape."""
        return Ref(None, shape)

    @staticmethod
    def _dims_like(x):
        """Dims of an elementwise op over x, the first one the batch: (n, c, h, w) images and
        (b, heads, s, t) scores split on their first two dims, (b, s, h) tokens on b and h (the
        sequence stays whole), matrices and vectors on every dim."""
        rank = len(x.shape)
        split = {3: [True, False, True], 4: [True, True, False, False]}.get(rank, [True] * rank)
        names = ["n", "c", "h", "w"] if rank == 4 else [f"d{i}" for i in range(rank)]
        return [(nm, s, sp, i == 0) for i, (nm, s, sp) in enumerate(zip(names, x.shape, split))]

    def elementwise(self, name, kind, *xs, flops_per_element=1, params=()):
        """An elementwise op over tensors of one shape; params: shapes of per-channel (dim 1) or
        last-dim weights, given as the dim index they follow."""
        x = xs[0]
        for y in xs[1:]:
            if y.shape != x.shape:
                raise ValueError(f"ModelDescription: {name}: shapes {x.shape} and {y.shape} differ")
        dims = self._dims_like(x)
        axes = [d[0] for d in dims]
        ins = [(y, axes) for y in xs] + [(None, [axes[p]]) for p in params]
        return self.op(name, kind, dims, ins, axes, flops_per_element * _prod(x.shape))

    def dense(self, name, x, out_features, bias=True):
        """x (..., k) @ W (k, o) [+ b]: the leading dims are batch-like; o and k may be split."""
        *lead, k = x.shape
        dims = [(f"b{i}", s, i == 0 or len(lead) == 1, i == 0) for i, s in enumerate(lead)]
        dims += [("o", out_features, True, False), ("k", k, True, False)]
        lead_names = [d[0] for d in dims[:-2]]
        ins = [(x, lead_names + ["k"]), (None, ["k", "o"])] + ([(None, ["o"])] if bias else [])
        return self.op(name, "matmul", dims, ins, lead_names + ["o"], 2 * _prod(lead) * k * out_features)

    def conv2d(self, name, x, out_channels, kernel, stride=1):
        """NCHW 'same' convolution: batch, output and input channels may be split, not space."""
        n, c, h, w = x.shape
        ho, wo = -(-h // stride), -(-w // stride)
        dims = [("n", n, True, True), ("o", out_channels, True, False), ("c", c, True, False),
                ("hi", h, False, False), ("wi", w, False, False), ("ho", ho, False, False),
                ("wo", wo, False, False), ("kh", kernel, False, False), ("kw", kernel, False, False)]
        ins = [(x, ["n", "c", "hi", "wi"]), (None, ["o", "c", "kh", "kw"])]
        return self.op(name, "conv2d", dims, ins, ["n", "o", "ho", "wo"],
                       2 * n * out_channels * c * ho * wo * kernel * kernel)

    def batch_norm(self, name, x):
        return self.elementwise(name, "batch_norm", x, flops_per_element=8, params=(1, 1))

    def pool(self, name, x, kernel, stride):
        n, c, h, w = x.shape
        ho, wo = -(-h // stride), -(-w // stride)
        dims = [("n", n, True, True), ("c", c, True, False), ("hi", h, False, False),
                ("wi", w, False, False), ("ho", ho, False, False), ("wo", wo, False, False)]
        return self.op(name, "max_pool", dims, [(x, ["n", "c", "hi", "wi"])], ["n", "c", "ho", "wo"],
                       n * c * ho * wo * kernel * kernel)

    def global_avg_pool(self, name, x):
        """(n, c, h, w) -> (n, c)."""
        n, c, h, w = x.shape
        dims = [("n", n, True, True), ("c", c, True, False), ("h", h, False, False), ("w", w, False, False)]
        return self.op(name, "reduce_mean", dims, [(x, ["n", "c", "h", "w"])], ["n", "c"], n * c * h * w)

    def softmax_cross_entropy(self, name, logits):
        """(n, classes) logits and (n,) labels -> per-sample loss; a split class dim ends in an
        AllReduce of the per-sample statistics."""
        n, k = logits.shape
        dims = [("n", n, True, True), ("k", k, True, False)]
        return self.op(name, "softmax_cross_entropy", dims, [(logits, ["n", "k"]), (self.input((n,)), ["n"])],
                       ["n"], 5 * n * k)

    def reshape(self, name, x, axes_in, axes_out, dims):
        """A reshape/transpose given as dims: axes_in and axes_out are lists of (merged) dim names."""
        return self.op(name, "reshape", dims, [(x, axes_in)], axes_out, 0)

    def layer_norm(self, name, x):
        """Normalizes the last dim (never split); gamma and beta follow it."""
        dims = [(f"d{i}", s, i < len(x.shape) - 1 and (i == 0 or len(x.shape) < 3), i == 0)
                for i, s in enumerate(x.shape)]
        axes = [d[0] for d in dims]
        return self.op(name, "layer_norm", dims, [(x, axes), (None, [axes[-1]]), (None, [axes[-1]])],
                       axes, 8 * _prod(x.shape))
