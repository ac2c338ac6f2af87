#include "mycel/kernels/cpu/fft.h"

#include <algorithm>
#include <complex>
#include <cstring>
#include <unsupported/Eigen/FFT>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

// A complex working array with its shape (row-major).
template <class R>
struct Work {
  Shape shape;
  std::vector<std::complex<R>> data;
};

// (outer, length, inner) of axis `d` of shape s.
void split_at(const Shape& s, int64_t d, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= s[i];
  for (size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
}

// One axis: every line is cropped/zero-padded to `take` values (in its first positions of a
// length-n buffer, the rest zero), transformed with length n, and `keep` values are written.
// c2r lines are first extended to the Hermitian spectrum they are the half of.
template <class R>
Work<R> transform_axis(const Work<R>& in, int64_t d, int64_t n, int64_t take, int64_t keep,
                       bool inverse, bool hermitian) {
  using C = std::complex<R>;
  int64_t outer, inner;
  split_at(in.shape, d, outer, inner);
  const int64_t len = in.shape[d];
  Work<R> out;
  out.shape = in.shape;
  out.shape[d] = keep;
  out.data.assign(static_cast<size_t>(outer * keep * inner), C(0));
  const int64_t lines = outer * inner, copy = std::min(len, take);
  if (lines == 0 || keep == 0 || n == 0) return out;
  parallel_for(lines, n * 8, [&](int64_t b, int64_t e) {
    Eigen::FFT<R> fft;  // its plans are cached per object: one per chunk of lines
    fft.SetFlag(Eigen::FFT<R>::Unscaled);
    std::vector<C> src(n), dst(n);
    for (int64_t l = b; l < e; ++l) {
      const int64_t o = l / inner, i = l % inner;
      std::fill(src.begin(), src.end(), C(0));
      for (int64_t t = 0; t < copy; ++t) src[t] = in.data[(o * len + t) * inner + i];
      if (hermitian)  // X[k] = conj(X[n - k]) for the bins above the stored half
        for (int64_t k = take; k < n; ++k) src[k] = std::conj(src[n - k]);
      if (n == 1)  // a length-1 transform is the identity (kissfft has no plan for it)
        dst[0] = src[0];
      else if (inverse)
        fft.inv(dst.data(), src.data(), n);
      else
        fft.fwd(dst.data(), src.data(), n);
      for (int64_t t = 0; t < keep; ++t) out.data[(o * keep + t) * inner + i] = dst[t];
    }
  });
  return out;
}

template <class R>
void run(const Tensor& x, Tensor& out, const FftPlan& p) {
  using C = std::complex<R>;
  Work<R> w;
  w.shape = x.shape();
  w.data.resize(static_cast<size_t>(x.numel()));
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if constexpr (is_complex_v<T>)
        w.data[i] = C(static_cast<R>(px[i].real()), static_cast<R>(px[i].imag()));
      else
        w.data[i] = C(static_cast<R>(static_cast<double>(px[i])), R(0));
    }
  });
  const size_t k = p.dims.size();
  for (size_t s = 0; s < k; ++s) {
    // r2c transforms its halved axis first; c2r last; c2c in the given order.
    const size_t j = p.kind == FftPlan::kR2C ? (s == 0 ? k - 1 : s - 1) : s;
    const int64_t d = p.dims[j], n = p.sizes[j];
    const bool halved = j == k - 1 && p.kind != FftPlan::kC2C;
    if (halved && p.kind == FftPlan::kR2C)
      w = transform_axis(w, d, n, n, n / 2 + 1, p.inverse, false);
    else if (halved)  // c2r
      w = transform_axis(w, d, n, n / 2 + 1, n, p.inverse, true);
    else
      w = transform_axis(w, d, n, n, n, p.inverse, false);
  }
  const R scale = static_cast<R>(p.scale);
  if (p.kind == FftPlan::kC2R) {
    R* o = out.data<R>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = w.data[i].real() * scale;
  } else {
    C* o = out.data<C>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = w.data[i] * scale;
  }
}

}  // namespace

void fft_nd(const Tensor& x, Tensor& out, const FftPlan& plan) {
  const DType t = out.dtype();
  if (t == DType::complex128 || t == DType::float64)
    run<double>(x, out, plan);
  else
    run<float>(x, out, plan);
}

void roll_dims(const Tensor& x, Tensor& out, const std::vector<int64_t>& dims,
               const std::vector<int64_t>& shifts) {
  const Shape& s = x.shape();
  const size_t nd = s.size(), isz = itemsize(x.dtype());
  std::vector<int64_t> shift(nd, 0);
  for (size_t i = 0; i < dims.size(); ++i)
    if (s[dims[i]] > 0) shift[dims[i]] = ((shifts[i] % s[dims[i]]) + s[dims[i]]) % s[dims[i]];
  const auto* src = static_cast<const char*>(x.data());
  auto* dst = static_cast<char*>(out.data());
  std::vector<int64_t> idx(nd, 0);
  for (int64_t flat = 0; flat < x.numel(); ++flat) {  // idx: the source element's index
    int64_t o = 0;
    for (size_t d = 0; d < nd; ++d) o = o * s[d] + (idx[d] + shift[d]) % s[d];
    std::memcpy(dst + o * isz, src + flat * isz, isz);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace mycel::cpu
