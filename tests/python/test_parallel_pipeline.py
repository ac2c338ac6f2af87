"""Pipeline parallel (nn.PipelineCell, pipeline_stages, Cell.pipeline_stage) under real mpirun:
four Dense layers cut into 2 and 4 stages, graph mode, GPipe (4 micro-batches) and 1F1B (8), and
2 stages x 2 data-parallel ranks (both schedules). The last stage's losses and every stage's final weights must
equal one process on the whole batches (1e-5); each rank holds only its stage's weights and
momentum (bytes against the closed form); 1F1B's stage s holds at most S - s micro-batches."""
import json

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.parallel import ParallelMode, load_distributed_checkpoint
from mycel.parallel.pipeline_schedule import (SCHEDULERS, interleaved_actions, simulate, simulate_lists,
                                              stage_actions)
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.pipeline_common import BATCH, SIZES, STEPS, data, make_net, make_tp_net, stage_of


@pytest.fixture(scope="module")
def reference():
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = make_net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss),
                                   nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
        x, y = data()
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def stage_bytes(stage, stages, momentum_shards=1):
    """Closed form: the float32 weights and biases of the stage's Dense layers, and their momentum
    (cut in momentum_shards blocks by the parallel optimizer: every dim 0 here is even)."""
    count = sum(SIZES[i] * SIZES[i + 1] + SIZES[i + 1] for i in range(4) if stage_of(i, stages) == stage)
    return 4 * count + 4 * count // momentum_shards


def check_run(tmp_path, reference, n, stages, momentum_shards=1):
    """Every rank's saved weights equal one process's; the last stage's ranks report the losses."""
    losses, w = reference
    dp = n // stages
    seen, runs = set(), []
    for r in range(n):
        got = dict(np.load(tmp_path / f"pipe_rank{r}.npz"))
        runs.append(got)
        stage = r // dp
        if stage == stages - 1:
            np.testing.assert_allclose(got["losses"], losses, rtol=1e-5, atol=1e-6)
        else:
            assert not got["losses"].any()  # only the last stage takes the loss
        assert int(got["held_bytes"]) == stage_bytes(stage, stages, momentum_shards), f"rank {r}"  # its stage's
        for k, v in got.items():
            if k not in ("losses", "peaks", "held_bytes", "peak_bytes"):
                np.testing.assert_allclose(v, w[k], rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {k}")
                seen.add(k)
    assert seen == set(w)  # every weight trained on its stage
    # The ranks' checkpoints (each with its stage's weights, the others empty) merge into one net.
    merged = load_distributed_checkpoint(make_net(), [str(tmp_path / f"pipe_rank{r}.ckpt") for r in range(n)])
    for k in w:
        np.testing.assert_allclose(merged[k].asnumpy(), w[k], rtol=1e-5, atol=1e-6, err_msg=f"merged {k}")
    return runs


@requires_mpi
@pytest.mark.parametrize("n", [2, 4], ids=["2stages", "4stages"])
def test_pipeline_matches_one_process(reference, n, tmp_path):
    rc, log = run_mpi(n, "pipeline_train.py", tmp_path, timeout=120)
    assert rc == 0, log
    check_run(tmp_path, reference, n, n)
    assert [stage_of(i, n) for i in range(4)] == sorted(stage_of(i, n) for i in range(4))


@requires_mpi
@pytest.mark.parametrize("n,recompute", [(2, False), (4, False), (2, True)],
                         ids=["2stages", "4stages", "2stages-recompute"])
def test_1f1b_matches_one_process(reference, n, recompute, tmp_path):
    """1F1B with 8 micro-batches: the same steps as one process, and stage s held at most
    S - s micro-batches at once (GPipe holds all 8): their residuals (the split gradient,
    the default) or their inputs (stage_recompute=True)."""
    micro = 8
    args = ("1f1b", micro) + ((n, "recompute") if recompute else ())
    rc, log = run_mpi(n, "pipeline_train.py", tmp_path, *args, timeout=120)
    assert rc == 0, log
    runs = check_run(tmp_path, reference, n, n)
    peaks = [list(got["peaks"]) for got in runs]
    assert peaks == [[n - s] * STEPS for s in range(n)], peaks
    # Bytes held at the peak by the first stage: n micro-batches of what each keeps, its input
    # (2 rows x 8 float32 features) under the recompute, its residuals (the same every time) else.
    got = list(runs[0]["peak_bytes"])
    assert len(set(got)) == 1 and got[0] % n == 0, got
    if recompute:
        assert got[0] == n * 4 * (16 // micro) * 8, got
    assert max(max(p) for p in peaks) <= n < micro
    assert simulate("gpipe", n, micro) == [micro] * n


@requires_mpi
@pytest.mark.parametrize("scheduler,optshard", [("gpipe", False), ("1f1b", False), ("1f1b", True)],
                         ids=["gpipe", "1f1b", "1f1b-parallel-optimizer"])
def test_data_parallel_stages(reference, scheduler, optshard, tmp_path):
    """4 ranks = 2 stages x 2 data-parallel ranks, 4 micro-batches: each stage's pair splits every
    micro-batch and sums its gradients over the pair; both last-stage ranks report the global
    loss. Stages held 2 and 1 micro-batches under 1F1B, all 4 under GPipe (run by the host here).
    With the parallel optimizer each pair's ranks update and keep half of the momentum."""
    args = (scheduler, 4, 2) + (("optshard",) if optshard else ())
    rc, log = run_mpi(4, "pipeline_train.py", tmp_path, *args, timeout=120)
    assert rc == 0, log
    runs = check_run(tmp_path, reference, 4, 2, 2 if optshard else 1)
    want = [2, 2, 1, 1] if scheduler == "1f1b" else [4, 4, 4, 4]
    assert [list(got["peaks"]) for got in runs] == [[k] * STEPS for k in want]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_schedules_match_and_never_deadlock(scheduler):
    """Brute force over stage and micro-batch counts: every send meets its receive under
    rendezvous semantics, and the peak of micro-batches held is 1F1B's min(S - s, M) or GPipe's M."""
    for stages in range(1, 9):
        for micro in range(1, 13):
            want = [min(stages - s, micro) for s in range(stages)] if scheduler == "1f1b" else [micro] * stages
            assert simulate(scheduler, stages, micro) == want, (stages, micro)
            for s in range(stages):
                acts = stage_actions(scheduler, s, stages, micro)
                for kind in ("fwd", "bwd"):  # each micro-batch once each way
                    assert sorted(i for k, i in acts if k == kind) == list(range(micro))


def test_1f1b_without_the_reordering_deadlocks(monkeypatch):
    """The reason for the one reordering in stage_actions: sending a gradient back before
    receiving the next activation deadlocks two rendezvous stages."""
    from mycel.parallel import pipeline_schedule as ps
    real = ps.stage_actions

    def naive(scheduler, stage, stages, micro):
        first, last = stage == 0, stage == stages - 1
        warm = min(stages - stage - 1, micro)
        acts = [a for i in range(warm) for a in ps._forward(i, first, last)]
        for k in range(micro - warm):
            acts += ps._forward(warm + k, first, last) + ps._backward(k, first, last)
        return acts + [a for j in range(micro - warm, micro) for a in ps._backward(j, first, last)]
    monkeypatch.setattr(ps, "stage_actions", naive)
    with pytest.raises(RuntimeError, match="deadlock"):
        ps.simulate("1f1b", 2, 4)
    monkeypatch.setattr(ps, "stage_actions", real)
    assert ps.simulate("1f1b", 2, 4) == [2, 1]


@requires_mpi
def test_interleaved_1f1b_matches_one_process(reference, tmp_path):
    """pipeline_interleave: 4 virtual stages on 2 ranks (2 chunks each), 4 micro-batches. The
    last virtual stage's rank reports the one-process losses, every rank's layers end with the
    one-process weights (1e-5), each rank holds only its two layers and their momentum, and the
    chunks held peak as the schedule's simulation says."""
    rc, log = run_mpi(2, "pipeline_interleave.py", tmp_path, timeout=120)
    assert rc == 0, log
    losses, w = reference
    sim = simulate_lists(interleaved_actions(2, 2, 4))
    seen = set()
    for r in range(2):
        got = dict(np.load(tmp_path / f"inter_rank{r}.npz"))
        if r == 1:
            np.testing.assert_allclose(got["losses"], losses, rtol=1e-5, atol=1e-6)
        else:
            assert not got["losses"].any()
        assert list(got["peaks"]) == [sim[r]] * STEPS, (r, list(got["peaks"]), sim)
        count = sum(SIZES[i] * SIZES[i + 1] + SIZES[i + 1] for i in range(4) if i % 2 == r)
        assert int(got["held_bytes"]) == 8 * count  # its layers' float32 weights and momentum
        for k, v in got.items():
            if k not in ("losses", "peaks", "held_bytes"):
                np.testing.assert_allclose(v, w[k], rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {k}")
                seen.add(k)
    assert seen == set(w)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_interleaved_schedules_never_deadlock(stages, chunks):
    """Every rank's interleaved list, run with rendezvous sends: no deadlock, sends meet the
    receives of the same micro-batch, each (chunk, micro-batch) is run forward and backward once,
    and a rank holds at most its warm-up plus one."""
    for micro in (stages, 2 * stages, 3 * stages):
        lists = interleaved_actions(stages, chunks, micro)
        peaks = simulate_lists(lists)
        for r, acts in enumerate(lists):
            for kind in ("fwd", "bwd"):
                assert sorted((c, i) for k, c, i, _ in acts if k == kind) == \
                    [(c, i) for c in range(chunks) for i in range(micro)]
            warm = min((stages - r - 1) * 2 + (chunks - 1) * stages, micro * chunks)
            assert peaks[r] <= warm + 1
    with pytest.raises(ValueError, match="multiple of pipeline_stages"):
        interleaved_actions(2, 2, 3)


@pytest.fixture(scope="module")
def tp_reference():
    """make_tp_net trained in one process (its strategies unused there)."""
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = make_tp_net(2)
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss),
                                   nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
        x, y = data()
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@requires_mpi
@pytest.mark.parametrize("scheduler", ["gpipe", "1f1b"])
def test_tensor_parallel_stages(tp_reference, scheduler, tmp_path):
    """4 ranks = 2 stages x 2 tensor-parallel ranks: each stage's MatMuls split by columns then
    by rows over its two ranks (the pass ran with device_num 2 on the stage's world ranks). Both
    last-stage ranks report the one-process losses; every rank's stage weights equal one
    process's (1e-5)."""
    rc, log = run_mpi(4, "pipeline_tp.py", tmp_path, scheduler, timeout=120)
    assert rc == 0, log
    losses, w = tp_reference
    seen = set()
    for r in range(4):
        got = dict(np.load(tmp_path / f"tp_rank{r}.npz"))
        if r >= 2:
            np.testing.assert_allclose(got["losses"], losses, rtol=1e-5, atol=1e-6, err_msg=f"rank {r}")
        # The stage's pass split its matmuls over 2 ranks, as the strategies say.
        applied = [tuple(a) for a in json.loads(str(got["applied"]))]
        assert ("matmul", "((1, 1), (1, 2))") in applied and ("matmul", "((1, 2), (2, 1))") in applied, applied
        for k, v in got.items():
            if k not in ("losses", "applied"):
                np.testing.assert_allclose(v, w[k], rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {k}")
                seen.add(k)
    assert seen == set(w)


def test_pipeline_config_checks():
    try:
        with pytest.raises(ValueError, match="pipeline_scheduler'\\] must be one of"):
            mycel.set_auto_parallel_context(pipeline_config={"pipeline_scheduler": "zb"})
        with pytest.raises(ValueError, match="pipeline_config must be a dict"):
            mycel.set_auto_parallel_context(pipeline_config={"scheduler": "1f1b"})
        with pytest.raises(TypeError, match="pipeline_interleave'\\] must be a bool"):
            mycel.set_auto_parallel_context(pipeline_config={"pipeline_interleave": 1})
        with pytest.raises(TypeError, match="stage_recompute'\\] must be a bool"):
            mycel.set_auto_parallel_context(pipeline_config={"stage_recompute": 1})
        mycel.set_auto_parallel_context(pipeline_config={"pipeline_scheduler": "1f1b"})
        assert mycel.get_auto_parallel_context("pipeline_config")["pipeline_scheduler"] == "1f1b"
        assert mycel.get_auto_parallel_context("pipeline_config")["stage_recompute"] is False
    finally:
        mycel.reset_auto_parallel_context()


def test_pipeline_cell_checks_its_network():
    mycel.reset_auto_parallel_context()
    net = make_net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    with pytest.raises(ValueError, match="micro_size must be an int >= 1"):
        nn.PipelineCell(nn.WithLossCell(net, loss), 0)
    with pytest.raises(TypeError, match="backbone is a SequentialCell"):
        nn.PipelineCell(loss, 2)
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, pipeline_stages=2)
    try:
        with pytest.raises(ValueError, match=r"pipeline_stages \(2\) must divide the number of processes \(1\)"):
            nn.PipelineCell(nn.WithLossCell(net, loss), 2)
    finally:
        mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, pipeline_stages=2)
    try:
        with pytest.raises(ValueError, match="pipeline_stages=2 needs parallel_mode SEMI_AUTO_PARALLEL, got "
                                             "data_parallel"):
            nn.PipelineCell(nn.WithLossCell(net, loss), 2)
    finally:
        mycel.reset_auto_parallel_context()
    with pytest.raises(ValueError, match="pipeline_stages must be an int >= 1"):
        mycel.set_auto_parallel_context(pipeline_stages=0)


@pytest.mark.parametrize("scheduler,mode", [("gpipe", "graph"), ("1f1b", "graph"), ("1f1b", "pynative")])
def test_one_stage_runs_micro_batches(reference, scheduler, mode):
    """One process, one stage: PipelineCell only cuts the batch into micro-batches, and the mean
    of their mean losses is the batch's mean loss (gradients likewise). 1F1B runs its schedule's
    forward and backward programs micro-batch by micro-batch, in either mode."""
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    mycel.set_auto_parallel_context(pipeline_config={"pipeline_scheduler": scheduler})
    try:
        net = make_net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        pipe = nn.PipelineCell(nn.WithLossCell(net, loss), 4)
        step = nn.TrainOneStepCell(pipe, nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
        x, y = data()
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        np.testing.assert_allclose(losses, reference[0], rtol=1e-5)
        for p in net.trainable_params():
            np.testing.assert_allclose(p.asnumpy(), reference[1][p.name], rtol=1e-5, atol=1e-6, err_msg=p.name)
        assert pipe.peak_held == (1 if scheduler == "1f1b" else None)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
        mycel.reset_auto_parallel_context()


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_1f1b_recompute_repeats_the_forward(mode):
    """A stage's backward recomputes its forward: from the random state the forward began with
    (Dropout keeps its mask: the weight gradient equals the closed form with the mask read off
    the forward's output), and leaving BatchNorm's moving statistics as the forward left them."""
    from mycel.common.seed import get_rng_state
    from mycel.nn.wrap.pipeline_host import HostPipeline
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    try:
        mycel.set_seed(3)
        dense, bn = nn.Dense(6, 32), nn.BatchNorm1d(32)
        cells = (dense, nn.Dropout(p=0.5), bn)
        stage = nn.SequentialCell(list(cells))
        stage.set_train(True)
        runner = HostPipeline("1f1b", cells, None, [dense.weight, dense.bias, bn.gamma, bn.beta], 0, 2, 0, 1, 2)
        rng = np.random.RandomState(0)
        h = Tensor(rng.standard_normal((8, 6)).astype(np.float32))
        dout = Tensor(rng.standard_normal((8, 32)).astype(np.float32))
        state = get_rng_state()
        out = runner._forward(h)
        dropped = dense_output(dense, h)  # the Dense output the forward's Dropout saw
        after = (bn.moving_mean.asnumpy().copy(), bn.moving_variance.asnumpy().copy())
        later = get_rng_state()
        grads = runner._recompute_grad(h, dout, state)
        assert get_rng_state() == later  # the recompute's draws are not the forward's next ones
        np.testing.assert_array_equal(bn.moving_mean.asnumpy(), after[0])
        np.testing.assert_array_equal(bn.moving_variance.asnumpy(), after[1])
        # Closed form through batch norm (training statistics) and the dropout mask.
        z = dropped * mask_of(out, bn, dropped)
        g = bn_input_grad(z, bn.gamma.asnumpy(), dout.asnumpy())
        dy = g * mask_of(out, bn, dropped)
        np.testing.assert_allclose(grads[0].asnumpy(), dy.T @ h.asnumpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(grads[1].asnumpy(), dy.sum(0), rtol=1e-4, atol=1e-5)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_1f1b_split_keeps_the_residuals():
    """Without stage_recompute (graph mode) a stage's gradient is cut at its sensitivity: the
    forward program runs once per micro-batch (one Dropout draw, BatchNorm's statistics moved
    once) and returns the stage's output with the residuals; the backward program takes them
    and the output's gradient. Its gradients equal the closed form with the forward's mask, and
    the stage's input itself is not among what is kept unless the backward reads it."""
    from mycel.common.seed import get_rng_state
    from mycel.nn.wrap.pipeline_host import HostPipeline
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        mycel.set_seed(3)
        dense, bn = nn.Dense(6, 32), nn.BatchNorm1d(32)
        cells = (dense, nn.Dropout(p=0.5), bn)
        nn.SequentialCell(list(cells)).set_train(True)
        runner = HostPipeline("1f1b", cells, None, [dense.weight, dense.bias, bn.gamma, bn.beta], 0, 2, 0, 1, 2)
        assert runner.split is not None
        rng = np.random.RandomState(0)
        h = Tensor(rng.standard_normal((8, 6)).astype(np.float32))
        dout = Tensor(rng.standard_normal((8, 32)).astype(np.float32))
        before = bn.moving_mean.asnumpy().copy()
        sp = runner._split_for(h)
        out, res = sp.forward(h)
        assert len(res) == sp.num_residuals > 0
        moved = bn.moving_mean.asnumpy().copy()
        assert not np.allclose(moved, before)  # the forward moved the statistics
        drawn = get_rng_state()
        grads = sp.backward(res, dout)
        assert get_rng_state() == drawn  # the backward draws nothing
        np.testing.assert_array_equal(bn.moving_mean.asnumpy(), moved)  # and assigns nothing
        dropped = dense_output(dense, h)
        np.testing.assert_allclose(moved, 0.9 * before + 0.1 * (dropped * mask_of(out, bn, dropped)).mean(0),
                                   rtol=1e-5, atol=1e-6)
        z = dropped * mask_of(out, bn, dropped)
        dy = bn_input_grad(z, bn.gamma.asnumpy(), dout.asnumpy()) * mask_of(out, bn, dropped)
        np.testing.assert_allclose(grads[0].asnumpy(), dy.T @ h.asnumpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(grads[1].asnumpy(), dy.sum(0), rtol=1e-4, atol=1e-5)
        # The same program pair serves every micro-batch of that shape.
        assert runner._split_for(Tensor(np.zeros((8, 6), np.float32))) is sp
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_split_at_sens_refuses_what_it_cannot_cut():
    from mycel import _mycel
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        dense = nn.Dense(3, 2)
        g = _mycel.graph.grad(dense, [0], False, None, False, False, True)  # no value returned
        with pytest.raises(TypeError, match="return_value=True and sens_param=True"):
            g.split_at_sens(Tensor(np.ones((4, 3), np.float32)))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def dense_output(dense, h):
    return h.asnumpy() @ dense.weight.asnumpy().T + dense.bias.asnumpy()


def mask_of(out, bn, y):
    """Dropout's scaled mask (0 or 2) from the forward's output: batch norm of y * mask equals
    out, and a column's zeros are where the mask dropped (y itself is never exactly 0)."""
    # Invert batch norm per column: out = gamma * (z - mean) / std + beta, with z = y * m.
    # Each column's dropped rows share one value of out (z = 0 there); kept rows have z = 2 y.
    o = out.asnumpy()
    m = np.zeros_like(y)
    for c in range(y.shape[1]):
        for mk in range(1 << y.shape[0]):
            trial = np.array([(mk >> r) & 1 for r in range(y.shape[0])], np.float32) * 2.0
            z = y[:, c] * trial
            norm = (z - z.mean()) / np.sqrt(z.var() + bn.eps) * bn.gamma.asnumpy()[c] + bn.beta.asnumpy()[c]
            if np.allclose(norm, o[:, c], atol=1e-4):
                m[:, c] = trial
                break
        else:
            raise AssertionError(f"no dropout mask reproduces column {c}")
    return m


def bn_input_grad(z, gamma, dout):
    """Gradient of training-mode batch norm (biased batch variance) w.r.t. its input."""
    n = z.shape[0]
    mean, var = z.mean(0), z.var(0)
    eps = 1e-5
    xhat = (z - mean) / np.sqrt(var + eps)
    dxhat = dout * gamma
    return (dxhat - dxhat.mean(0) - xhat * (dxhat * xhat).mean(0)) / np.sqrt(var + eps)
