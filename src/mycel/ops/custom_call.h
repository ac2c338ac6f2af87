// Host functions behind the custom_call op: operators whose code the framework does not generate
// (ops.Custom func_type "pyfunc": a Python function; "aot": a C/C++ function in a shared
// library). Each is registered once and named by its table id, as te_call names TE functions.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel {

struct HostFunction {
  std::string name;  // for messages: the user's function
  /// Output metas from input metas; throws (naming the function) on inputs it cannot take.
  std::function<std::vector<TensorMeta>(const std::vector<TensorMeta>&)> infer;
  /// Fills the preallocated outputs from the inputs.
  std::function<void(const std::vector<Tensor>&, std::vector<Tensor>&)> run;
};

/// Adds f to the process-wide table; ids are never reused.
int64_t register_host_function(std::shared_ptr<const HostFunction> f);
/// The function with this id, or a ValueError naming custom_call.
std::shared_ptr<const HostFunction> host_function_at(int64_t id);

}  // namespace mycel
