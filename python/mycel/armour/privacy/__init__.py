"""Privacy: differential privacy (DP-SGD, accounting)."""
from mycel.armour.privacy import diff_privacy
