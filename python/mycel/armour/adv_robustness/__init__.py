"""Adversarial robustness: attacks, defences, detectors and their evaluation."""
