// Discrete Fourier transforms on CPU through Eigen's FFT module (its kissfft back end: mixed
// radix, any length, float and double), one axis at a time over a complex working copy.
#pragma once
#include <vector>

#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// What one n-d transform does (the op's attributes, resolved by its infer).
struct FftPlan {
  enum Kind { kC2C, kR2C, kC2R };
  std::vector<int64_t> dims;   // normalized axes, transformed in order (r2c/c2r: the halved last)
  std::vector<int64_t> sizes;  // logical transform length per axis (the input is cropped or
                               // zero-padded to it; c2r: to sizes.back() / 2 + 1 bins)
  Kind kind = kC2C;
  bool inverse = false;  // sign +1 in the exponent (ifft, irfft)
  double scale = 1;      // applied to every output (the `norm` mode)
};

/// out = the transform of x under `plan`; x real or complex (r2c: real), out complex (c2r: real).
void fft_nd(const Tensor& x, Tensor& out, const FftPlan& plan);
/// out = x rolled along `dims` by `shifts` (fftshift/ifftshift), any dtype (moves bytes).
void roll_dims(const Tensor& x, Tensor& out, const std::vector<int64_t>& dims,
               const std::vector<int64_t>& shifts);

}  // namespace mycel::cpu
