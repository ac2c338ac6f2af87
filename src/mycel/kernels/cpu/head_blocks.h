// Blocks of whole first-dim entries of strided (A, heads, L, d) views, each run on one thread:
// what matmul_strided_then (scores + softmax) and attention_heads_grad's fallback share.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>

#include "mycel/core/parallel.h"
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

namespace mycel::cpu {

/// v with its first dim cut to n entries.
inline StridedView sub_dims(StridedView v, int64_t n) {
  v.dims[0] = n;
  return v;
}

/// The tensor of t's buffer from first-dim entry i0 of view v on (its footprint: n entries).
inline Tensor sub_tensor(const Tensor& t, const StridedView& v, int64_t i0, int64_t n) {
  const size_t isz = itemsize(t.dtype());
  return Tensor(t.storage(), t.offset() + static_cast<size_t>(i0 * v.strides[0]) * isz,
                Shape{n * v.strides[0]}, t.dtype());
}

/// block(i) for every i < blocks, dealt round-robin (static) over up to num_threads() threads,
/// each inside a one-thread SerialScope (its primitives built for, and run on, that thread); on
/// this thread alone when one thread suffices or it is already inside a parallel region. An
/// exception must not leave the parallel region: the first is kept and rethrown after it.
template <class Block>
void blocks_on_threads(int64_t blocks, Block&& block) {
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), blocks));
  if (T <= 1 || omp_in_parallel()) {
    const SerialScope one(0);
    for (int64_t i = 0; i < blocks; ++i) block(i);
    return;
  }
  std::exception_ptr err;
#pragma omp parallel num_threads(T)
  {
    const SerialScope one(0);
    const int id = omp_get_thread_num(), got = omp_get_num_threads();
    try {
      for (int64_t i = id; i < blocks; i += got) block(i);
    } catch (...) {
#pragma omp critical(mycel_blocks_on_threads)
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace mycel::cpu
