"""Privacy: differential privacy (DP-SGD, accounting)."""
