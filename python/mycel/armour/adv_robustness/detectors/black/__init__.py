"""Detectors of query-based (black-box) attacks."""
from mycel.armour.adv_robustness.detectors.black.similarity_detector import SimilarityDetector
