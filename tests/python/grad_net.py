"""The gradient test net (issue 22): seeded random networks and the checks every one must pass.

`random_net(seed)` composes layers the way model zoos do — Dense, Conv2d, BatchNorm, pooling,
residual adds, SequentialCell/CellList nesting up to depth 20, indexing and slicing on every axis,
tuple outputs, control flow on constants and on run-time values, loops — in float64. `check(...)`
then asserts, in both modes:
  1. graph-mode output == PyNative output;
  2. gradients of every parameter equal across modes and match float64 central differences
     along a random direction per parameter;
  3. one optimizer step (TrainOneStepCell + SGD) in each mode moves every parameter by exactly
     -lr * its gradient (so a parameter with a non-zero gradient changes).
The bounded slice runs in tests/python/test_grad_net.py; bench/grad_net_sweep.py runs many more."""
import numpy as np

import mycel
from mycel import Tensor, nn, ops

# ---------------------------------------------------------------------------------------------
# Blocks. Each keeps the batch axis first; `shape` excludes nothing (N first).


class Residual(nn.Cell):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def construct(self, x):
        return x + self.body(x)


class Loop(nn.Cell):
    """A CellList run by a for loop (MindSpore's usual way to stack layers)."""

    def __init__(self, cells):
        super().__init__()
        self.layers = nn.CellList(cells)

    def construct(self, x):
        for cell in self.layers:
            x = cell(x)
        return x


class Repeat(nn.Cell):
    """The same layer applied n times by a while loop with a counter."""

    def __init__(self, cell, n):
        super().__init__()
        self.cell = cell
        self.n = n

    def construct(self, x):
        i = 0
        while i < self.n:
            x = self.cell(x)
            i += 1
        return x


class Branch(nn.Cell):
    """Control flow: a branch on a constant flag and one on a run-time value."""

    def __init__(self, flag):
        super().__init__()
        self.flag = flag
        if flag:
            self.scale = nn.Tanh()

    def construct(self, x):
        if self.flag:
            x = self.scale(x)
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x - 1.0
        return y


class SplitMerge(nn.Cell):
    """A tuple-returning Cell (two views of the input) merged by its caller."""

    def __init__(self, inner, k, axis):
        super().__init__()
        self.inner = inner
        self.k = k
        self.axis = axis

    def halves(self, x):
        if self.axis == 1:
            return x[:, :self.k], x[:, self.k:]
        return x[..., :self.k], x[..., self.k:]

    def construct(self, x):
        a, b = self.halves(x)
        return ops.concat((self.inner(b), a), self.axis)


class Index(nn.Cell):
    """One indexing form; `kind` picks it (each keeps or reports the shape it makes)."""

    def __init__(self, kind, idx=None):
        super().__init__()
        self.kind = kind
        self.idx = idx

    def construct(self, x):
        if self.kind == "roll0":  # axis 0, keeping the batch: x[1:] then x[:1]
            return ops.concat((x[1:], x[:1] * 0.5), 0)
        if self.kind == "row0":  # x[0] and x[-1] rows, stacked back
            return ops.concat((ops.stack((x[0], x[-1] * 2.0), 0) + x[0:2], x[2:]), 0)
        if self.kind == "none":
            return x[None][0]
        if self.kind == "flip_last":
            return x[..., ::-1]
        if self.kind == "step1":
            return x[:, ::2]
        if self.kind == "narrow1":
            return x[:, 1:]
        if self.kind == "gather1":
            return x[:, self.idx]
        if self.kind == "height":
            return x[:, :, 1:]
        return x[:, :, :, ::-1] * x[:, :, :, 0:1]


def _act(rng):
    return [nn.Tanh, nn.Sigmoid, nn.ReLU][rng.integers(3)]()


def _vector_block(rng, f, depth):
    """(cell, new feature count) for activations (N, f)."""
    kind = rng.choice(["dense", "residual", "nest", "loop", "bn", "index", "split", "branch",
                       "repeat", "stack"], p=[.2, .14, .08, .08, .08, .18, .08, .08, .04, .04])
    if depth <= 0 or kind == "dense":
        g = int(rng.integers(3, 9))
        return nn.SequentialCell([nn.Dense(f, g), _act(rng)]), g
    if kind == "residual":
        body, g = _vector_block(rng, f, depth - 1)
        if g != f:
            body = nn.SequentialCell([body, nn.Dense(g, f)])
        return Residual(body), f
    if kind == "nest":  # SequentialCell inside SequentialCell ... up to 20 levels
        cell, g = _vector_block(rng, f, 0)
        for _ in range(int(rng.integers(2, 21))):
            cell = nn.SequentialCell([cell])
        return cell, g
    if kind == "loop":
        cells, g = [], f
        for _ in range(int(rng.integers(2, 4))):
            c, g = _vector_block(rng, g, depth - 1)
            cells.append(c)
        return Loop(cells), g
    if kind == "bn":
        return nn.BatchNorm1d(f), f
    if kind == "index":
        choice = rng.choice(["roll0", "row0", "none", "flip_last", "step1", "narrow1", "gather1"])
        if choice == "step1":
            return Index("step1"), (f + 1) // 2
        if choice == "narrow1":
            return Index("narrow1"), f - 1
        if choice == "gather1":
            idx = rng.integers(-f, f, size=int(rng.integers(2, 6)))
            return Index("gather1", Tensor(idx.astype(np.int64))), len(idx)
        return Index(choice), f
    if kind == "split" and f >= 2:
        k = int(rng.integers(1, f))
        inner, g = _vector_block(rng, f - k, depth - 1)
        return SplitMerge(inner, k, 1), g + k
    if kind == "branch":
        return Branch(bool(rng.integers(2))), f
    if kind == "stack":  # a ResNet-like stack: many residual blocks of small sequences
        blocks = [Residual(nn.SequentialCell([nn.Dense(f, f) for _ in range(int(rng.integers(2, 4)))]))
                  for _ in range(int(rng.integers(8, 21)))]
        return nn.SequentialCell(blocks), f
    if kind == "repeat":
        return Repeat(nn.Dense(f, f), int(rng.integers(1, 4))), f
    return _vector_block(rng, f, 0)


def _image_block(rng, c, h):
    """(cell, channels, height) for activations (N, c, h, h)."""
    kind = rng.choice(["conv", "residual", "bn", "pool", "index"], p=[.35, .2, .15, .15, .15])
    if kind == "conv" or (kind == "pool" and h < 4) or (kind == "index" and h < 3):
        oc = int(rng.integers(2, 5))
        return nn.SequentialCell([nn.Conv2d(c, oc, 3, pad_mode="same", has_bias=True), _act(rng)]), oc, h
    if kind == "residual":
        body = nn.SequentialCell([nn.Conv2d(c, c, 3, pad_mode="same", has_bias=True), nn.BatchNorm2d(c), _act(rng)])
        return Residual(body), c, h
    if kind == "bn":
        return nn.BatchNorm2d(c), c, h
    if kind == "pool":
        return (nn.MaxPool2d(2, 2) if rng.integers(2) else nn.AvgPool2d(2, 2)), c, h // 2
    choice = rng.choice(["height", "width"])
    if choice == "height":
        return Index("height"), c, h - 1
    return Index("width"), c, h


class Head(nn.Cell):
    """Image features to vectors (a flatten and a Dense), and an optional tuple output."""

    def __init__(self, body, tail, pair):
        super().__init__()
        self.body = body
        self.tail = tail
        self.pair = pair

    def construct(self, x):
        y = self.tail(self.body(x))
        if self.pair:
            return y, y[:, 0] * y[:, -1]
        return y


def random_net(seed):
    """(net, input array, description) for one seed; every parameter float64."""
    rng = np.random.default_rng(seed)
    mycel.set_seed(seed)
    image = bool(rng.integers(2))
    if image:
        c, h = int(rng.integers(1, 4)), 8
        x = rng.standard_normal((3, c, h, h))
        cells = []
        for _ in range(int(rng.integers(2, 5))):
            cell, c, h = _image_block(rng, c, h)
            cells.append(cell)
        cells.append(nn.Flatten())
        f = int(np.prod(nn.SequentialCell(cells)(Tensor(x.astype(np.float32)))[0].shape))
        cells.append(nn.Dense(f, 6))
        body = nn.SequentialCell(cells)
        f = 6
    else:
        f = int(rng.integers(3, 9))
        x = rng.standard_normal((4, f))
        body = nn.Identity() if hasattr(nn, "Identity") else nn.SequentialCell([])
    blocks = []
    for _ in range(int(rng.integers(2, 6))):
        cell, f = _vector_block(rng, f, int(rng.integers(1, 4)))
        blocks.append(cell)
    blocks.append(nn.Dense(f, 4))  # every net has a parameter near its output
    net = Head(body, nn.SequentialCell(blocks), bool(rng.integers(2)))
    for p in net.get_parameters():
        p._rebind(p.astype(mycel.float64))
    return net, x, f"{'image' if image else 'vector'} net, {len(net.trainable_params())} parameters"


# ---------------------------------------------------------------------------------------------
# Checks.


class WeightedLoss(nn.Cell):
    """sum(out * w) over the net's outputs (one or two), with fixed random weights."""

    def __init__(self, net, weights):
        super().__init__()
        self.net = net
        self.w0 = Tensor(weights[0])
        self.pair = len(weights) == 2
        self.w1 = Tensor(weights[1]) if self.pair else None

    def construct(self, x):
        out = self.net(x)
        if self.pair:
            return (out[0] * self.w0).sum() + (out[1] * self.w1).sum()
        return (out * self.w0).sum()


def _mode(m):
    mycel.set_context(mode=m)


def _snapshot(params):
    return [p.asnumpy().copy() for p in params]


def _restore(params, values):
    for p, v in zip(params, values):
        p._assign(Tensor(v))


def check(net, x, seed=0, rtol=1e-6, lr=0.125):
    """Runs the three checks; raises AssertionError naming the parameter and the check. The
    learning rate is a power of two, so the expected step is exact in float64."""
    rng = np.random.default_rng(seed + 1000)
    params = net.trainable_params()
    xt = Tensor(x)
    try:
        # 1. outputs in both modes.
        _mode(mycel.PYNATIVE_MODE)
        eager = net(xt)
        eager = eager if isinstance(eager, tuple) else (eager,)
        _mode(mycel.GRAPH_MODE)
        graph = net(xt)
        graph = graph if isinstance(graph, tuple) else (graph,)
        assert len(eager) == len(graph), "output arity differs between modes"
        for e, g in zip(eager, graph):
            np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=rtol, atol=1e-9,
                                       err_msg="graph output != PyNative output")
        weights = [rng.standard_normal(e.shape) for e in eager]
        loss = WeightedLoss(net, weights)

        # 2. gradients: both modes, and finite differences along a direction per parameter.
        grads = {}
        for m in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
            _mode(m)
            grads[m] = [g.asnumpy() for g in mycel.grad(loss, grad_position=None, weights=params)(xt)]
        for p, a, b in zip(params, grads[mycel.PYNATIVE_MODE], grads[mycel.GRAPH_MODE]):
            np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-9, err_msg=f"{p.name}: graph grad != PyNative grad")
        base = _snapshot(params)
        _mode(mycel.GRAPH_MODE)
        def directional(i, d, eps):
            vals = []
            for s in (1.0, -1.0):
                _restore(params, base)
                params[i]._assign(Tensor(base[i] + s * eps * d))
                vals.append(float(loss(xt).asnumpy()))
            _restore(params, base)
            return (vals[0] - vals[1]) / (2 * eps)

        for i, p in enumerate(params):
            d = rng.standard_normal(base[i].shape)
            analytic = float((grads[mycel.PYNATIVE_MODE][i] * d).sum())
            # A step across a kink (relu, max pooling) spoils a difference; a 100x smaller step
            # crosses none but at measure zero, so the check fails only when both disagree.
            numeric = []
            for eps in (1e-6, 1e-8):
                numeric.append(directional(i, d, eps))
                if abs(numeric[-1] - analytic) <= 1e-5 * max(1.0, abs(numeric[-1])):
                    break
            else:
                raise AssertionError(f"{p.name}: directional derivative {analytic} != finite "
                                     f"differences {numeric} (steps 1e-6, 1e-8)")

        # 3. one SGD step per mode moves each parameter by -lr * gradient.
        for m in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
            _restore(params, base)
            _mode(m)
            nn.TrainOneStepCell(loss, nn.SGD(params, lr))(xt)
            for p, b, g in zip(params, base, grads[mycel.PYNATIVE_MODE]):
                np.testing.assert_allclose(p.asnumpy(), b - lr * g, rtol=1e-6, atol=1e-9,
                                           err_msg=f"{p.name}: step in mode {m} is not -lr * grad")
                if np.abs(g).max() > 0:
                    assert not np.array_equal(p.asnumpy(), b), f"{p.name}: not updated in mode {m}"
        _restore(params, base)
    finally:
        _mode(mycel.PYNATIVE_MODE)
