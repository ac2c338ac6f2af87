"""Tensor methods built on registry ops (indexing, reshape-like methods, ...)."""
