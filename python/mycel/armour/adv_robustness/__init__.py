"""Adversarial robustness: attacks and their evaluation."""
