"""Run under mpirun by test_parallel_collectives.py: every collective on every rank against numpy,
eager and graph mode, and its gradient against central finite differences of the sum of all
ranks' losses (what the bprops differentiate). Each rank can compute every reference because
rank r's input comes from seed r. Prints 'rank R ok: N checks' at the end."""
import os

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops
from mycel.ops import ReduceOp

comm.init()
R, N = comm.get_rank(), comm.get_group_size()
CHECKS = [0]
if not os.environ.get("OMP_NUM_THREADS"):  # the thread rule: an equal share of the node's cores
    assert comm.get_local_rank_size() == N and comm.get_local_rank() == R
    assert mycel.get_context("num_threads") == max(1, len(os.sched_getaffinity(0)) // N)


def inputs(shape, dtype="float64", seed=0):
    return [np.random.RandomState(seed * 100 + r).standard_normal(shape).astype(dtype) for r in range(N)]


def check(got, ref, what, tol=1e-6):
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"rank {R} {what}: shape {got.shape} != {ref.shape}"
    assert got.dtype == ref.dtype, f"rank {R} {what}: dtype {got.dtype} != {ref.dtype}"
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=tol, atol=tol,
                               err_msg=f"rank {R} {what}")
    CHECKS[0] += 1


def split(x, axis):
    return np.split(x, N, axis=axis)


# name, primitive, input shape, reference(xs, rank), differentiable
CASES = [
    ("all_reduce sum", lambda: ops.AllReduce(), (3, 4), lambda xs, r: sum(xs), True),
    ("all_reduce max", lambda: ops.AllReduce(op=ReduceOp.MAX), (3, 4), lambda xs, r: np.max(xs, 0), True),
    ("all_reduce min", lambda: ops.AllReduce(ReduceOp.MIN), (3, 4), lambda xs, r: np.min(xs, 0), True),
    ("all_reduce prod", lambda: ops.AllReduce(ReduceOp.PROD), (5,), lambda xs, r: np.prod(xs, 0), True),
    ("all_gather", lambda: ops.AllGather(), (2, 3), lambda xs, r: np.concatenate(xs, 0), True),
    ("reduce_scatter", lambda: ops.ReduceScatter(ReduceOp.SUM), (2 * N, 3), lambda xs, r: split(sum(xs), 0)[r], True),
    ("reduce_scatter max", lambda: ops.ReduceScatter(ReduceOp.MAX), (N, 2), lambda xs, r: split(np.max(xs, 0), 0)[r], False),
    ("broadcast", lambda: ops.Broadcast(N - 1), (2, 3), lambda xs, r: xs[N - 1], True),
    ("reduce", lambda: ops.Reduce(0), (2, 3), lambda xs, r: sum(xs) if r == 0 else np.zeros_like(xs[0]), True),
    ("all_to_all 1->0", lambda: ops.AlltoAll(N, 1, 0), (2, 2 * N),
     lambda xs, r: np.concatenate([split(x, 1)[r] for x in xs], 0), True),
    ("all_to_all 0->2", lambda: ops.AlltoAll(N, 0, 2), (N, 3, 2),
     lambda xs, r: np.concatenate([split(x, 0)[r] for x in xs], 2), True),
]


class Apply(nn.Cell):
    def __init__(self, prim):
        super().__init__()
        self.prim = prim

    def construct(self, x):
        return self.prim(x)


class Apply0(nn.Cell):
    def __init__(self, prim):
        super().__init__()
        self.prim = prim

    def construct(self):
        return self.prim()


class Loss(nn.Cell):
    def __init__(self, prim, w):
        super().__init__()
        self.prim = prim
        self.w = Tensor(w)

    def construct(self, x):
        return (self.prim(x) * self.w).sum()


def forward_checks(mode):
    for name, make, shape, ref, _ in CASES:
        xs = inputs(shape, seed=1)
        check(Apply(make())(Tensor(xs[R])).asnumpy(), ref(xs, R), f"{name} ({mode})")
    # dtypes: integers exactly, float16 through its float32 widening, bool max = any
    for dt in ("int32", "int8", "float32", "float16"):
        xs = [(x * 4).astype(dt) for x in inputs((3,), seed=2)]
        ref = sum(x.astype(np.float32) for x in xs).astype(dt) if dt == "float16" else sum(xs).astype(dt)
        check(ops.AllReduce()(Tensor(xs[R])).asnumpy(), ref, f"all_reduce {dt} ({mode})", tol=1e-3)
    # Broadcast of a tuple (MindSpore's form) gives a tuple; a bare tensor gives a tensor.
    xs, zs = inputs((2, 3), seed=10), inputs((4,), seed=11)
    got = Apply(ops.Broadcast(N - 1))((Tensor(xs[R]), Tensor(zs[R])))
    assert isinstance(got, tuple) and len(got) == 2, got
    check(got[0].asnumpy(), xs[N - 1], f"broadcast tuple item 0 ({mode})")
    check(got[1].asnumpy(), zs[N - 1], f"broadcast tuple item 1 ({mode})")
    bs = [np.array([r == 0, False, True]) for r in range(N)]
    check(ops.AllReduce(ReduceOp.MAX)(Tensor(bs[R])).asnumpy(), np.any(bs, 0), f"all_reduce bool max ({mode})")
    check(ops.AllGather()(Tensor(bs[R])).asnumpy(), np.concatenate(bs), f"all_gather bool ({mode})")


def gradient_checks(mode):
    eps = 1e-6
    for name, make, shape, ref, diff in CASES:
        if not diff:
            continue
        xs = inputs(shape, seed=3)
        ws = [np.random.RandomState(1000 + r).standard_normal(ref(xs, r).shape) for r in range(N)]
        got = mycel.grad(Loss(make(), ws[R]))(Tensor(xs[R])).asnumpy()

        def total(xs_):  # the sum of every rank's loss, in numpy
            return sum(float((ws[r] * ref(xs_, r)).sum()) for r in range(N))
        num = np.zeros_like(xs[R])
        for i in np.ndindex(*shape):
            hi = [x.copy() for x in xs]
            lo = [x.copy() for x in xs]
            hi[R][i] += eps
            lo[R][i] -= eps
            num[i] = (total(hi) - total(lo)) / (2 * eps)
        check(got, num, f"grad {name} ({mode})", tol=1e-5)


def send_receive(mode):
    x = inputs((2, 3), "float32", seed=4)
    if R % 2 == 0 and R + 1 < N:
        out = Apply(ops.Send(sr_tag=7, dest_rank=R + 1))(Tensor(x[R]))
        check(out.asnumpy(), x[R], f"send returns its input ({mode})")
    elif R % 2 == 1:
        got = Apply0(ops.Receive(sr_tag=7, src_rank=R - 1, shape=(2, 3), dtype=mycel.float32))()
        check(got.asnumpy(), x[R - 1], f"receive ({mode})")


class SendLoss(nn.Cell):
    """Sends 2x to `dest`; with use_output the loss reads Send's result (x), else Send is a statement."""

    def __init__(self, dest, v, use_output):
        super().__init__()
        self.send = ops.Send(sr_tag=9, dest_rank=dest)
        self.v = Tensor(v)
        self.use_output = use_output

    def construct(self, x):
        if self.use_output:
            return (self.send(x * 2.0) * self.v).sum()
        self.send(x * 2.0)
        return (x * self.v).sum()


class ReceiveLoss(nn.Cell):
    def __init__(self, src, w):
        super().__init__()
        self.recv = ops.Receive(sr_tag=9, src_rank=src, shape=(2, 3), dtype=mycel.float32)
        self.w = Tensor(w)

    def construct(self, y):
        return (self.recv() * y * self.w).sum()


def send_receive_gradients(mode):
    """Send -> Receive in the backward: the sender's gradient gets what the receiver's backward sent
    back, d(sum of both ranks' losses)/dx in closed form; the receiver's own gradient is w * 2x."""
    x, y = inputs((2, 3), "float32", seed=6), inputs((2, 3), "float32", seed=7)
    v, w = inputs((2, 3), "float32", seed=8), inputs((2, 3), "float32", seed=9)
    for use_output in (True, False):
        if R % 2 == 0 and R + 1 < N:
            got = mycel.grad(SendLoss(R + 1, v[R], use_output))(Tensor(x[R])).asnumpy()
            remote = 2 * y[R + 1] * w[R + 1]  # the receiver's d loss / d received, times d(2x)/dx
            ref = 2 * v[R] + remote if use_output else v[R] + remote
            check(got, ref, f"send gradient, output used={use_output} ({mode})", tol=1e-5)
        elif R % 2 == 1:
            got = mycel.grad(ReceiveLoss(R - 1, w[R]))(Tensor(y[R])).asnumpy()
            check(got, 2 * x[R - 1] * w[R], f"receive, gradient of its user ({mode})", tol=1e-5)


def groups():
    # Two groups with their members in a chosen order; every rank records both.
    evens, odds = list(range(0, N, 2))[::-1], list(range(1, N, 2))
    comm.create_group("evens", evens)
    comm.create_group("odds", odds)
    mine, members = ("evens", evens) if R % 2 == 0 else ("odds", odds)
    assert comm.get_group_size(mine) == len(members)
    assert comm.get_rank(mine) == members.index(R)
    assert comm.get_world_rank_from_group_rank(mine, 0) == members[0]
    xs = inputs((2,), seed=5)
    check(ops.AllGather(group=mine)(Tensor(xs[R])).asnumpy(), np.concatenate([xs[m] for m in members]),
          f"all_gather in group {mine}")
    check(ops.AllReduce(group=mine)(Tensor(xs[R])).asnumpy(), sum(xs[m] for m in members),
          f"all_reduce in group {mine}")
    other = "odds" if mine == "evens" else "evens"
    try:
        ops.AllReduce(group=other)(Tensor(xs[R]))
        raise AssertionError("a non-member used a group")
    except ValueError as e:
        assert "not a member" in str(e), e
    comm.destroy_group("evens")
    comm.destroy_group("odds")
    if R in (0, 1):  # members that disagree on the member order: ValueError on both, no group
        try:
            comm.create_group("pair", [0, 1] if R == 0 else [1, 0])
            raise AssertionError("a group with disagreeing members was created")
        except ValueError as e:
            assert "create_group" in str(e), e


def mismatch():
    # Rank 0 passes another shape: every rank raises ValueError naming both shapes, then goes on.
    x = np.ones((2, 3) if R == 0 else (3,), np.float32)
    try:
        ops.AllReduce()(Tensor(x))
        raise AssertionError("a mismatched all_reduce passed")
    except ValueError as e:
        msg = str(e)
        assert "(2, 3)" in msg and "(3,)" in msg and "world rank 1" in msg, msg
    # Different collectives on the same shape: named per rank.
    y = Tensor(np.ones((2,), np.float32))
    try:
        ops.AllGather()(y) if R == 0 else ops.AllReduce()(y)
        raise AssertionError("all_gather on rank 0 met all_reduce elsewhere")
    except ValueError as e:
        assert "all_gather of shape (2,) float32" in str(e) and "all_reduce(op=sum) of shape (2,)" in str(e), e
    # send/receive: the receiver expects another shape; both ends raise before the payload moves.
    if R in (0, 1) and N >= 2:
        try:
            if R == 0:
                ops.Send(sr_tag=3, dest_rank=1)(Tensor(np.ones((2, 3), np.float32)))
            else:
                ops.Receive(sr_tag=3, src_rank=0, shape=(3,), dtype=mycel.float32)()
            raise AssertionError("a mismatched send/receive passed")
        except ValueError as e:
            assert "(2, 3)" in str(e) and "(3,)" in str(e), e
    check(ops.AllReduce()(Tensor(np.ones(2, np.float32))).asnumpy(), np.full(2, N, np.float32), "after mismatch")


for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
    mycel.set_context(mode=mode)
    label = "graph" if mode == mycel.GRAPH_MODE else "eager"
    forward_checks(label)
    gradient_checks(label)
    send_receive(label)
    send_receive_gradients(label)
mycel.set_context(mode=mycel.PYNATIVE_MODE)
groups()
mismatch()
ops.Barrier()()
print(f"rank {R} ok: {CHECKS[0]} checks", flush=True)
