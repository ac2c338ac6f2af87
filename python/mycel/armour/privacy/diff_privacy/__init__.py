"""Differential privacy: DP-SGD (mechanisms, optimizers, DPModel) and privacy accounting."""
from mycel.armour.privacy.diff_privacy.monitor import PrivacyMonitorFactory, RDPMonitor, ZCDPMonitor
