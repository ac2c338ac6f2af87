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
