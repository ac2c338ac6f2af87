"""Run under mpirun by tests/python/compat/test_compat_names19.py: nn.SyncBatchNorm on every rank
against numpy batch normalization of the concatenated batch (forward, moving statistics, the
gradient of the sum of all ranks' losses), eager and graph mode; process_groups of one rank each
give plain local BatchNorm. Rank r's batch comes from seed r, so every rank can build the whole
batch. Prints 'rank R ok: N checks' at the end."""
import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops

comm.init()
R, N = comm.get_rank(), comm.get_group_size()
CHECKS = [0]
EPS, MOMENTUM, C = 1e-5, 0.9, 3


def check(got, ref, what, tol=1e-4):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=tol,
                               atol=tol, err_msg=f"rank {R} {what}")
    CHECKS[0] += 1


def batches(shape, seed):
    # Ranks get different batch sizes (2 + r): the counts are reduced, not assumed equal.
    return [(np.random.RandomState(seed * 100 + r).standard_normal((2 + r,) + shape) * 3 + 5).astype(np.float32)
            for r in range(N)]


def numpy_bn(x, gamma, beta, dy):
    """(y, batch mean, unbiased batch variance, dx, dgamma) of training-mode batch norm."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    m = x.size // x.shape[1]
    mean = x.mean(axes)
    var = x.var(axes)
    invstd = 1.0 / np.sqrt(var + EPS)
    xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
    y = xhat * gamma.reshape(shape) + beta.reshape(shape)
    dxhat = dy * gamma.reshape(shape)
    dx = invstd.reshape(shape) / m * (m * dxhat - dxhat.sum(axes).reshape(shape)
                                      - xhat * (dxhat * xhat).sum(axes).reshape(shape))
    return y, mean, var * m / (m - 1), dx, (dy * xhat).sum(axes)


class Loss(nn.Cell):
    def __init__(self, bn, w):
        super().__init__()
        self.bn = bn
        self.w = Tensor(w)

    def construct(self, x):
        return (self.bn(x) * self.w).sum()


def synced_checks(mode, shape):
    xs = batches(shape, seed=len(shape))
    ws = [np.random.RandomState(500 + r).standard_normal(x.shape).astype(np.float32) for r, x in enumerate(xs)]
    gamma = np.random.RandomState(7).uniform(0.5, 1.5, C).astype(np.float32)
    beta = np.random.RandomState(8).standard_normal(C).astype(np.float32)
    full, wfull = np.concatenate(xs), np.concatenate(ws)
    y, mean, var, dx, dgamma = numpy_bn(full.astype(np.float64), gamma.astype(np.float64), beta, wfull)
    lo = sum(len(x) for x in xs[:R])
    hi = lo + len(xs[R])

    bn = nn.SyncBatchNorm(C, EPS, MOMENTUM, gamma_init=Tensor(gamma), beta_init=Tensor(beta))
    assert bn.group is not None, "SyncBatchNorm under mpirun must sync over the world"
    bn.set_train()
    check(bn(Tensor(xs[R])).asnumpy(), y[lo:hi], f"forward {shape} ({mode})")
    check(bn.moving_mean.asnumpy(), (1 - MOMENTUM) * mean, f"moving_mean {shape} ({mode})")
    check(bn.moving_variance.asnumpy(), MOMENTUM + (1 - MOMENTUM) * var, f"moving_variance {shape} ({mode})")

    bn2 = nn.SyncBatchNorm(C, EPS, MOMENTUM, gamma_init=Tensor(gamma), beta_init=Tensor(beta))
    bn2.set_train()
    net = Loss(bn2, ws[R])
    gx, (gg, gb) = mycel.grad(net, grad_position=0, weights=net.trainable_params())(Tensor(xs[R]))
    check(gx.asnumpy(), dx[lo:hi], f"d loss / dx {shape} ({mode})", tol=2e-3)
    # gamma's gradient on a rank is its own batch's share; the ranks' shares sum to the whole.
    check(ops.AllReduce()(gg).asnumpy(), dgamma, f"d loss / dgamma summed {shape} ({mode})", tol=2e-3)
    check(ops.AllReduce()(gb).asnumpy(), wfull.sum((0,) + tuple(range(2, wfull.ndim))),
          f"d loss / dbeta summed {shape} ({mode})", tol=2e-3)

    bn.set_train(False)  # eval: the moving statistics, no communication
    ref = (xs[R] - bn.moving_mean.asnumpy().reshape((1, -1) + (1,) * len(shape[1:]))) / np.sqrt(
        bn.moving_variance.asnumpy().reshape((1, -1) + (1,) * len(shape[1:])) + EPS)
    ref = ref * gamma.reshape((1, -1) + (1,) * len(shape[1:])) + beta.reshape((1, -1) + (1,) * len(shape[1:]))
    check(bn(Tensor(xs[R])).asnumpy(), ref, f"eval {shape} ({mode})")


def listed_group(mode):
    """process_groups naming every rank: the same statistics as the world group."""
    xs = batches((C, 3), seed=11)
    bn = nn.SyncBatchNorm(C, process_groups=[list(range(N))])
    assert bn.group is not None and bn.group != comm.GlobalComm.WORLD_COMM_GROUP
    bn.set_train()
    lo = sum(len(x) for x in xs[:R])
    y = numpy_bn(np.concatenate(xs).astype(np.float64), np.ones(C), np.zeros(C), np.zeros((1,)))[0]
    check(bn(Tensor(xs[R])).asnumpy(), y[lo:lo + len(xs[R])], f"process_groups of all ranks ({mode})")


def local_groups(mode):
    """process_groups with one rank per group: each rank normalizes its own batch."""
    xs = batches((C, 2, 2), seed=9)
    bn = nn.SyncBatchNorm(C, process_groups=[[r] for r in range(N)])
    assert bn.group is None
    bn.set_train()
    y = numpy_bn(xs[R].astype(np.float64), np.ones(C), np.zeros(C), np.zeros_like(xs[R]))[0]
    check(bn(Tensor(xs[R])).asnumpy(), y, f"process_groups of one ({mode})")


for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
    mycel.set_context(mode=mode)
    name = "graph" if mode == mycel.GRAPH_MODE else "eager"
    for shape in ((C,), (C, 2, 3)):
        synced_checks(name, shape)
    synced_checks(name, (C, 4, 2))  # a second layer on the world group, another spatial size
    local_groups(name)
    listed_group(name)

# Bad process_groups: named, with the rule.
try:
    nn.SyncBatchNorm(C, process_groups=[[0, 0]])
    raise AssertionError("a repeated rank id must be refused")
except ValueError as e:
    assert "appears twice" in str(e), e
print(f"rank {R} ok: {CHECKS[0]} checks", flush=True)
