"""Black-box (query-only) attacks."""
from mycel.armour.adv_robustness.attacks.black.black_model import BlackModel
from mycel.armour.adv_robustness.attacks.black.salt_and_pepper_attack import SaltAndPepperNoiseAttack
