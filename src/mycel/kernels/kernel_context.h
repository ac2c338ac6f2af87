// What a kernel sees of an op: its signature (names, inputs, attribute schema), the attribute
// values of one call and its tensors. It lives here, below the op registry, so that kernels depend
// on core only; ops/registry.h builds its OpDef on OpSchema.
#pragma once
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/tensor.h"

namespace mycel {

/// Kinds of attribute values.
enum class AttrKind { kBool, kInt, kFloat, kStr, kInts, kFloats, kDType };
const char* attr_kind_name(AttrKind k);

/// An attribute value; monostate means "unset" (a required attribute with no default) or None.
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string,
                               std::vector<int64_t>, std::vector<double>, DType>;

/// One attribute of an op: name, kind, default (monostate: required, or optional if `optional`).
struct AttrDef {
  std::string name;
  AttrKind kind;
  AttrValue default_value;
  bool optional = false;             // may be None; then Attrs::has(name) is false
  std::vector<std::string> aliases;  // other accepted keyword spellings (keepdims for keep_dims)
};

/// One tensor input: `optional` inputs may be None; a `variadic` input takes a tuple/list of
/// tensors.
struct InputDef {
  std::string name;
  bool optional = false;
  bool variadic = false;
};

/// An op's signature: what messages, attribute look-ups and Python wrappers need of it.
struct OpSchema {
  std::string name;        // functional name, as in mindspore.ops: "matmul"
  std::string class_name;  // primitive class, as in mindspore.ops.operations: "MatMul"
  std::string doc;         // one line
  std::vector<InputDef> inputs;
  std::vector<AttrDef> attrs;

  int attr_index(const std::string& name) const;  // -1 if absent (aliases accepted)
};

/// The attribute values of one op call, in the order of the op's schema.
class Attrs {
 public:
  Attrs() = default;
  Attrs(const OpSchema* op, std::vector<AttrValue> values) : op_(op), values_(std::move(values)) {}
  const OpSchema* op() const { return op_; }
  bool has(const std::string& name) const;
  const AttrValue& get(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_str(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  const std::vector<double>& get_floats(const std::string& name) const;
  DType get_dtype(const std::string& name) const;
  const std::vector<AttrValue>& values() const { return values_; }
  std::vector<AttrValue>& values() { return values_; }

 private:
  const OpSchema* op_ = nullptr;
  std::vector<AttrValue> values_;
};

/// What a kernel sees: inputs (absent optional ones undefined), preallocated outputs, attributes.
struct KernelContext {
  const OpSchema& op;
  const std::vector<Tensor>& inputs;
  std::vector<Tensor>& outputs;
  const Attrs& attrs;
  const Tensor& in(size_t i) const { return inputs[i]; }
  Tensor& out(size_t i) const { return outputs[i]; }
};

using KernelFn = std::function<void(const KernelContext&)>;

}  // namespace mycel
