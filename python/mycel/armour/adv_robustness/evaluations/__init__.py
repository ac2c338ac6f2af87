"""Evaluation of attacks and defences."""
from mycel.armour.adv_robustness.evaluations.attack_evaluation import AttackEvaluate
from mycel.armour.adv_robustness.evaluations.defense_evaluation import DefenseEvaluate
from mycel.armour.adv_robustness.evaluations.visual_metrics import RadarMetric

__all__ = ["AttackEvaluate", "DefenseEvaluate", "RadarMetric"]
