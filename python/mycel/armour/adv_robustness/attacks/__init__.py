"""Attacks with MindArmour's names and arguments: white-box ones (generate(inputs, labels) -> adversarial
batch) and black-box ones over a BlackModel (generate -> (is_adv, adv, query_times))."""
from mycel.armour.adv_robustness.attacks.attack import Attack
from mycel.armour.adv_robustness.attacks.black import (BlackModel, GeneticAttack, HopSkipJumpAttack, NES,
                                                       PointWiseAttack, SaltAndPepperNoiseAttack)
from mycel.armour.adv_robustness.attacks.carlini_wagner import CarliniWagnerL2Attack
from mycel.armour.adv_robustness.attacks.deep_fool import DeepFool
from mycel.armour.adv_robustness.attacks.jsma import JSMAAttack
from mycel.armour.adv_robustness.attacks.gradient_method import (FastGradientMethod, FastGradientSignMethod,
                                                                 LeastLikelyClassMethod, RandomFastGradientMethod,
                                                                 RandomFastGradientSignMethod,
                                                                 RandomLeastLikelyClassMethod)
from mycel.armour.adv_robustness.attacks.iterative_gradient_method import (BasicIterativeMethod,
                                                                           MomentumIterativeMethod,
                                                                           ProjectedGradientDescent)

__all__ = ["Attack", "FastGradientMethod", "FastGradientSignMethod", "RandomFastGradientMethod",
           "RandomFastGradientSignMethod", "LeastLikelyClassMethod", "RandomLeastLikelyClassMethod",
           "BasicIterativeMethod", "MomentumIterativeMethod", "ProjectedGradientDescent", "DeepFool",
           "CarliniWagnerL2Attack", "JSMAAttack", "BlackModel", "GeneticAttack", "HopSkipJumpAttack", "NES",
           "PointWiseAttack", "SaltAndPepperNoiseAttack"]
