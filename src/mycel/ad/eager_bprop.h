// Runs an op's backward rule eagerly on tensors: the vector-Jacobian product of one op call.
// Used by op-level gradient checks and tools; autodiff proper emits the same rules as IR.
#pragma once
#include <optional>
#include <vector>

#include "mycel/ops/bprop.h"

namespace mycel::ad {

/// A forward input or sensitivity: a tensor, a tuple of tensors (variadic inputs, multi-output
/// ops) or absent (an optional input not given, or "no gradient").
struct EagerValue {
  std::optional<Tensor> tensor;
  std::vector<Tensor> items;
  bool is_tuple = false;
};

/// The sensitivities of `op`'s inputs for output sensitivity `dout`; the forward output is
/// recomputed. Throws NotSupported when the op has no rule.
std::vector<EagerValue> eager_vjp(const OpDef& op, const std::vector<EagerValue>& inputs,
                                  const Attrs& attrs, const EagerValue& dout);

}  // namespace mycel::ad
