"""BlackModel: the query-only view of a model that black-box attacks use (MindArmour's API):
subclass it and define predict(inputs) -> scores (N, classes) as numpy."""
import numpy as np


class BlackModel:
    def predict(self, inputs):
        raise NotImplementedError(f"{type(self).__name__}.predict: a BlackModel must define predict(inputs)")

    def is_adversarial(self, data, label, is_targeted):
        """Per sample: classified as `label` when targeted, as anything else when not."""
        pred = np.asarray(self.predict(data)).argmax(axis=1)
        return pred == label if is_targeted else pred != label
