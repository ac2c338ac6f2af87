"""Evaluation of attacks."""
from mycel.armour.adv_robustness.evaluations.attack_evaluation import AttackEvaluate

__all__ = ["AttackEvaluate"]
