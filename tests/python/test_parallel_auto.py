"""AUTO_PARALLEL (issue 13) under real mpirun: no shard() anywhere; the strategy search picks a
split per op of the training step's forward and the semi-auto pass applies it. The search must
choose data parallelism for a small MLP and model parallelism (the weight split by classes) for
a wide classifier; each run must give the losses, final weights and gradients of one process on
the same global batches (the reference runs here)."""
import json
import re

import numpy as np
import pytest

import mycel
from mycel import Tensor
from mycel.parallel import ParallelMode
from mycel.parallel.search import last_search
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.autopar_auto_common import TOPOLOGY, Wide, cases, wide_data
from mpi_workers.autopar_common import BATCH, STEPS, grads, make_step


def _train(make, x, y):
    net = make()
    step = make_step(net)
    losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
              for s in range(STEPS)]
    w = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    net = make()
    g = dict(zip([p.name for p in net.trainable_params()], grads(net, x[:BATCH], y[:BATCH])))
    return np.array(losses), w, g


@pytest.fixture(scope="module")
def reference():
    """Every case in one process without parallelism."""
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        every = dict(cases(2, "sharding_propagation"), **cases(2))
        return {name: _train(make, x, y) for name, (make, (x, y)) in every.items()}
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@requires_mpi
@pytest.mark.parametrize("n,search_mode", [(2, "dynamic_programming"), (4, "recursive_programming"),
                                           (2, "sharding_propagation")], ids=["2ranks-dp", "4ranks-rp", "2ranks-sp"])
def test_auto_parallel_runs_match_one_process(reference, n, search_mode, tmp_path):
    rc, log = run_mpi(n, "autopar_auto.py", tmp_path, search_mode, timeout=180)
    assert rc == 0, log
    got = dict(np.load(tmp_path / "auto.npz"))
    if search_mode != "sharding_propagation":
        # The search's choice (ops of the forward in order: matmul, relu, matmul, loss).
        mlp = json.loads(str(got["mlp_strategies"]))
        assert [s for k, s in mlp if k == "matmul"] == [f"(({n}, 1), (1, 1))"] * 2, mlp  # data parallel
        wide = json.loads(str(got["wide_strategies"]))
        assert [s for k, s in wide if k == "matmul"][-1] == f"((1, 1), (1, {n}))", wide  # split by classes
        hinted = json.loads(str(got["mlp_hinted_strategies"]))
        assert hinted[0] == ["matmul", f"((1, 1), (1, {n}))"], hinted  # the user's shard() kept
    else:
        # Backward propagation from the last matmul's hint: relu and the first matmul split the
        # batch as the hinted matmul reads it (no redistribution between them).
        last = json.loads(str(got["mlp_hint_last_strategies"]))
        assert last[:3] == [["matmul", f"(({n}, 1), (1, 1))"], ["relu", f"(({n}, 1),)"],
                            ["matmul", f"(({n}, 1), (1, 1))"]], last
        # full_batch=False with datasets sharded by rank: one process's steps on the global batches.
        losses, w, _ = reference["mlp"]
        np.testing.assert_allclose(got["split_losses"], losses, rtol=1e-5, atol=1e-6)
        for k in w:
            np.testing.assert_allclose(got[f"split_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for name in cases(n, search_mode):
        losses, w, g = reference[name]
        np.testing.assert_allclose(got[f"{name}_losses"], losses, rtol=1e-5, atol=1e-6, err_msg=name)
        assert losses[-1] < losses[0], name  # it trained
        for k in w:
            np.testing.assert_allclose(got[f"{name}_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"{name} {k}")
            np.testing.assert_allclose(got[f"{name}_g_{k}"], g[k], rtol=1e-5, atol=1e-6, err_msg=f"{name} {k}")


@requires_mpi
def test_strategy_file_saves_and_loads_the_searched_strategies(reference, tmp_path):
    """strategy_ckpt_save_file writes the search's operator strategies (keys "matmul-op0", ...);
    loading that file plans the same step; a file holding only the wide matmul's strategy, forced
    to data parallelism, is kept by the search, which places the rest. Every run trains as one
    process does."""
    rc, log = run_mpi(2, "autopar_strategy_load.py", tmp_path, timeout=180)
    assert rc == 0, log
    got = dict(np.load(tmp_path / "load.npz"))
    searched = json.loads(str(got["searched_strategies"]))
    assert [k for k, _ in searched] == ["matmul-op0", "relu-op0", "matmul-op1",
                                        "sparse_softmax_cross_entropy_with_logits-op0"]
    assert dict(searched)["matmul-op1"] == [[1, 1], [1, 2]]  # split by classes, as searched alone
    assert json.loads(str(got["file_strategies"])) == searched
    assert json.loads(str(got["reloaded_strategies"])) == searched
    forced = dict(json.loads(str(got["forced_strategies"])))
    assert forced["matmul-op1"] == [[2, 1], [1, 1]]
    losses, w, _ = reference["wide"]
    for run in ("searched", "reloaded", "forced"):
        np.testing.assert_allclose(got[f"{run}_losses"], losses, rtol=1e-5, atol=1e-6, err_msg=run)
        for k in w:
            np.testing.assert_allclose(got[f"{run}_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"{run} {k}")


def test_strategy_file_to_load_is_checked(auto_mode, tmp_path):
    """A file from another network, a strategy the op refuses, a missing file or a mode that does
    not search: each a clear ValueError, never a silently unused file."""
    from mycel.parallel.strategy_file import save_strategy_file
    x, y = wide_data()
    other = save_strategy_file(tmp_path / "other.ckpt", {}, op_strategies=[("conv2d-op0", ((1, 1, 1, 1),) * 2)])
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL, topology=TOPOLOGY,
                                    strategy_ckpt_load_file=other)
    with pytest.raises(ValueError, match=r"names none of the ops(.|\n)*conv2d-op0(.|\n)*matmul-op0"):
        make_step(Wide())(Tensor(x[:BATCH]), Tensor(y[:BATCH]))
    bad = save_strategy_file(tmp_path / "bad.ckpt", {}, op_strategies=[("matmul-op0", ((1, 1, 1),))])
    mycel.set_auto_parallel_context(strategy_ckpt_load_file=bad)
    with pytest.raises(ValueError, match="matmul"):
        make_step(Wide())(Tensor(x[:BATCH]), Tensor(y[:BATCH]))
    # A world of one: the loaded all-ones strategies are kept and the step equals stand-alone.
    ones = save_strategy_file(tmp_path / "ones.ckpt", {}, op_strategies=[("matmul-op1", ((1, 1), (1, 1)))])
    mycel.set_auto_parallel_context(strategy_ckpt_config={"load_file": ones})
    make_step(Wide())(Tensor(x[:BATCH]), Tensor(y[:BATCH]))
    assert dict(mycel._mycel.autopar.searched_strategies())["matmul-op1"] == [[1, 1], [1, 1]]
    with pytest.raises(ValueError, match="does not exist"):
        mycel.set_auto_parallel_context(strategy_ckpt_config={},
                                        strategy_ckpt_load_file=str(tmp_path / "missing.ckpt"))
    mycel.reset_auto_parallel_context()
    with pytest.raises(ValueError, match="search_mode in"):
        mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL,
                                        strategy_ckpt_load_file=ones)


@pytest.fixture
def auto_mode():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        yield
    finally:
        mycel.reset_auto_parallel_context()
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_auto_parallel_in_one_process_equals_stand_alone(reference, auto_mode):
    """A world of one: every op runs whole (the only strategy on one device), as stand-alone."""
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL, topology=TOPOLOGY)
    assert mycel.get_auto_parallel_context("parallel_mode") == "auto_parallel"
    x, y = wide_data()
    losses, w, g = _train(Wide, x, y)
    report = last_search()
    assert report.device_num == 1 and all(set(re.findall(r"\d+", o["strategy"])) == {"1"} for o in report.ops)
    assert [o["kind"] for o in report.ops] == ["matmul", "relu", "matmul", "sparse_softmax_cross_entropy_with_logits"]
    rl, rw, rg = reference["wide"]
    np.testing.assert_allclose(losses, rl, rtol=1e-6)
    for k in rw:
        np.testing.assert_allclose(w[k], rw[k], rtol=1e-6)
        np.testing.assert_allclose(g[k], rg[k], rtol=1e-6)


def test_auto_parallel_memory_limit_error_names_the_op(auto_mode):
    """A cluster whose devices hold 1 KiB: no strategy fits, and the error says which op needs
    how much."""
    tiny = dict(TOPOLOGY, memory_per_device_gib=1.0 / (1 << 20))
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL, topology=tiny)
    x, y = wide_data()
    step = make_step(Wide())
    # The first matmul's least memory: its weight three times (value, gradient, one optimizer
    # slot) 3 * 8 * 32 * 4 B, its output 16 * 32 * 4 B and the batch it reads 16 * 8 * 4 B.
    need = (3 * 8 * 32 + 16 * 32 + 16 * 8) * 4 / 1024
    with pytest.raises(ValueError, match=rf"\[auto_parallel\] op 'matmul#0' needs at least {need} KiB per device"
                                         rf"(.|\n)*memory limit is 1.0 KiB(.|\n)*WithLossCell"):
        step(Tensor(x[:BATCH]), Tensor(y[:BATCH]))


def test_auto_parallel_context_checks(auto_mode):
    with pytest.raises(ValueError, match="search_mode must be one of"):
        mycel.set_auto_parallel_context(search_mode="greedy")
    with pytest.raises(ValueError, match="bandwidth"):
        mycel.set_auto_parallel_context(topology={"intra_node": {"bandwidth_gbps": -1}})
    for key in ("slice_parameters", "full_batch", "enable_parallel_optimizer"):
        with pytest.raises(TypeError, match=f"{key} must be a bool"):
            mycel.set_auto_parallel_context(**{key: 1})
    assert [mycel.get_auto_parallel_context(k) for k in ("slice_parameters", "full_batch",
                                                         "enable_parallel_optimizer", "topology")] == \
        [True, True, False, None]
    mycel.set_auto_parallel_context(topology=TOPOLOGY)
    assert mycel.get_auto_parallel_context("topology")["intra_node"]["bandwidth_gbps"] == 1
    mycel.reset_auto_parallel_context()
    assert mycel.get_auto_parallel_context("topology") is None
