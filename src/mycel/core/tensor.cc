#include "mycel/core/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"

namespace mycel {

Tensor::Tensor(std::shared_ptr<Storage> storage, size_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)), dtype_(dtype) {
  numel_ = mycel::numel(shape_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  // Reject negative dimensions and element counts whose byte size would overflow.
  int64_t count = 1;
  for (int64_t d : shape) {
    MYCEL_CHECK(d >= 0, ValueError, "negative dimension in shape ", shape_str(shape));
    if (d != 0 && count > (int64_t(1) << 56) / d)
      MYCEL_THROW(ValueError, "shape ", shape_str(shape), " has too many elements to allocate");
    count *= d;
  }
  size_t n = static_cast<size_t>(count) * itemsize(dtype);
  return Tensor(Storage::allocate(n), 0, shape, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::scalar(double v, DType dtype) {
  Tensor t = empty({}, dtype);
  convert_elements(&v, DType::float64, t.data(), dtype, 1);
  return t;
}

Tensor Tensor::view(const Shape& shape) const {
  MYCEL_CHECK(mycel::numel(shape) == numel_, ShapeError, "cannot view a tensor of shape ",
              shape_str(shape_), " as shape ", shape_str(shape));
  return Tensor(storage_, offset_, shape, dtype_);
}

Tensor Tensor::narrow0(int64_t start, int64_t n) const {
  MYCEL_CHECK(ndim() > 0 && start >= 0 && n >= 0 && start + n <= shape_[0], IndexError, "slice [",
              start, ", ", start + n, ") out of range for shape ", shape_str(shape_));
  Shape s = shape_;
  s[0] = n;
  int64_t inner = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  return Tensor(storage_, offset_ + static_cast<size_t>(start * inner) * itemsize(dtype_), s,
                dtype_);
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_);
  if (nbytes()) std::memcpy(t.data(), data(), nbytes());
  return t;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor t = empty(shape_, dtype);
  convert_elements(data(), dtype_, t.data(), dtype, numel_);
  return t;
}

double Tensor::item_as_double(int64_t i) const {
  MYCEL_CHECK(i >= 0 && i < numel_, IndexError, "element ", i, " out of range for ", numel_,
              " elements");
  double v;
  convert_elements(static_cast<const char*>(data()) + i * itemsize(dtype_), dtype_, &v,
                   DType::float64, 1);
  return v;
}

namespace {
template <class D, class S>
D convert_one(S s) {
  if constexpr (is_complex_v<S> && is_complex_v<D>) {
    return static_cast<D>(s);
  } else if constexpr (is_complex_v<S>) {  // numpy keeps the real part (bool: either part)
    if constexpr (std::is_same_v<D, bool>)
      return s != S(0);
    else
      return convert_one<D>(s.real());
  } else if constexpr (is_complex_v<D>) {
    return D(static_cast<typename D::value_type>(static_cast<compute_t<S>>(s)));
  } else if constexpr (std::is_same_v<D, bool>) {
    return static_cast<compute_t<S>>(s) != compute_t<S>(0);
  } else if constexpr (std::is_integral_v<D> && !std::is_integral_v<compute_t<S>>) {
    // float -> int: NaN/inf/out of range are undefined in C++; give numpy's usual result.
    auto v = static_cast<double>(static_cast<compute_t<S>>(s));
    if (!std::isfinite(v)) return std::numeric_limits<D>::min();
    if (v >= 9.2233720368547758e18 || v < -9.2233720368547758e18)
      return std::numeric_limits<D>::min();
    return static_cast<D>(static_cast<int64_t>(v));
  } else {
    return static_cast<D>(static_cast<compute_t<D>>(static_cast<compute_t<S>>(s)));
  }
}
}  // namespace

void convert_elements(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n) {
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, static_cast<size_t>(n) * itemsize(src_dtype));
    return;
  }
  if (src_dtype == DType::bool_) {
    // A mask to numbers (a relu's backward casts one per activation, in bf16 under amp O2):
    // the bits of 0 or 1 chosen by a mask the compiler vectorizes; the generic path converted
    // each bool through float and the bf16 rounding, 6x slower than a float32 -> bf16 cast.
    visit_any_dtype(dst_dtype, [&](auto dt) {
      using D = typename decltype(dt)::type;
      const uint8_t* s = static_cast<const uint8_t*>(src);
      if constexpr (sizeof(D) == 2 || sizeof(D) == 4 || sizeof(D) == 8) {
        using U = std::conditional_t<sizeof(D) == 2, uint16_t,
                                     std::conditional_t<sizeof(D) == 4, uint32_t, uint64_t>>;
        const D v0 = convert_one<D>(false), v1 = convert_one<D>(true);
        U b0, b1;
        std::memcpy(&b0, &v0, sizeof(U));
        std::memcpy(&b1, &v1, sizeof(U));
        U* d = static_cast<U*>(dst);
        parallel_for(n, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const U m = U(0) - U(s[i] != 0);
            d[i] = (b1 & m) | (b0 & ~m);
          }
        });
      } else {
        D* d = static_cast<D*>(dst);
        parallel_for(n, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) d[i] = convert_one<D>(s[i] != 0);
        });
      }
    });
    return;
  }
  if (src_dtype == DType::float32 && dst_dtype == DType::bfloat16) {
    // amp's casts (a step's input, float32 black-list results): float_to_bf16_bits' rounding
    // with its NaN branch turned into a select, so the loop vectorizes (the transformer step's
    // input cast, 2048x128: 245 -> ~40 us on one core). The same bits.
    const uint32_t* s = static_cast<const uint32_t*>(src);
    uint16_t* d = static_cast<uint16_t*>(dst);
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const uint32_t u = s[i];
        const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x40u;
        const uint32_t nan = 0u - static_cast<uint32_t>((u & 0x7fffffffu) > 0x7f800000u);
        d[i] = static_cast<uint16_t>((q & nan) | (r & ~nan));
      }
    });
    return;
  }
  visit_any_dtype(src_dtype, [&](auto st) {
    using S = typename decltype(st)::type;
    visit_any_dtype(dst_dtype, [&](auto dt) {
      using D = typename decltype(dt)::type;
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) d[i] = convert_one<D>(s[i]);
      });
    });
  });
}

}  // namespace mycel
