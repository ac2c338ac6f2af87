"""Detectors of adversarial examples and of query-based attacks (MindArmour's names)."""
from mycel.armour.adv_robustness.detectors.detector import Detector
from mycel.armour.adv_robustness.detectors.ensemble_detector import EnsembleDetector
from mycel.armour.adv_robustness.detectors.mag_net import DivergenceBasedDetector, ErrorBasedDetector
from mycel.armour.adv_robustness.detectors.region_based_detector import RegionBasedDetector
from mycel.armour.adv_robustness.detectors.black.similarity_detector import SimilarityDetector

__all__ = ["Detector", "EnsembleDetector", "ErrorBasedDetector", "DivergenceBasedDetector", "RegionBasedDetector",
           "SimilarityDetector"]
