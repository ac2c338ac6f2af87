// Kernels of tensor_scatter_mul/div/max/min (scatter_reduce.h).
#include "mycel/kernels/cpu/scatter_reduce.h"

#include <type_traits>

#include "mycel/kernels/cpu/binary.h"
#include "mycel/kernels/cpu/scatter_rows.h"

namespace mycel::cpu {
namespace {

template <class C>
C combine(C a, C b, ScatterReduce op) {
  switch (op) {
    case ScatterReduce::kMul:
      return wrap_mul(a, b);
    case ScatterReduce::kDiv:
      if constexpr (std::is_floating_point_v<C>)
        return a / b;
      else if constexpr (std::is_same_v<C, bool>)
        return a;
      else
        return b == C(0) ? C(0) : (std::is_signed_v<C> && b == C(-1) ? wrap_neg(a) : C(a / b));
    case ScatterReduce::kMax:
      return nan_max(a, b);
    case ScatterReduce::kMin:
      return nan_min(a, b);
  }
  return a;
}

}  // namespace

void scatter_reduce_blocks(const Tensor& input, const Tensor& updates,
                           const std::vector<int64_t>& rows, int64_t inner, ScatterReduce op,
                           Tensor& out) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    combine_scatter_rows<T>(input, updates, rows, inner, out,
                            [op](T a, T b) { return static_cast<T>(combine(C(a), C(b), op)); });
  });
}

}  // namespace mycel::cpu
