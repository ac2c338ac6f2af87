"""The semi-auto parallel test problems, shared by the mpirun worker (autopar_train.py) and the
single-process reference in test_parallel_autopar.py: an MLP of two MatMuls whose splits put the
rows, the columns or the reduction dim across the ranks, and a small ResNet-like conv net with a
wide classifier split data x model (hybrid). Fixed weights and global batches; SGD."""
import numpy as np

from mycel import Parameter, ParameterTuple, Tensor, nn, ops
from mycel.parallel.sliced import whole_values

STEPS, BATCH, FEATURES, HIDDEN, CLASSES = 4, 16, 8, 16, 8
WIDE = 32  # the hybrid net's classifier width


def _param(rng, shape, name):
    return Parameter(Tensor((rng.standard_normal(shape) * 0.3).astype(np.float32)), name=name)


class MLP(nn.Cell):
    def __init__(self, s1=None, s2=None):
        super().__init__()
        rng = np.random.RandomState(0)
        self.w1 = _param(rng, (FEATURES, HIDDEN), "w1")
        self.w2 = _param(rng, (HIDDEN, CLASSES), "w2")
        self.mm1, self.mm2, self.relu = ops.MatMul(), ops.MatMul(), ops.ReLU()
        if s1:
            self.mm1.shard(s1)
        if s2:
            self.mm2.shard(s2)

    def construct(self, x):
        return self.mm2(self.relu(self.mm1(x, self.w1)), self.w2)


class Hybrid(nn.Cell):
    """conv -> relu -> conv + residual -> relu -> flatten -> wide classifier."""

    def __init__(self, s_conv=None, s_fc=None):
        super().__init__()
        rng = np.random.RandomState(2)
        self.k1 = _param(rng, (4, 2, 3, 3), "k1")
        self.k2 = _param(rng, (4, 4, 3, 3), "k2")
        self.w = _param(rng, (4 * 6 * 6, WIDE), "w")
        self.conv1, self.conv2 = ops.Conv2D(pad_mode="same"), ops.Conv2D(pad_mode="same")
        self.fc, self.relu = ops.MatMul(), ops.ReLU()
        if s_conv:
            self.conv1.shard(s_conv)
        if s_fc:
            self.fc.shard(s_fc)

    def construct(self, x):
        h = self.relu(self.conv1(x, self.k1))
        h = self.relu(self.conv2(h, self.k2) + h)
        return self.fc(ops.reshape(h, (BATCH, 4 * 6 * 6)), self.w)


def mlp_variants(n):
    """name -> (in_strategy of mm1, of mm2) on n ranks."""
    v = {"rows": (((n, 1), (1, 1)), None),
         "columns": (((1, 1), (1, n)), ((1, n), (n, 1))),
         "reduction": (((1, n), (n, 1)), None)}
    if n == 4:
        v["rows_columns"] = (((2, 2), (2, 1)), ((2, 1), (1, 2)))
    return v


def hybrid_strategy(n):
    """Data parallel on the convs, data x model on the wide classifier."""
    if n == 4:
        return ((2, 1, 1, 1), (1, 1, 1, 1)), ((2, 1), (1, 2))
    return ((n, 1, 1, 1), (1, 1, 1, 1)), ((1, 1), (1, n))


def data(kind):
    rng = np.random.RandomState(1)
    shape = (STEPS * BATCH, FEATURES) if kind == "mlp" else (STEPS * BATCH, 2, 6, 6)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.randint(0, CLASSES if kind == "mlp" else WIDE, STEPS * BATCH).astype(np.int32)
    return x, y


def make_step(net):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)


def grads(net, x, y):
    """The loss's gradients for each weight on one batch (graph mode)."""
    wl = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    g = ops.GradOperation(get_by_list=True)(wl, ParameterTuple(net.trainable_params()))(Tensor(x), Tensor(y))
    return [t.asnumpy() for t in g]


def train(net, kind):
    """Losses of STEPS steps and the final weights."""
    x, y = data(kind)
    step = make_step(net)
    losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
              for s in range(STEPS)]
    # Weights the pass split are stored as slices (slice_parameters, the default): gathered.
    return np.array(losses), whole_values(net.trainable_params())


def cases(n):
    """name -> (kind, network factory) of every semi-auto case on n ranks."""
    out = {f"mlp_{k}": ("mlp", (lambda s=s: MLP(*s))) for k, s in mlp_variants(n).items()}
    out["hybrid"] = ("conv", lambda: Hybrid(*hybrid_strategy(n)))
    # Cell.shard: the batch split on entry, w2 stored split by columns, the output by rows; the
    # ops choose their own strategies by propagation.
    out["cell_shard"] = ("mlp", lambda: MLP().shard(in_strategy=((n, 1),), out_strategy=((n, 1),),
                                                    parameter_plan={"self.w2": (1, n)}))
    return out
