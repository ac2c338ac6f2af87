"""numpy's bfloat16: the independent reference the bf16 tests round with.

bfloat16 is float32's top 16 bits; a float32 rounds to it to nearest, ties to even (add 0x7FFF
plus the lowest kept bit, drop the low half). A NaN keeps its top bits with the quiet bit set, as
the C++ kernels do (core/bf16.h), so that no NaN rounds into an infinity.
"""
import numpy as np


def bf16_bits(a):
    """The bfloat16 bits (uint16) of float32 values."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, r).astype(np.uint16)


def bf16_widen(bits):
    """float32 values of bfloat16 bits (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_round(a):
    """float32 values rounded to bfloat16 and back: what a bf16 tensor holds."""
    return bf16_widen(bf16_bits(a))
