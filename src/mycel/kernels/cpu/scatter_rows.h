// The row loop shared by the scatter kernels that combine update rows into a copy of the input
// (scatter_add_blocks in index.cc, scatter_reduce_blocks in scatter_reduce.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "mycel/core/parallel.h"
#include "mycel/core/tensor.h"

namespace mycel::cpu {

// out = input, then out[rows[r]] = combine(out[rows[r]], updates[r]) for each row r, each row a
// block of `inner` elements. Rows run serially so that duplicate rows compound in order; the
// inner block runs in parallel.
template <class T, class Combine>
void combine_scatter_rows(const Tensor& input, const Tensor& updates,
                          const std::vector<int64_t>& rows, int64_t inner, Tensor& out,
                          Combine combine) {
  if (out.nbytes()) std::memcpy(out.data(), input.data(), out.nbytes());
  T* y = out.data<T>();
  const T* u = updates.data<T>();
  for (size_t r = 0; r < rows.size(); ++r) {
    T* dst = y + rows[r] * inner;
    const T* src = u + static_cast<int64_t>(r) * inner;
    parallel_for(inner, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = combine(dst[i], src[i]);
    });
  }
}

}  // namespace mycel::cpu
