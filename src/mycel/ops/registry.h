// The op registry: every primitive is declared once (name, doc, inputs, attribute schema, shape
// inference, CPU kernel, dtypes) and everything else -- eager dispatch, Python wrappers, graph
// mode, autodiff, docs and test tables -- reads it from here and never names an op.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/tensor.h"
#include "mycel/ops/sharding.h"

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

/// One tensor input: `optional` inputs may be None; a `variadic` input takes a tuple/list of tensors.
struct InputDef {
  std::string name;
  bool optional = false;
  bool variadic = false;
};

struct OpDef;

/// The attribute values of one op call, in the order of the op's schema.
class Attrs {
 public:
  Attrs() = default;
  Attrs(const OpDef* op, std::vector<AttrValue> values) : op_(op), values_(std::move(values)) {}
  const OpDef* op() const { return op_; }
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
  const OpDef* op_ = nullptr;
  std::vector<AttrValue> values_;
};

/// What shape inference sees: input metas (absent optional inputs are nullptr) and attributes.
struct InferContext {
  const OpDef& op;
  const std::vector<const TensorMeta*>& inputs;
  const Attrs& attrs;
  const TensorMeta& in(size_t i) const { return *inputs.at(i); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  size_t num_inputs() const { return inputs.size(); }
};

/// What a kernel sees: inputs (absent optional ones undefined), preallocated outputs, attributes.
struct KernelContext {
  const OpDef& op;
  const std::vector<Tensor>& inputs;
  std::vector<Tensor>& outputs;
  const Attrs& attrs;
  const Tensor& in(size_t i) const { return inputs[i]; }
  Tensor& out(size_t i) const { return outputs[i]; }
};

using InferFn = std::function<std::vector<TensorMeta>(const InferContext&)>;
using KernelFn = std::function<void(const KernelContext&)>;
/// Optional zero-copy path for reshape-like ops in eager mode: returns the output as a view.
using ViewFn = std::function<Tensor(const Tensor& input, const TensorMeta& out)>;

/// Everything the system knows about one primitive.
struct OpDef {
  std::string name;        // functional name, as in mindspore.ops: "matmul"
  std::string class_name;  // primitive class, as in mindspore.ops.operations: "MatMul"
  std::string doc;         // one line
  std::vector<InputDef> inputs;
  std::vector<AttrDef> attrs;
  InferFn infer;
  KernelFn kernel;                // CPU kernel
  std::vector<DType> dtypes;      // dtypes of input `dtype_input` the kernel supports
  int dtype_input = 0;            // which input's dtype selects the kernel (ops with inputs)
  bool promote_inputs = false;    // cast non-optional inputs to their promoted dtype first
  ViewFn view;                    // set for ops whose eager result may alias the input
  std::vector<int> mutated_inputs;  // inputs the kernel updates in place (running stats)
  bool random = false;            // draws from the global generator
  bool tuple_output = false;      // returns a tuple even with one output (split, as MindSpore)
  /// Output element i reads only input elements i (after broadcasting): the memory planner may
  /// write the output over a dying input of the same shape and dtype.
  bool elementwise = false;
  bool effect = false;            // talks to other processes (collectives): never folded, merged,
                                  // dropped or reordered, so every rank runs the same sequence
  std::string grad = "todo";      // "bprop", "none" (not differentiable), or "todo" until AD lands
  /// Auto-parallel: valid input strategies -> input/output layouts and the comms inside
  /// (src/mycel/ops/sharding.h). Empty: the elementwise rule if `elementwise`, else replicated only.
  shard::ShardRule shard;
  shard::CostFn cost;             // work per device under a plan; empty: a generic estimate

  int attr_index(const std::string& name) const;  // -1 if absent (aliases accepted)
  bool supports(DType t) const;
};

/// The global table of ops.
class Registry {
 public:
  static Registry& get();
  /// Adds an op; throws if the name or class name is taken or the definition is incomplete.
  void add(OpDef def);
  const OpDef* find(const std::string& name) const;  // nullptr if absent
  const OpDef& at(const std::string& name) const;    // throws ValueError if absent
  const std::vector<const OpDef*>& ops() const { return order_; }

 private:
  std::map<std::string, std::unique_ptr<OpDef>> by_name_;
  std::vector<const OpDef*> order_;
};

/// op.infer, then the central size check every inferred output passes before anything is
/// allocated (eager dispatch, analysis and plan-time shapes alike): no negative dimension, and an
/// element count whose byte size fits (at most 2**56 elements), else an error naming the op.
std::vector<TensorMeta> infer_checked(const OpDef& op, const InferContext& ctx);

/// An OpDef from its usual parts (families wrap it to fill their common fields).
OpDef make_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
              std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel, std::vector<DType> dtypes,
              std::string grad = "todo");
/// A required (default monostate) or defaulted attribute, with optional alias spellings.
AttrDef attr(std::string name, AttrKind kind, AttrValue def = {}, std::vector<std::string> aliases = {});

/// Fills defaults, checks kinds and required attributes; `given` is indexed by schema position.
Attrs make_attrs(const OpDef& op, std::vector<AttrValue> given);
/// Same, from name -> value pairs (C++ callers and tests).
Attrs make_attrs(const OpDef& op, const std::map<std::string, AttrValue>& named);

/// Eager execution: promotion, inference, kernel dtype check, output allocation, kernel.
std::vector<Tensor> call_op(const OpDef& op, std::vector<Tensor> inputs, const Attrs& attrs);
/// Convenience for C++: call_op by name with named attributes.
std::vector<Tensor> call_op(const std::string& name, std::vector<Tensor> inputs,
                            const std::map<std::string, AttrValue>& attrs = {});

/// Registers ops at static-initialization time: MYCEL_REGISTER_OPS(unary) { add(OpDef{...}); }
#define MYCEL_REGISTER_OPS(family)                                          \
  static void mycel_register_##family##_ops(::mycel::Registry& r);          \
  static const bool mycel_registered_##family = [] {                        \
    mycel_register_##family##_ops(::mycel::Registry::get());                \
    return true;                                                            \
  }();                                                                      \
  static void mycel_register_##family##_ops(::mycel::Registry& r)

// Dtype lists for OpDef::dtypes.
std::vector<DType> all_dtypes();
std::vector<DType> numeric_dtypes();    // all but bool
std::vector<DType> signed_dtypes();     // int8, int16, int32, int64 and floats
std::vector<DType> float_dtypes();      // float16, bfloat16, float32, float64
std::vector<DType> integer_dtypes();    // int8 .. int64 and uint8
/// all_dtypes() and the types only some ops take: uint16/32/64, complex64/128 (dtype.h).
std::vector<DType> every_dtype();

}  // namespace mycel
