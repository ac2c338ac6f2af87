"""Black-box (query-only) attacks over a BlackModel: generate(inputs, labels) -> (is_adv, adv, query_times)."""
from mycel.armour.adv_robustness.attacks.black.black_model import BlackModel
from mycel.armour.adv_robustness.attacks.black.genetic_attack import GeneticAttack
from mycel.armour.adv_robustness.attacks.black.hop_skip_jump_attack import HopSkipJumpAttack
from mycel.armour.adv_robustness.attacks.black.natural_evolutionary_strategy import NES
from mycel.armour.adv_robustness.attacks.black.pointwise_attack import PointWiseAttack
from mycel.armour.adv_robustness.attacks.black.salt_and_pepper_attack import SaltAndPepperNoiseAttack

__all__ = ["BlackModel", "GeneticAttack", "HopSkipJumpAttack", "NES", "PointWiseAttack", "SaltAndPepperNoiseAttack"]
