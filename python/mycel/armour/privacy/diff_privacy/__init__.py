"""Differential privacy: DP-SGD (mechanisms, optimizers, DPModel) and privacy accounting."""
from mycel.armour.privacy.diff_privacy.mechanisms import (AdaClippingWithGaussianRandom, ClipMechanismsFactory,
                                                          NoiseAdaGaussianRandom, NoiseGaussianRandom,
                                                          NoiseMechanismsFactory)
from mycel.armour.privacy.diff_privacy.monitor import PrivacyMonitorFactory, RDPMonitor, ZCDPMonitor
from mycel.armour.privacy.diff_privacy.optimizer import DPOptimizerClassFactory
from mycel.armour.privacy.diff_privacy.train import DPModel
