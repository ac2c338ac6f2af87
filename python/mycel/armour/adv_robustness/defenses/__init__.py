"""Defences: adversarial training."""
from mycel.armour.adv_robustness.defenses.adversarial_defense import (AdversarialDefense,
                                                                      AdversarialDefenseWithAttacks,
                                                                      EnsembleAdversarialDefense,
                                                                      NaturalAdversarialDefense,
                                                                      ProjectedAdversarialDefense)
