"""Black-box attacks against a linear softmax model computed in numpy: each result is checked
against the model itself, the budgets, the model's own count of queried rows, and closed forms
(the L2 distance to a linear decision boundary; an LP for whether a target is reachable in an
L-inf ball, solved by scipy)."""
import numpy as np
import pytest
from scipy.optimize import linprog

from mycel.armour import BlackModel, GeneticAttack, HopSkipJumpAttack, NES, PointWiseAttack, SaltAndPepperNoiseAttack

D, K = 12, 4
_rng = np.random.default_rng(0)
W = _rng.standard_normal((D, K))
B = _rng.standard_normal(K) * 0.1


class Linear(BlackModel):
    """softmax(x W + b), or the logits x W + b; counts the rows it is asked for."""

    def __init__(self, w=W, b=B, logits=False):
        self.w, self.b, self.logits, self.rows = w, b, logits, 0

    def predict(self, inputs):
        x = np.asarray(inputs, np.float64).reshape(len(inputs), -1)
        self.rows += len(x)
        z = x @ self.w + self.b
        if self.logits:
            return z
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)


def data(n=8, seed=0):
    x = np.random.default_rng(seed).uniform(0.2, 0.8, (n, D)).astype(np.float32)
    m = Linear()
    y = m.predict(x).argmax(axis=1)
    m.rows = 0
    return m, x, y


def best_margin(x, target, eps, w=W, b=B):
    """max over the L-inf ball of radius eps (within [0, 1]) of min_j (z_target - z_j), by LP."""
    a = [np.r_[-(w[:, target] - w[:, j]), 1.0] for j in range(w.shape[1]) if j != target]
    c = [b[target] - b[j] for j in range(w.shape[1]) if j != target]
    box = [(max(0.0, v - eps), min(1.0, v + eps)) for v in x] + [(None, None)]
    return -linprog(np.r_[np.zeros(len(x)), -1.0], A_ub=np.array(a), b_ub=np.array(c), bounds=box).fun


def l2_to_boundary(x, y, w=W, b=B):
    """Closed form: the L2 distance from x to the nearest facet of its linear region."""
    return min((x @ (w[:, y] - w[:, j]) + b[y] - b[j]) / np.linalg.norm(w[:, y] - w[:, j])
               for j in range(w.shape[1]) if j != y)


def check_result(m, x, labels, ok, adv, queries, targeted):
    pred = m.predict(adv).argmax(axis=1)
    np.testing.assert_array_equal(ok, pred == labels if targeted else pred != labels)
    assert adv.shape == x.shape and adv.dtype == np.float32
    assert queries.shape == (len(x),) and (queries >= 0).all()


def test_genetic_untargeted_inside_ball_and_counts():
    m, x, y = data()
    eps = 0.15
    margin = np.array([max(best_margin(x[i], j, eps) for j in range(K) if j != y[i]) for i in range(len(x))])
    ok, adv, q = GeneticAttack(m, targeted=False, per_bounds=eps, max_steps=300, pop_size=10, mutation_rate=0.1,
                               step_size=0.5, seed=1).generate(x, y)
    assert m.rows == q.sum()
    check_result(m, x, y, ok, adv, q, targeted=False)
    assert (margin > 0.1).sum() >= 3 and (margin < 0).sum() >= 2
    assert ok[margin > 0.1].all() and not ok[margin < 0].any()   # the LP says what the ball can reach
    assert np.abs(adv - x).max() <= eps + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    assert (q[~ok] == 10 * 300).all()       # pop_size rows per generation until max_steps


def test_genetic_targeted_and_reproducible():
    m, x, y = data()
    tgt = np.array([max((j for j in range(K) if j != y[i]), key=lambda j: best_margin(x[i], j, 0.4))
                    for i in range(len(x))])
    runs = [GeneticAttack(Linear(), targeted=True, per_bounds=0.4, max_steps=200, pop_size=10,
                             mutation_rate=0.1, step_size=0.5, seed=s).generate(x, tgt)
            for s in (3, 3, 4)]
    for a, b in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][1], runs[2][1])
    ok, adv, q = runs[0]
    check_result(m, x, tgt, ok, adv, q, targeted=True)
    reach = np.array([best_margin(x[i], tgt[i], 0.35) > 0.05 for i in range(len(x))])
    assert ok[reach].all()
    np.random.seed(7)
    a = GeneticAttack(Linear(), per_bounds=0.4, max_steps=20).generate(x, tgt)[1]
    np.random.seed(7)
    np.testing.assert_array_equal(a, GeneticAttack(Linear(), per_bounds=0.4, max_steps=20).generate(x, tgt)[1])


@pytest.mark.parametrize("search", ["geometric_progression", "grid_search"])
def test_hsja_l2_approaches_the_closed_form_distance(search):
    m, x, y = data()
    ok, adv, q = HopSkipJumpAttack(m, init_num_evals=20, max_num_evals=100, num_iterations=10,
                                   stepsize_search=search, seed=1).generate(x)
    assert m.rows == q.sum()
    check_result(m, x, y, ok, adv, q, targeted=False)
    assert ok.all()
    dist = np.linalg.norm((adv - x).astype(np.float64), axis=1)
    best = np.array([l2_to_boundary(x[i].astype(np.float64), y[i]) for i in range(len(x))])
    assert (dist >= best * (1 - 1e-4)).all()       # nothing beats the nearest facet
    assert (dist <= best * 1.2).all(), dist / best  # and the attack gets close to it


def test_hsja_linf_and_targeted_from_target_images():
    m, x, y = data()
    ok, adv, q = HopSkipJumpAttack(m, init_num_evals=20, max_num_evals=100, num_iterations=6, constraint="linf",
                                   seed=2).generate(x)
    check_result(m, x, y, ok, adv, q, targeted=False)
    assert ok.all()
    # targeted: start from points of the target class; stay adversarial for it
    pool = np.random.default_rng(5).uniform(0, 1, (4000, D)).astype(np.float32)
    cls = Linear().predict(pool).argmax(axis=1)
    tgt = np.array([next(j for j in range(1, K) if ((y[i] + j) % K) in cls) for i in range(len(x))])
    tgt = (y + tgt) % K
    attack = HopSkipJumpAttack(m, init_num_evals=20, max_num_evals=50, num_iterations=5, seed=3)
    start = np.stack([pool[cls == t][0] for t in tgt])
    attack.set_target_images(start)
    m.rows = 0
    ok, adv, q = attack.generate(x, tgt)
    assert m.rows == q.sum()
    check_result(m, x, tgt, ok, adv, q, targeted=True)
    assert ok.all()
    assert (np.linalg.norm(adv - x, axis=1) < np.linalg.norm(start - x, axis=1)).all()


def test_nes_query_limit_reaches_feasible_targets_within_budget():
    m, x, y = data()
    eps = 0.5
    tgt = np.array([max((j for j in range(K) if j != y[i]), key=lambda j: best_margin(x[i], j, eps))
                    for i in range(len(x))])
    feasible = np.array([best_margin(x[i], tgt[i], 0.8 * eps) > 0 for i in range(len(x))])
    budget = 3000
    ok, adv, q = NES(m, "Query_Limit", num_class=K, max_queries=budget, epsilon=eps, samples_per_draw=50,
                     batch_size=50, sigma=1e-2, seed=1).generate(x, tgt)
    assert m.rows == q.sum() and (q <= budget).all()
    check_result(m, x, tgt, ok, adv, q, targeted=True)
    assert feasible.sum() >= 3 and ok[feasible].all()
    assert np.abs(adv - x).max() <= eps + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    again = NES(Linear(), "Query_Limit", num_class=K, max_queries=budget, epsilon=eps, samples_per_draw=50,
                batch_size=50, sigma=1e-2, seed=1).generate(x, tgt)
    np.testing.assert_array_equal(again[1], adv)
    small = NES(Linear(), "Query_Limit", num_class=K, max_queries=120, epsilon=eps, samples_per_draw=50,
                batch_size=50, sigma=1e-2, seed=1).generate(x, tgt)[2]
    assert (small <= 120).all()


@pytest.mark.parametrize("scene", ["Partial_Info", "Label_Only"])
def test_nes_partial_info_and_label_only(scene):
    m, x, y = data(6)
    m = Linear(4 * W, 4 * B, logits=True)    # NES reads scores as logits, as MindArmour's does
    eps = 0.5
    tgt = np.array([max((j for j in range(K) if j != y[i]), key=lambda j: best_margin(x[i], j, eps))
                    for i in range(len(x))])
    pool = np.random.default_rng(5).uniform(0, 1, (4000, D)).astype(np.float32)
    cls = m.predict(pool).argmax(axis=1)
    m.rows = 0
    start = np.stack([pool[cls == t][np.argmin(np.abs(pool[cls == t] - x[i]).max(axis=1))] for i, t in enumerate(tgt)])
    attack = NES(m, scene, top_k=2, num_class=K, max_queries=30000, epsilon=eps, samples_per_draw=40, batch_size=40,
                 sigma=1e-2, zero_iters=4, label_only_sigma=1e-2, seed=1)
    with pytest.raises(ValueError, match="set_target_images"):
        attack.generate(x, tgt)
    attack.set_target_images(start)
    ok, adv, q = attack.generate(x, tgt)
    assert m.rows == q.sum() and (q <= 30000).all()
    assert (m.predict(adv[ok]).argmax(axis=1) == tgt[ok]).all()
    assert np.abs(adv[ok] - x[ok]).max() <= eps + 1e-6
    feasible = np.array([best_margin(x[i], tgt[i], 0.8 * eps) > 0.1 for i in range(len(x))])
    assert feasible.sum() >= 3 and ok[feasible].all(), (ok, feasible)


def test_pointwise_is_one_minimal_in_l0():
    w2, b2 = W[:, :2], B[:2]
    m = Linear(w2, b2)
    x = np.random.default_rng(3).uniform(0.2, 0.8, (6, D)).astype(np.float32)
    y = m.predict(x).argmax(axis=1)
    m.rows = 0
    ok, adv, q = PointWiseAttack(m, max_iter=50, search_iter=12, seed=2).generate(x, y)
    assert m.rows == q.sum()
    check_result(m, x, y, ok, adv, q, targeted=False)
    assert ok.sum() >= 3
    for i in np.nonzero(ok)[0]:  # brute force: putting back any single changed feature undoes the attack
        changed = np.nonzero(adv[i] != x[i])[0]
        assert 0 < changed.size < D
        for f in changed:
            t = adv[i].copy()
            t[f] = x[i, f]
            assert m.predict(t[None]).argmax() == y[i]
    again = PointWiseAttack(Linear(w2, b2), max_iter=50, search_iter=12, seed=2).generate(x, y)
    np.testing.assert_array_equal(again[1], adv)


def test_salt_and_pepper_counts_every_query():
    m, x, y = data()
    ok, adv, q = SaltAndPepperNoiseAttack(m, max_iter=30, seed=4).generate(x, y)
    assert m.rows == q.sum()
    check_result(m, x, y, ok, adv, q, targeted=False)


def test_black_box_bad_arguments():
    m, x, y = data(2)
    with pytest.raises(TypeError, match="GeneticAttack: model must be a BlackModel"):
        GeneticAttack(lambda t: t)
    with pytest.raises(ValueError, match="GeneticAttack: per_bounds must be > 0"):
        GeneticAttack(m, per_bounds=0)
    with pytest.raises(ValueError, match="detection"):
        GeneticAttack(m, model_type="detection")
    with pytest.raises(ValueError, match="HopSkipJumpAttack: constraint must be one of"):
        HopSkipJumpAttack(m, constraint="l1")
    with pytest.raises(ValueError, match="clip_min must be < clip_max"):
        HopSkipJumpAttack(m, clip_min=1.0, clip_max=0.0)
    with pytest.raises(ValueError, match="NES: scene must be one of"):
        NES(m, "Label")
    with pytest.raises(ValueError, match="top_k must be in"):
        NES(m, "Partial_Info", top_k=-1)
    with pytest.raises(ValueError, match="labels must lie in"):
        NES(m, "Query_Limit", num_class=K).generate(x, np.array([0, K]))
    with pytest.raises(ValueError, match="one entry per input"):
        PointWiseAttack(m).generate(x, y[:1])
    with pytest.raises(ValueError, match="labels must lie in"):
        GeneticAttack(m, max_steps=1).generate(x, np.array([0, 9]))
    with pytest.raises(ValueError, match="sparse=True labels must be"):
        HopSkipJumpAttack(m).generate(x, np.eye(K)[y])
