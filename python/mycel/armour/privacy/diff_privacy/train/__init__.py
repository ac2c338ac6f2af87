from mycel.armour.privacy.diff_privacy.train.model import DPModel
