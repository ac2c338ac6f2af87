"""EnsembleDetector: several detectors' 0/1 decisions combined by policy: 'vote' flags a sample
when more than half of the detectors do, 'all' when every one does, 'any' when one does."""
import numpy as np

from mycel.armour.adv_robustness.attacks.black._common import check_choice
from mycel.armour.adv_robustness.detectors.detector import Detector


class EnsembleDetector(Detector):
    def __init__(self, detectors, policy="vote"):
        o = "EnsembleDetector"
        if not isinstance(detectors, (list, tuple)) or not detectors or \
                not all(isinstance(d, Detector) for d in detectors):
            raise TypeError(f"{o}: detectors must be a non-empty list of Detectors, got {detectors!r}")
        self._detectors = list(detectors)
        self._policy = check_choice(o, "policy", policy, ("vote", "all", "any"))

    def fit(self, inputs, labels=None):
        """Each detector is fitted on its own beforehand (their fits need different arguments)."""
        raise NotImplementedError("EnsembleDetector.fit: fit each detector, then combine them")

    def detect(self, inputs):
        votes = np.stack([np.asarray(d.detect(inputs), np.int32) for d in self._detectors])
        if self._policy == "vote":
            return (2 * votes.sum(axis=0) > len(votes)).astype(np.int32)
        if self._policy == "all":
            return votes.all(axis=0).astype(np.int32)
        return votes.any(axis=0).astype(np.int32)

    def detect_diff(self, inputs):
        """Each detector's detect_diff, in order."""
        return [d.detect_diff(inputs) for d in self._detectors]

    def transform(self, inputs):
        """Each detector's transform, in order."""
        return [d.transform(inputs) for d in self._detectors]
