#include "mycel/kernels/cpu/index.h"

#include <cstring>
#include <type_traits>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/scatter_rows.h"

namespace mycel::cpu {
namespace {

template <class I>
std::vector<int64_t> linear_impl(const I* p, int64_t rows, const Shape& dims, bool neg,
                                 const char* op, int64_t axis0) {
  const size_t k = dims.size();
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t lin = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t v = static_cast<int64_t>(p[r * k + j]), n = dims[j];
      if (neg && v < 0 && v >= -n) v += n;
      if (v < 0 || v >= n)
        MYCEL_THROW(IndexError, "[", op, "] index ", static_cast<int64_t>(p[r * k + j]),
                    " is out of range for axis ", axis0 + static_cast<int64_t>(j), " with size ", n,
                    " (expected ", neg ? -n : 0, " <= index < ", n, ")");
      lin = lin * n + v;
    }
    out[r] = lin;
  }
  return out;
}

}  // namespace

std::vector<int64_t> linear_indices(const Tensor& indices, const Shape& dims, bool allow_negative,
                                    const char* op, int64_t first_axis) {
  const int64_t k = static_cast<int64_t>(dims.size());
  const int64_t rows = k ? indices.numel() / k : 0;
  if (indices.dtype() == DType::int32)
    return linear_impl(indices.data<int32_t>(), rows, dims, allow_negative, op, first_axis);
  if (indices.dtype() == DType::int64)
    return linear_impl(indices.data<int64_t>(), rows, dims, allow_negative, op, first_axis);
  MYCEL_THROW(TypeError, "[", op, "] indices must be int32 or int64, got ",
              dtype_name(indices.dtype()));
}

void gather_blocks(const Tensor& src, const std::vector<int64_t>& rows, int64_t outer,
                   int64_t inner, Tensor& out) {
  const size_t isz = itemsize(src.dtype());
  const size_t block = static_cast<size_t>(inner) * isz;
  const int64_t m = static_cast<int64_t>(rows.size());
  if (block == 0 || m == 0 || outer == 0) return;
  const int64_t n = src.numel() / (outer * inner);
  const char* s = static_cast<const char*>(src.data());
  char* d = static_cast<char*>(out.data());
  parallel_for(outer * m, inner, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      int64_t o = q / m, r = q % m;
      std::memcpy(d + q * block, s + (o * n + rows[r]) * block, block);
    }
  });
}

void scatter_add_blocks(const Tensor& input, const Tensor& updates,
                        const std::vector<int64_t>& rows, int64_t inner, Tensor& out) {
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    combine_scatter_rows<T>(input, updates, rows, inner, out,
                            [](T a, T b) { return static_cast<T>(C(a) + C(b)); });
  });
}

void gather_along_axis(const Tensor& src, const std::vector<int64_t>& idx, int64_t outer, int64_t n,
                       int64_t m, int64_t inner, Tensor& out) {
  const size_t isz = itemsize(src.dtype());
  const char* s = static_cast<const char*>(src.data());
  char* d = static_cast<char*>(out.data());
  if (out.numel() == 0) return;
  parallel_for(outer * m, inner, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t o = q / m;
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(d + (q * inner + i) * isz, s + ((o * n + idx[q * inner + i]) * inner + i) * isz,
                    isz);
    }
  });
}

void scatter_along_axis(const Tensor& input, const Tensor& updates, const std::vector<int64_t>& idx,
                        int64_t outer, int64_t n, int64_t m, int64_t inner, bool add, Tensor& out) {
  if (out.nbytes()) std::memcpy(out.data(), input.data(), out.nbytes());
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* y = out.data<T>();
    const T* u = updates.data<T>();
    // Serial: repeated targets accumulate (or the last write wins) in a fixed order.
    for (int64_t q = 0; q < outer * m; ++q) {
      const int64_t o = q / m;
      for (int64_t i = 0; i < inner; ++i) {
        T& dst = y[(o * n + idx[q * inner + i]) * inner + i];
        const T v = u[q * inner + i];
        if (!add)
          dst = v;
        else if constexpr (std::is_same_v<T, bool>)
          dst = dst || v;
        else
          dst = static_cast<T>(C(dst) + C(v));
      }
    }
  });
}

void one_hot(const Tensor& indices, Tensor& out, int64_t outer, int64_t depth, int64_t inner,
             double on, double off) {
  // Every output type (the wider unsigned and complex ones too) and every integer index type;
  // an index outside [0, depth) (a wrapped uint64 above 2^63 included) matches no position.
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T von, voff;
    if constexpr (is_complex_v<T>) {
      von = T(static_cast<typename T::value_type>(on));
      voff = T(static_cast<typename T::value_type>(off));
    } else {
      convert_elements(&on, DType::float64, &von, out.dtype(), 1);
      convert_elements(&off, DType::float64, &voff, out.dtype(), 1);
    }
    T* y = out.data<T>();
    visit_any_dtype(indices.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
        const I* idx = indices.data<I>();
        parallel_for(outer, depth * inner, [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o)
            for (int64_t d = 0; d < depth; ++d)
              for (int64_t i = 0; i < inner; ++i)
                y[(o * depth + d) * inner + i] =
                    static_cast<int64_t>(idx[o * inner + i]) == d ? von : voff;
        });
      }
    });
  });
}

}  // namespace mycel::cpu
