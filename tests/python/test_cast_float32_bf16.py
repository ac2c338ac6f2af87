"""cast float32 -> bfloat16 (convert_elements' branch-free path, amp's casts): the bits of
round-to-nearest-even computed with numpy's integer arithmetic, ties both ways, signs, zeros,
infinities, denormals and NaNs (quieted, sign kept), with lengths around the vector width and a
parallel-sized one."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops
from bf16_reference import bf16_bits  # numpy's reference: nearest even, NaN quieted


def got_bits(t):
    """The bf16 tensor's bits: widened to float32 exactly, so its top 16 bits are them."""
    return (t.astype(mycel.float32).asnumpy().view(np.uint32) >> 16).astype(np.uint16)


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -9, np.inf,
                    -np.inf, 3.4e38, -3.4e38, 1e-40, -1e-40, 1e-45, 65504.0, 3.14159],
                   np.float32)
NANS = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF], np.uint32)


@pytest.mark.parametrize("n", [1, 7, 8, 17, 1 << 20])
def test_cast_float32_to_bfloat16_bits(n):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    a[: min(n, len(SPECIAL))] = SPECIAL[: min(n, len(SPECIAL))]
    if n > 64:
        a[40:40 + len(NANS)] = NANS.view(np.float32)
    got = ops.cast(Tensor(a), mycel.bfloat16)
    assert got.dtype == mycel.bfloat16
    want = bf16_bits(a)
    nan = np.isnan(a)
    np.testing.assert_array_equal(got_bits(got)[~nan], want[~nan])
    # NaN stays NaN with its sign (its payload beyond bf16's bits is not promised).
    g = got_bits(got)[nan]
    assert np.all((g & 0x7F80) == 0x7F80) and np.all(g & 0x7F) and np.array_equal(g >> 15, want[nan] >> 15)
