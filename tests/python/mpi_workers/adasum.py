"""Run under mpirun by tests/python/compat/test_compat_names19.py: nn.AdaSumByGradWrapCell and
nn.AdaSumByDeltaWeightWrapCell on every rank against a numpy AdaSum tree of all ranks' updates
(SGD and Adam steps), eager and graph mode. Rank r's gradients come from seed r, so every rank
can build every update. Prints 'rank R ok: N checks' at the end."""
import numpy as np

import mycel
import mycel.communication as comm
from mycel import Parameter, Tensor, nn

comm.init()
R, N = comm.get_rank(), comm.get_group_size()
CHECKS = [0]
SHAPES = [(3, 4), (5,), (1,)]


def check(got, ref, what, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=tol,
                               atol=tol, err_msg=f"rank {R} {what}")
    CHECKS[0] += 1


def adasum(vs):
    """The paper's pairwise rule over a binary tree of the ranks' vectors, in float64."""
    vs = [np.asarray(v, np.float64).ravel() for v in vs]
    while len(vs) > 1:
        nxt = []
        for a, b in zip(vs[0::2], vs[1::2]):
            d = a @ b
            nxt.append((1 - d / (2 * (a @ a))) * a + (1 - d / (2 * (b @ b))) * b)
        vs = nxt
    return vs[0]


def grads(seed):
    return [[np.random.RandomState(seed * 100 + 10 * r + i).standard_normal(s).astype(np.float32)
             for i, s in enumerate(SHAPES)] for r in range(N)]


def params():
    return [Parameter(Tensor(np.random.RandomState(50 + i).standard_normal(s).astype(np.float32)), name=f"w{i}")
            for i, s in enumerate(SHAPES)]


def adam_step(g, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """What Adam changes on its first step (old - new)."""
    g = g.astype(np.float64)
    m, v = (1 - b1) * g, (1 - b2) * g * g
    return lr * np.sqrt(1 - b2) / (1 - b1) * m / (np.sqrt(v) + eps)


def run(mode):
    for wrap, make_opt, step, seed in [
            (nn.AdaSumByGradWrapCell, lambda ps: nn.SGD(ps, 0.1), lambda g: 0.1 * g, 1),
            (nn.AdaSumByDeltaWeightWrapCell, lambda ps: nn.SGD(ps, 0.1), lambda g: 0.1 * g, 2),
            (nn.AdaSumByDeltaWeightWrapCell, lambda ps: nn.Adam(ps, 0.01), adam_step, 3)]:
        gs = grads(seed)
        ps = params()
        old = [p.asnumpy().copy() for p in ps]
        cell = wrap(make_opt(ps))
        cell(tuple(Tensor(g) for g in gs[R]))
        what = f"{wrap.__name__} {'Adam' if seed == 3 else 'SGD'} ({mode})"
        for i, p in enumerate(ps):
            if wrap is nn.AdaSumByGradWrapCell:
                ref = old[i] - 0.1 * adasum([gs[r][i] for r in range(N)]).reshape(SHAPES[i])
            else:
                ref = old[i] - adasum([step(gs[r][i]) for r in range(N)]).reshape(SHAPES[i])
            check(p.asnumpy(), ref, f"{what} parameter {i}")


for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
    mycel.set_context(mode=mode)
    run("graph" if mode == mycel.GRAPH_MODE else "eager")
print(f"rank {R} ok: {CHECKS[0]} checks", flush=True)
