"""Privacy evaluation: membership inference and inversion of a model's representations."""
from mycel.armour.privacy.evaluation.inversion_attack import ImageInversionAttack
from mycel.armour.privacy.evaluation.membership_inference import MembershipInference
from mycel.armour.privacy.evaluation.model_inversion_attack import ModelInversionAttack

__all__ = ["ImageInversionAttack", "MembershipInference", "ModelInversionAttack"]
