#include "mycel/kernels/cpu/elementwise.h"

namespace mycel::cpu {

BroadcastPlan plan_broadcast(const Shape& out, const std::vector<const Shape*>& operands) {
  const size_t nd = out.size();
  const size_t k = operands.size();
  // Full-rank strides with 0 on broadcast dimensions.
  std::vector<std::vector<int64_t>> full(k, std::vector<int64_t>(nd, 0));
  for (size_t j = 0; j < k; ++j) {
    const Shape& s = *operands[j];
    int64_t acc = 1;
    for (size_t d = nd; d-- > 0;) {
      size_t sd = d + s.size();
      if (sd < nd) break;  // missing leading dims: stride 0
      int64_t dim = s[sd - nd];
      full[j][d] = dim == 1 ? 0 : acc;
      acc *= dim;
    }
  }
  // Merge dimension d into d+1 when, for every operand, stride[d] == stride[d+1] * shape[d+1].
  BroadcastPlan plan;
  plan.strides.assign(k, {});
  for (size_t d = 0; d < nd; ++d) {
    if (out[d] == 1) continue;  // size-1 dims contribute nothing
    bool merge = !plan.shape.empty();
    for (size_t j = 0; j < k && merge; ++j) merge = plan.strides[j].back() == full[j][d] * out[d];
    if (merge) {
      plan.shape.back() *= out[d];
      for (size_t j = 0; j < k; ++j) plan.strides[j].back() = full[j][d];
    } else {
      plan.shape.push_back(out[d]);
      for (size_t j = 0; j < k; ++j) plan.strides[j].push_back(full[j][d]);
    }
  }
  if (plan.shape.empty()) {
    plan.shape.push_back(1);
    for (size_t j = 0; j < k; ++j) plan.strides[j].push_back(0);
  }
  return plan;
}

}  // namespace mycel::cpu
