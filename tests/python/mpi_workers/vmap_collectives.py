"""Run under mpirun by test_parallel_vmap.py: collectives inside ops.vmap, each one call over the
whole batch, against the per-item numpy reference on every rank (rank r's items come from seed
r, so each rank can compute every reference). Prints 'rank R ok: N checks' at the end."""
import numpy as np

import mycel.communication as comm
from mycel import Tensor, ops
from mycel.ops import ReduceOp

comm.init()
R, N = comm.get_rank(), comm.get_group_size()
B = 3
CHECKS = [0]


def items(shape, seed):
    return [np.random.RandomState(seed * 100 + r).standard_normal((B,) + shape) for r in range(N)]


def check(got, ref, what):
    np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-12, atol=1e-12, err_msg=f"rank {R} {what}")
    CHECKS[0] += 1


xs = items((2, 3), 1)
mine = Tensor(xs[R])
check(ops.vmap(ops.AllReduce())(mine), sum(xs), "all_reduce")
check(ops.vmap(ops.AllReduce(ReduceOp.MAX), in_axes=1, out_axes=1)(Tensor(np.moveaxis(xs[R], 0, 1))),
      np.moveaxis(np.max(xs, 0), 0, 1), "all_reduce max, batch on axis 1")
check(ops.vmap(ops.Broadcast(N - 1))(mine), xs[N - 1], "broadcast")
check(ops.vmap(ops.AllGather())(mine), np.stack([np.concatenate([x[b] for x in xs], 0) for b in range(B)]),
      "all_gather")
ys = items((2 * N, 3), 2)
want = np.stack([np.split(sum(y[b] for y in ys), N, 0)[R] for b in range(B)])
check(ops.vmap(ops.ReduceScatter(ReduceOp.SUM))(Tensor(ys[R])), want, "reduce_scatter")
# all_to_all: each item split along dim 0, part R of every rank's item joined along dim 1
want = np.stack([np.concatenate([np.split(y[b], N, 0)[R] for y in ys], 1) for b in range(B)])
check(ops.vmap(ops.AlltoAll(N, 0, 1))(Tensor(ys[R])), want, "all_to_all")
# per-sample gradient of a loss that all-reduces (data parallel inside vmap)
g = ops.vmap(ops.grad(lambda t: (ops.AllReduce()(t) ** 2).sum()))(mine)
check(g, 2 * N * sum(xs), "grad of all_reduce under vmap")  # d/dx_r sum((sum_k x_k)^2) = 2 N sum
print(f"rank {R} ok: {CHECKS[0]} checks", flush=True)
