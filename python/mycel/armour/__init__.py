"""mycel.armour: adversarial robustness and differential privacy (MindArmour's API) written over
the public framework API: gradients from mycel.grad in compiled Cells, per-sample gradients from
mycel.vmap of grad inside the compiled training step."""
from mycel.armour import adv_robustness, privacy
from mycel.armour.adv_robustness.attacks import (BasicIterativeMethod, CarliniWagnerL2Attack, DeepFool,
                                                 FastGradientMethod, FastGradientSignMethod, JSMAAttack,
                                                 LeastLikelyClassMethod, MomentumIterativeMethod,
                                                 ProjectedGradientDescent, RandomFastGradientSignMethod,
                                                 RandomLeastLikelyClassMethod)
from mycel.armour.adv_robustness.evaluations import AttackEvaluate, DefenseEvaluate, RadarMetric
from mycel.armour.adv_robustness.defenses import (AdversarialDefense, AdversarialDefenseWithAttacks,
                                                  EnsembleAdversarialDefense, NaturalAdversarialDefense,
                                                  ProjectedAdversarialDefense)
from mycel.armour.adv_robustness.attacks.black import (BlackModel, GeneticAttack, HopSkipJumpAttack, NES,
                                                       PointWiseAttack, SaltAndPepperNoiseAttack)
from mycel.armour.adv_robustness.detectors import (DivergenceBasedDetector, EnsembleDetector, ErrorBasedDetector,
                                                   RegionBasedDetector, SimilarityDetector)
from mycel.armour.privacy.evaluation import ImageInversionAttack, MembershipInference, ModelInversionAttack
