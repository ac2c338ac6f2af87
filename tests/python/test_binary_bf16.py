"""add, sub and mul of same-shape bfloat16 tensors (kernels/cpu/binary_bf16.cc: AVX2 lanes) against
numpy: the float32 result of the bf16 values rounded to bfloat16 (nearest even, NaN quieted) in
numpy bit arithmetic; and bit for bit against the scalar loop (MYCEL_BF16_BINARY_LANES=0), at
1/2/3 threads, on element counts that are and are not multiples of the lane width, with NaN, inf,
subnormals and rounding ties."""
import numpy as np
import pytest

import mycel
from mycel import Tensor
from bf16_reference import bf16_bits, bf16_widen

RNG = np.random.default_rng(35)


def operands(n):
    bits = RNG.integers(0, 1 << 16, size=(2, n), dtype=np.uint32).astype(np.uint16)
    # ordinary values in most places, the raw bit patterns (NaN, inf, subnormals) in the rest
    normal = bf16_bits(RNG.standard_normal((2, n)).astype(np.float32) * 3)
    pick = RNG.random((2, n)) < 0.8
    bits = np.where(pick, normal, bits)
    if n >= 4:  # a tie: 1 + 2^-8 is halfway between two bf16 values
        bits[0, :4] = bf16_bits(np.float32([1, 1, -1, 65280.0]))
        bits[1, :4] = bf16_bits(np.float32([2.0 ** -8, 3 * 2.0 ** -8, -(2.0 ** -8), 128.0]))
    return bits


def as_tensor(bits):
    return Tensor(bf16_widen(bits), dtype=mycel.bfloat16)


def result_bits(t):
    assert t.dtype == mycel.bfloat16
    return bf16_bits(t.astype(mycel.float32).asnumpy())  # exact: a bf16 value widened


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 1000, 2048 * 128 + 3])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_bf16_binary_matches_numpy_and_scalar_loop(op, n, threads, monkeypatch):
    saved = mycel.get_context("num_threads")
    mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=threads)
    try:
        a, b = operands(n)
        fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
        with np.errstate(all="ignore"):
            ref = bf16_bits(fn(bf16_widen(a), bf16_widen(b)))
        got = result_bits(fn(as_tensor(a), as_tensor(b)))
        monkeypatch.setenv("MYCEL_BF16_BINARY_LANES", "0")
        scalar = result_bits(fn(as_tensor(a), as_tensor(b)))
    finally:
        mycel.set_context(num_threads=saved)
    np.testing.assert_array_equal(got, scalar)
    np.testing.assert_array_equal(got, ref)


def test_bf16_binary_broadcast_and_mixed_dtypes_take_the_general_path():
    a = Tensor(np.float32([[1.5, -2.0, 3.25]] * 4), dtype=mycel.bfloat16)
    b = Tensor(np.float32([0.5, 0.25, -1.0]), dtype=mycel.bfloat16)
    np.testing.assert_array_equal((a + b).astype(mycel.float32).asnumpy(),
                                  np.float32([[2.0, -1.75, 2.25]] * 4))
    mixed = a + Tensor(np.float32([[0.1, 0.2, 0.3]] * 4))  # promoted to float32: no bf16 lanes
    assert mixed.dtype == mycel.float32
    np.testing.assert_array_equal(mixed.asnumpy(),
                                  np.float32([[1.5, -2.0, 3.25]] * 4) + np.float32([0.1, 0.2, 0.3]))
