"""Privacy: differential privacy (DP-SGD, accounting) and privacy evaluation (membership inference,
model inversion)."""
from mycel.armour.privacy import diff_privacy, evaluation
