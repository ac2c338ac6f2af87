"""Tensor, dtypes and global settings."""
