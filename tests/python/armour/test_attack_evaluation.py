"""AttackEvaluate against hand-computed values on a small batch."""
import numpy as np
import pytest

from mycel.armour import AttackEvaluate


def test_metrics_by_hand():
    x = np.array([[1.0, 2.0, 0.0], [1.0, 1.0, 1.0], [2.0, 0.0, 0.0]])
    adv = np.array([[1.0, 2.5, 0.0], [1.0, 1.0, 1.0], [2.0, 0.0, -1.0]])
    labels = np.array([0, 1, 1])
    preds = np.array([[0.2, 0.7, 0.1], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1]])
    ev = AttackEvaluate(x, labels, adv, preds)
    success = [True, False, True]  # argmax 1 != 0; 1 == 1; 0 != 1
    assert ev.mis_classification_rate() == pytest.approx(np.mean(success))
    assert ev.avg_conf_adv_class() == pytest.approx((0.7 + 0.6) / 2)
    assert ev.avg_conf_true_class() == pytest.approx((0.2 + 0.3) / 2)
    l0, l2, linf = ev.avg_lp_distance()
    assert l0 == pytest.approx((1 / 2 + 1 / 1) / 2)
    assert l2 == pytest.approx((0.5 / np.sqrt(5) + 1 / 2) / 2)
    assert linf == pytest.approx((0.5 / 2 + 1 / 2) / 2)
    assert ev.nte() == pytest.approx(((0.7 - 0.2) + (0.6 - 0.3)) / 2)


def test_targeted_and_empty():
    x = np.zeros((2, 2)) + 1
    preds = np.array([[0.9, 0.1], [0.2, 0.8]])
    ev = AttackEvaluate(x, np.array([0, 0]), x + 0.1, preds, targeted=True, target_label=np.array([1, 0]))
    assert ev.mis_classification_rate() == 0.0
    assert ev.avg_lp_distance() == (-1.0, -1.0, -1.0) and ev.avg_conf_adv_class() == -1.0


def test_errors():
    x = np.zeros((2, 3))
    with pytest.raises(ValueError, match="same shape"):
        AttackEvaluate(x, np.array([0, 1]), np.zeros((2, 4)), np.ones((2, 2)) / 2)
    with pytest.raises(ValueError, match="adv_preds must be"):
        AttackEvaluate(x, np.array([0, 1]), x, np.ones(2))
    with pytest.raises(ValueError, match="target_label"):
        AttackEvaluate(x, np.array([0, 1]), x, np.ones((2, 2)) / 2, targeted=True)
    with pytest.raises(ValueError, match="one entry per input"):
        AttackEvaluate(x, np.array([0]), x, np.ones((2, 2)) / 2)


def _ssim_brute(a, b, span):
    """SSIM by an explicit loop over the 7 x 7 windows of 2-D images."""
    c1, c2 = (0.01 * span) ** 2, (0.03 * span) ** 2
    vals = []
    for i in range(a.shape[0] - 6):
        for j in range(a.shape[1] - 6):
            wa, wb = a[i:i + 7, j:j + 7].ravel(), b[i:i + 7, j:j + 7].ravel()
            ma, mb = wa.mean(), wb.mean()
            va, vb = wa.var(ddof=1), wb.var(ddof=1)
            cov = ((wa - ma) * (wb - mb)).sum() / 48
            vals.append(((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma ** 2 + mb ** 2 + c1) * (va + vb + c2)))
    return np.mean(vals)


def test_ssim_against_the_window_loop():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (3, 12, 10))
    adv = np.clip(x + rng.normal(0, 0.1, x.shape), 0, 1)
    preds = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    ev = AttackEvaluate(x, np.array([0, 0, 0]), adv, preds)   # samples 0 and 2 succeed
    span = x.max() - x.min()
    want = np.mean([_ssim_brute(x[i], adv[i], span) for i in (0, 2)])
    assert ev.avg_ssim() == pytest.approx(want, rel=1e-9)
    same = AttackEvaluate(x, np.array([0, 0, 0]), x, preds)
    assert same.avg_ssim() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="must be images"):
        AttackEvaluate(x[:, :5, :5], np.array([0, 0, 0]), x[:, :5, :5], preds).avg_ssim()


def test_defense_evaluate_by_hand():
    from mycel.armour import DefenseEvaluate
    raw = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8], [0.9, 0.1]])
    dfd = np.array([[0.6, 0.4], [0.8, 0.2], [0.1, 0.9], [0.3, 0.7]])
    y = np.array([0, 0, 1, 0])
    ev = DefenseEvaluate(raw, dfd, y)
    # raw right: 0, 2, 3; defended right: 0, 1, 2
    assert ev.cav() == pytest.approx(0.0)
    assert ev.crr() == pytest.approx(0.25) and ev.csr() == pytest.approx(0.25)
    assert ev.ccv() == pytest.approx((0.1 + 0.1) / 2)

    def js(p, q):
        m = (p + q) / 2
        return 0.5 * (p * np.log(p / m)).sum() + 0.5 * (q * np.log(q / m)).sum()
    assert ev.cos() == pytest.approx((js(raw[0], dfd[0]) + js(raw[2], dfd[2])) / 2)
    with pytest.raises(ValueError, match="must both be"):
        DefenseEvaluate(raw, dfd[:2], y)
