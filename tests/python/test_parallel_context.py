"""Parallel pieces that need no second process: the communicator in a world of one (no mpirun),
the auto-parallel context, the gradient bucket plan, DistributedGradReducer, and collectives kept
in graph mode even when their value is unused (they are effects)."""
import os

import numpy as np
import pytest

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops
from mycel.nn.wrap.grad_reducer import plan_buckets
from mycel.parallel import ParallelMode

comm.init()


@pytest.fixture(autouse=True)
def clean_context():
    yield
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_world_of_one_without_mpirun():
    comm.init()  # idempotent
    assert comm.get_rank() == 0 and comm.get_group_size() == 1
    assert comm.get_local_rank() == 0 and comm.get_local_rank_size() == 1
    assert comm.get_group_size("hccl_world_group") == 1  # MindSpore's spelling: the same world
    assert comm.GlobalComm.WORLD_COMM_GROUP == "mpi_world_group"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(ops.AllReduce()(Tensor(x)).asnumpy(), x)


def test_groups_in_a_world_of_one():
    comm.create_group("solo", [0])
    try:
        assert comm.get_rank("solo") == 0 and comm.get_group_size("solo") == 1
        assert comm.get_world_rank_from_group_rank("solo", 0) == 0
        with pytest.raises(ValueError, match="already exists"):
            comm.create_group("solo", [0])
    finally:
        comm.destroy_group("solo")
    with pytest.raises(ValueError, match=r"rank 1 is not in the world \[0, 1\)"):
        comm.create_group("bad", [0, 1])
    with pytest.raises(ValueError, match="unknown group 'nope'"):
        ops.AllReduce(group="nope")(Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="world group cannot be destroyed"):
        comm.destroy_group("mpi_world_group")


def test_collective_argument_errors_name_the_op():
    x = Tensor(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"\[all_reduce\] argument 'op' \(reduce_op\) must be one of .* got 'mean'"):
        ops.AllReduce(op="mean")(x)
    with pytest.raises(TypeError, match=r"\[all_reduce\] argument 'x': op 'sum' is not defined on bool"):
        ops.AllReduce()(Tensor(np.ones(2, np.bool_)))
    with pytest.raises(ValueError, match=r"\[broadcast\] argument 'root_rank' must be a rank of group .* got 1"):
        ops.Broadcast(1)(x)
    with pytest.raises(ValueError, match=r"\[all_to_all\] argument 'split_count' must equal the group size 1, got 2"):
        ops.AlltoAll(2, 0, 0)(x)
    with pytest.raises(ValueError, match=r"\[send\] argument 'dest_rank' must be a rank of group"):
        ops.Send(sr_tag=0, dest_rank=3)(x)
    with pytest.raises(ValueError, match="init: argument 'backend_name' must be 'mpi'"):
        comm.init("hccl")


def test_auto_parallel_context_set_get_reset():
    assert mycel.get_auto_parallel_context("parallel_mode") == ParallelMode.STAND_ALONE
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=4)
    assert mycel.get_auto_parallel_context("parallel_mode") == "data_parallel"
    assert mycel.get_auto_parallel_context("gradients_mean") is True
    assert mycel.context.get_auto_parallel_context("device_num") == 4
    mycel.reset_auto_parallel_context()
    assert mycel.get_auto_parallel_context("device_num") == 1
    assert mycel.get_auto_parallel_context("gradients_mean") is False
    with pytest.raises(ValueError, match="parallel_mode must be one of"):
        mycel.set_auto_parallel_context(parallel_mode="model_parallel")
    with pytest.raises(NotImplementedError, match="hybrid_parallel"):
        mycel.set_auto_parallel_context(parallel_mode=ParallelMode.HYBRID_PARALLEL)
    with pytest.raises(ValueError, match="device_num must be an int >= 1"):
        mycel.set_auto_parallel_context(device_num=0)
    with pytest.raises(ValueError, match="unknown setting 'strategy'"):
        mycel.set_auto_parallel_context(strategy=1)


def test_bucket_plan_consecutive_and_size_capped():
    f32 = mycel.float32
    shapes = [(10, 10), (10,), (5, 10), (5,), (3,)]
    # 400 B, 40 B, 200 B, 20 B, 12 B; buckets of at most 256 B (the 400 B one on its own)
    assert plan_buckets(shapes, [f32] * 5, 256) == ((0,), (1, 2), (3, 4))
    assert plan_buckets(shapes, [f32] * 5, 1 << 20) == ((0, 1, 2, 3, 4),)
    # overlap's plan: from the last parameter, and a dtype change starts a bucket
    assert plan_buckets(shapes, [f32] * 5, 256, reverse=True) == ((4, 3, 2), (1,), (0,))
    assert plan_buckets(shapes, [f32] * 3 + [mycel.float16] * 2, 1 << 20, reverse=True) == ((4, 3), (2, 1, 0))


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
def test_grad_reducer_in_a_world_of_one_averages_by_degree(mode):
    mycel.set_context(mode=mode)
    params = [mycel.Parameter(Tensor(np.zeros(s, np.float32)), name=f"p{i}")
              for i, s in enumerate([(2, 3), (3,), (4, 1)])]
    grads = tuple(Tensor(np.random.RandomState(i).standard_normal(p.shape).astype(np.float32))
                  for i, p in enumerate(params))
    # blocking: 24 B alone, then 12 B + 16 B in 28 B; overlap (the default): from the last
    for overlap, plan in ((False, ((0,), (1, 2))), (True, ((2, 1), (0,)))):
        reducer = nn.DistributedGradReducer(params, mean=True, degree=2, bucket_size_mb=28 / 2**20,
                                            overlap=overlap)
        assert reducer.buckets == plan and reducer.overlap == overlap
        out = reducer(grads)
        for g, o in zip(grads, out):
            np.testing.assert_allclose(o.asnumpy(), g.asnumpy() / 2, rtol=1e-6)
        fused = nn.DistributedGradReducer(params, mean=False, overlap=overlap)(grads)
        for g, o in zip(grads, fused):
            np.testing.assert_array_equal(o.asnumpy(), g.asnumpy())
    half = params + [mycel.Parameter(Tensor(np.zeros(2, np.float16)), name="half")]
    for overlap, plan in ((False, ((0,), (1,), (2,), (3,))), (True, ((3,), (2, 1, 0)))):
        mixed = nn.DistributedGradReducer(half, mean=True, degree=4, overlap=overlap)  # one dtype a bucket
        assert mixed.buckets == plan
        out = mixed(grads + (Tensor(np.ones(2, np.float16)),))
        np.testing.assert_array_equal(out[3].asnumpy(), np.full(2, 0.25, np.float16))
        for g, o in zip(grads, out):
            np.testing.assert_allclose(o.asnumpy(), g.asnumpy() / 4, rtol=1e-6)
    with pytest.raises(TypeError, match="DistributedGradReducer: argument 'overlap' must be a bool"):
        nn.DistributedGradReducer(params, overlap=1)


def test_train_one_step_cell_reduces_only_in_data_parallel_mode():
    net = nn.Dense(3, 2)
    loss = nn.WithLossCell(net, nn.MSELoss())
    opt = nn.SGD(net.trainable_params(), 0.1)
    plain = nn.TrainOneStepCell(loss, opt)
    assert plain.reducer_flag is False
    grads = (Tensor(np.ones(2, np.float32)),)
    assert plain.grad_reducer(grads) is grads  # MindSpore subclasses call it unconditionally
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)
    step = nn.TrainOneStepCell(loss, opt)
    assert step.reducer_flag is True and isinstance(step.grad_reducer, nn.DistributedGradReducer)


def test_dataset_shards_default_to_the_world_only_in_data_parallel_mode():
    import mycel.dataset as ds
    data = np.arange(10)
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL)
    d = ds.NumpySlicesDataset(data, shuffle=False)  # a world of one: every row
    assert d.get_dataset_size() == 10


class UnusedAllReduce(nn.Cell):
    def __init__(self):
        super().__init__()
        self.allreduce = ops.AllReduce()

    def construct(self, x):
        y = self.allreduce(x)  # unused: kept because every rank must take part
        ops.Barrier()()
        return x * 2.0


def final_dump(tmp_path):
    """The IR after the last pass of the compiled step (MYCEL_DUMP_IR=<dir>/<graph>.<stage>/)."""
    steps = sorted(d for d in os.listdir(tmp_path) if d.endswith(".step"))
    assert steps, f"no step IR dumped: {os.listdir(tmp_path)}"
    files = sorted(os.listdir(tmp_path / steps[-1]))
    with open(tmp_path / steps[-1] / files[-1]) as f:
        return f.read()


def test_graph_mode_keeps_collectives_whose_value_is_unused(tmp_path, monkeypatch):
    monkeypatch.setenv("MYCEL_DUMP_IR", str(tmp_path))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    out = UnusedAllReduce()(Tensor(np.ones(3, np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), np.full(3, 2.0, np.float32))
    final = final_dump(tmp_path)
    assert "all_reduce" in final and "barrier" in final, final


def test_thread_rule_takes_a_share_of_the_cores_unless_the_user_chose(monkeypatch):
    from mycel import context
    from mycel.communication import management
    before = mycel.get_context("num_threads")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(context, "_threads_set_by_user", False)
    try:
        management._set_threads()  # a world of one: one rank on this node takes every core
        assert mycel.get_context("num_threads") == max(1, len(os.sched_getaffinity(0)))
        mycel.set_context(num_threads=1)
        management._set_threads()
        assert mycel.get_context("num_threads") == 1  # the user's choice stays
        monkeypatch.setattr(context, "_threads_set_by_user", False)
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        management._set_threads()
        assert mycel.get_context("num_threads") == 1
    finally:
        mycel._mycel.set_num_threads(before)


class Chain(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a2a = ops.AlltoAll(1, 0, 1)
        self.gather = ops.AllGather()
        self.bcast = ops.Broadcast(0)
        self.allreduce = ops.AllReduce()

    def construct(self, x):
        return (self.allreduce(self.bcast(self.gather(self.a2a(x)))) * 2.0).sum()


def test_gradient_graph_holds_the_dual_collectives(tmp_path, monkeypatch):
    """The bprops as IR: AlltoAll -> AlltoAll with the dims swapped, AllGather -> ReduceScatter,
    Broadcast -> Reduce to the root, AllReduce(sum) -> AllReduce(sum), in reverse order."""
    monkeypatch.setenv("MYCEL_DUMP_IR", str(tmp_path))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    g = mycel.grad(Chain())(Tensor(np.ones((2, 3), np.float32)))
    np.testing.assert_array_equal(g.asnumpy(), np.full((2, 3), 2.0, np.float32))  # a world of one
    ir = final_dump(tmp_path)
    backward = ir[ir.index("broadcast_like"):]
    expected = ["all_reduce(", "reduce[dest_rank=0](", "reduce_scatter(",
                "all_to_all[split_count=1, split_dim=1, concat_dim=0]("]
    positions = [backward.index(e) for e in expected]
    assert positions == sorted(positions), backward


class Square(nn.Cell):
    def __init__(self):
        super().__init__()
        self.gather = ops.AllGather()
        self.allreduce = ops.AllReduce()

    def construct(self, x):
        y = self.allreduce(self.gather(x))
        return (y * y).sum()  # the backward reads y: a recomputed forward would gather again


def test_gradient_runs_each_forward_collective_once(tmp_path, monkeypatch):
    """The gradient's vjp returns the forward value, so value_and_grad (TrainOneStepCell's form)
    holds each forward collective once, not once for the value and again for the backward."""
    monkeypatch.setenv("MYCEL_DUMP_IR", str(tmp_path))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    loss, g = mycel.value_and_grad(Square())(Tensor(x))
    assert float(loss.asnumpy()) == float((x * x).sum())  # a world of one: collectives are copies
    np.testing.assert_array_equal(g.asnumpy(), 2 * x)
    ir = final_dump(tmp_path)
    assert ir.count("all_gather(") == 1, ir
    assert ir.count("all_reduce(") == 2, ir  # the forward's and its bprop's
