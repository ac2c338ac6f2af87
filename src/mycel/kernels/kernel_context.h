// What a kernel sees of an op: its signature (names, inputs, attribute schema), the attribute
// values of one call and its tensors. It lives here, below the op registry, so that kernels depend
// on core only; ops/registry.h builds its OpDef on OpSchema.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
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

  int attr_index(std::string_view name) const;  // -1 if absent (aliases accepted)
};

/// The attribute values of one op call, in the order of the op's schema.
class Attrs {
 public:
  Attrs() = default;
  Attrs(const OpSchema* op, std::vector<AttrValue> values) : op_(op), values_(std::move(values)) {}
  const OpSchema* op() const { return op_; }
  // Names as string_view: a kernel's c.attrs.get_int("begin_params_axis") built a std::string
  // (a heap allocation past 15 characters) on every launch.
  bool has(std::string_view name) const;
  const AttrValue& get(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;
  const std::string& get_str(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  const std::vector<double>& get_floats(std::string_view name) const;
  DType get_dtype(std::string_view name) const;
  const std::vector<AttrValue>& values() const { return values_; }
  std::vector<AttrValue>& values() { return values_; }

 private:
  const OpSchema* op_ = nullptr;
  std::vector<AttrValue> values_;
};

// ---- What a launch brings besides tensors and attributes: the backend's explicit choices for it
// (fused post-ops, activation layouts) and, in graph mode, the instruction's slot for the state
// the kernel prepares on its first launch and reuses (oneDNN primitives with their memory objects
// and argument arrays, geometry). Decisions travel as data, never through thread-locals
// (STYLE.md 16).

/// One operation applied to a conv2d/matmul float32 result before it is stored.
struct PostOp {
  // max(y, 0); y + v with v of shape (N,) along the last dim; min(max(y, 0), 6) (the lite runtime)
  enum class Kind { kRelu, kAddRow, kRelu6 };
  Kind kind;
  Tensor operand;  // kAddRow: the row vector (set per launch)
};

/// The backend's choices for one kernel launch; kernels set the two result flags.
struct KernelParams {
  std::vector<PostOp> post_ops;  // asked of conv2d/dense/matmul (fuse_post_ops, the lite runtime)
  bool post_applied = false;     // result: the kernel did them (else the caller must, by loops)
  bool src_blocked = false;      // conv2d/pool2d input in the channel-blocked layout
  bool dst_blocked = false;      // conv2d/pool2d output in the channel-blocked layout
  /// The conv's weights never change while their buffer lives (the lite runtime's constants):
  /// the kernel may keep them reordered to the primitive's layout instead of reordering per call.
  bool const_weights = false;
  bool layout_taken = false;  // result: a oneDNN-layout-aware kernel honoured src/dst_blocked
};

/// Base of the state a kernel prepares for one instruction (derived types are the kernels').
struct KernelPrepared {
  virtual ~KernelPrepared() = default;
};

/// The prepared state P in `slot` when `fits` accepts it, else a new one from make(), kept in the
/// slot (graph mode: reused by the next launch) or in `local` (eager: no slot, used once).
template <class P, class Fits, class Make>
P& prepared_state(std::unique_ptr<KernelPrepared>* slot, std::unique_ptr<P>& local, Fits&& fits,
                  Make&& make) {
  if (slot)
    if (auto* p = dynamic_cast<P*>(slot->get()); p && fits(*p)) return *p;
  std::unique_ptr<P> p = make();
  P& r = *p;
  if (slot)
    *slot = std::move(p);
  else
    local = std::move(p);
  return r;
}

/// What a kernel sees: inputs (absent optional ones undefined), preallocated outputs, attributes,
/// and in graph mode the instruction's prepared-state slot and the backend's explicit choices.
struct KernelContext {
  const OpSchema& op;
  const std::vector<Tensor>& inputs;
  std::vector<Tensor>& outputs;
  const Attrs& attrs;
  /// Graph mode: this instruction's slot for prepared state (nullptr: eager, nothing is kept).
  std::unique_ptr<KernelPrepared>* prepared = nullptr;
  /// Post-ops and layouts the backend chose for this launch (nullptr: plain).
  KernelParams* params = nullptr;
  const Tensor& in(size_t i) const { return inputs[i]; }
  Tensor& out(size_t i) const { return outputs[i]; }
};

using KernelFn = std::function<void(const KernelContext&)>;

}  // namespace mycel
