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
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/kernels/kernel_context.h"
#include "mycel/ops/sharding.h"

namespace mycel {

struct OpDef;

/// What shape inference sees: input metas (absent optional inputs are nullptr) and attributes.
struct InferContext {
  const OpDef& op;
  const std::vector<const TensorMeta*>& inputs;
  const Attrs& attrs;
  const TensorMeta& in(size_t i) const { return *inputs.at(i); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  size_t num_inputs() const { return inputs.size(); }
};

using InferFn = std::function<std::vector<TensorMeta>(const InferContext&)>;
/// Optional zero-copy path for reshape-like ops in eager mode: returns the output as a view.
using ViewFn = std::function<Tensor(const Tensor& input, const TensorMeta& out)>;

/// The Python operator an op spells in graph mode (+, ==, t[i]): when its operands are not
/// tensors (scalars, tuples, compile-time values) analysis gives them Python's own meaning.
enum class PyOperator : uint8_t {
  kNone,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kGetItem
};

/// A creation op that fills its `shape` attribute with one value (zeros: 0, ones: 1, fill: its
/// `value_attr`): graph mode may then take sizes from a dynamic dim x.shape[k] at run time.
struct FillTrait {
  bool on = false;
  double value = 0;
  std::string value_attr;  // attribute holding the value; empty: `value`
};

/// Post-ops (bit flags) an op's oneDNN kernel can apply after it: relu; the add of a row vector
/// (bias) after a matmul; relu6 as oneDNN's clip(0, 6); and kPostChannelAffine, batch_norm in
/// inference mode (`is_training` false): y = x * s + t per channel (dim 1), s and t from its
/// inputs 1-4 (scale, bias, mean, variance) and `epsilon`, which a convolution absorbs by
/// folding it into its weights and bias (backend/fold_batch_norm.cc).
enum PostOpBits : uint8_t {
  kPostRelu = 1,
  kPostAddRow = 2,
  kPostRelu6 = 4,
  kPostChannelAffine = 8
};
/// Windowed ops the layout step and conv+pool fusion know how to rewrite.
enum class WindowKind : uint8_t { kNone, kConv, kMaxPool, kAvgPool };

/// A reduction over "axis" / "keep_dims" attributes that TE fusion computes with the chain
/// feeding it: a sum, a sum divided by the reduced element count, or a maximum / minimum (NaN
/// propagating, as the reduce kernels).
enum class ReduceFusion : uint8_t { kNone, kSum, kMean, kMax, kMin };

/// A row op over attribute `axis` that fuse_heads_softmax.cc may run on a product's rows while
/// they are in cache: softmax(x), or softmax's gradient (y, dy) -> y * (dy - sum(y * dy)).
enum class SoftmaxRows : uint8_t { kNone, kForward, kGrad };

/// How an op's kernel takes bf16 activations stored channels-last (NHWC) by graph mode's layout
/// step (assign_layouts.cc), told by the launch's KernelParams. kSame: the activation inputs and
/// outputs (BackendTraits::nhwc_inputs / nhwc_outputs) are all NHWC when src_blocked (batch norm
/// and its gradient, the mean's broadcast back). kConvGrad: the convolution gradients, each
/// tensor free: dy (input 0) NHWC when dst_blocked, x (input 1) or dx (output 0) when src_blocked.
enum class NhwcKind : uint8_t { kNone, kSame, kConvGrad };

/// What the graph backend's rewrites (backend/fuse_*.cc, assign_layouts.cc) may do with an op.
struct BackendTraits {
  uint8_t accepts_post_ops = 0;  // PostOpBits its oneDNN kernel can apply after it
  uint8_t as_post_op = 0;        // the PostOpBits this op becomes after such a producer
  WindowKind window = WindowKind::kNone;
  bool absorbs_max_pool = false;   // the direct conv kernel may pool 2x2 in the same pass
  bool keeps_zero = false;         // elementwise with f(0, ..) = 0: blocked padding stays zero
  bool fuses_elementwise = false;  // a step of fused float32 chains, as `ew`
  cpu::EwOp ew = cpu::EwOp::kAdd;
  ReduceFusion reduce = ReduceFusion::kNone;  // a chain feeding it may fuse (fuse_reduce_te.cc)
  const OpDef* unfused = nullptr;             // a fused op: the registry op whose geometry it has
  uint8_t fused_post_ops = 0;                 // a fused op: the PostOpBits folded in
  bool plain_matmul = false;   // x @ y (transpose_a/b, batched over leading dims): matmul_chain
                               // may replace a 2-d one, fold_head_transposes a 3-d bf16 one
  bool permutes_axes = false;  // y is x with its axes permuted by `perm` (fold_head_transposes.cc)
  // A layer norm backward (dout, x, gamma, mean, rstd, ...) whose bf16 kernel may read dout as
  // the sum of two addends (fuse_add_norm_grad.cc).
  bool norm_grad_sums_dout = false;
  SoftmaxRows softmax_rows = SoftmaxRows::kNone;
  NhwcKind nhwc = NhwcKind::kNone;
  uint8_t nhwc_inputs = 0, nhwc_outputs = 0;  // bit i: input / output i is a 4-d activation
  uint8_t shape_only_inputs = 0;  // bit i: input i is read for its shape only (any layout will do)
};

/// Where graph mode's scheduler places an op's kernel (backend/place_split.cc). The split
/// collectives mark theirs: a kEarly kernel (all_reduce_start) runs as soon as its inputs exist,
/// a kLate one (all_reduce_wait) just before the first use of its result, so the work scheduled
/// between them overlaps the communication.
enum class Placement : uint8_t { kAny, kEarly, kLate };

/// Everything the system knows about one primitive (OpSchema: name, class, doc, inputs,
/// attributes).
struct OpDef : OpSchema {
  InferFn infer;
  KernelFn kernel;                  // CPU kernel
  std::vector<DType> dtypes;        // dtypes of input `dtype_input` the kernel supports
  int dtype_input = 0;              // which input's dtype selects the kernel (ops with inputs)
  bool promote_inputs = false;      // cast non-optional inputs to their promoted dtype first
  ViewFn view;                      // set for ops whose eager result may alias the input
  std::vector<int> mutated_inputs;  // inputs the kernel updates in place (running stats)
  bool random = false;              // draws from the global generator
  bool tuple_output = false;        // returns a tuple even with one output (split, as MindSpore)
  /// Output element i reads only input elements i (after broadcasting): the memory planner may
  /// write the output over a dying input of the same shape and dtype.
  bool elementwise = false;
  bool effect = false;  // talks to other processes (collectives): never folded, merged,
                        // dropped or reordered, so every rank runs the same sequence
  /// Exists only for what it records (summary ops; implies `effect`): its output is a
  /// placeholder, so a gradient's recomputed forward skips it and it records once per step,
  /// and it is not a collective (a collective's output is a value the recomputation needs).
  bool record_only = false;
  Placement placement = Placement::kAny;
  std::string grad = "todo";  // "bprop", "none" (not differentiable), or "todo" until AD lands
  /// Auto-parallel: valid input strategies -> input/output layouts and the comms inside
  /// (src/mycel/ops/sharding.h). Empty: the elementwise rule if `elementwise`, else replicated
  /// only.
  shard::ShardRule shard;
  shard::CostFn cost;  // work per device under a plan; empty: a generic estimate
  PyOperator py_operator = PyOperator::kNone;
  FillTrait fill;
  /// Attribute holding an output shape that graph mode may compute from x's dynamic dims
  /// (reshape's `shape`); empty: none.
  std::string dynamic_shape_attr;
  BackendTraits backend;

  bool supports(DType t) const;
};

/// `def` with traits applied: r.add(with_traits(make_op(...), py_op(PyOperator::kAdd), ...)).
template <class... F>
OpDef with_traits(OpDef def, F... set) {
  (set(def), ...);
  return def;
}
/// Trait setters for with_traits.
inline auto py_op(PyOperator o) {
  return [o](OpDef& d) { d.py_operator = o; };
}
inline auto ew_step(cpu::EwOp e, bool keeps_zero = false) {
  return [e, keeps_zero](OpDef& d) {
    d.backend.fuses_elementwise = true;
    d.backend.ew = e;
    d.backend.keeps_zero = keeps_zero;
  };
}
inline auto reduce_fusion(ReduceFusion r) {
  return [r](OpDef& d) { d.backend.reduce = r; };
}
inline auto as_post_op(uint8_t bits) {
  return [bits](OpDef& d) { d.backend.as_post_op = bits; };
}
constexpr bool kKeepsZero = true;

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
AttrDef attr(std::string name, AttrKind kind, AttrValue def = {},
             std::vector<std::string> aliases = {});

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
#define MYCEL_REGISTER_OPS(family)                                 \
  static void mycel_register_##family##_ops(::mycel::Registry& r); \
  static const bool mycel_registered_##family = [] {               \
    mycel_register_##family##_ops(::mycel::Registry::get());       \
    return true;                                                   \
  }();                                                             \
  static void mycel_register_##family##_ops(::mycel::Registry& r)

// Dtype lists for OpDef::dtypes.
std::vector<DType> all_dtypes();
std::vector<DType> numeric_dtypes();  // all but bool
std::vector<DType> signed_dtypes();   // int8, int16, int32, int64 and floats
std::vector<DType> float_dtypes();    // float16, bfloat16, float32, float64
std::vector<DType> integer_dtypes();  // int8 .. int64 and uint8
/// all_dtypes() and the types only some ops take: uint16/32/64, complex64/128 (dtype.h).
std::vector<DType> every_dtype();

}  // namespace mycel
