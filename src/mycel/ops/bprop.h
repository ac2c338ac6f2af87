// Backward rules ("bprops") of ops, written next to each op's declaration against an abstract
// builder: ops know no IR, so a rule manipulates opaque GradVar handles and calls ops by name.
// Autodiff (src/mycel/ad) implements the builder by emitting IR nodes into the bprop graph; an
// eager implementation runs the same rule on tensors (op-level gradient checks, tools).
//
// A rule sees the forward inputs, the forward output and the output's sensitivity `dout`, and
// returns one sensitivity per declared input: an empty GradVar means "no gradient" (an integer
// input, an index, an absent optional input) and is turned into zeros where a value is needed.
// Multi-output ops see `out()` and `dout()` as tuples (unused outputs' sensitivities are zeros);
// a variadic input is a tuple and its sensitivity must be a tuple (make_tuple) of the same length.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mycel/ops/registry.h"

namespace mycel {

/// A value of the backward computation, owned by its builder.
class GradVar {
 public:
  GradVar() = default;
  explicit GradVar(int id) : id_(id) {}
  int id() const { return id_; }
  bool defined() const { return id_ >= 0; }
  explicit operator bool() const { return defined(); }

 private:
  int id_ = -1;
};

/// What a bprop rule builds with. Implementations: ad::IrBpropBuilder, ad::EagerBpropBuilder.
class BpropBuilder {
 public:
  virtual ~BpropBuilder() = default;

  // ---- the forward call ----
  virtual const OpDef& op() const = 0;
  virtual const Attrs& attrs() const = 0;
  /// Forward input i (a tuple for a variadic input; undefined for an absent optional input).
  virtual GradVar input(size_t i) = 0;
  virtual GradVar out() = 0;
  virtual GradVar dout() = 0;
  /// Shape and dtype of a forward input, the output (tuple outputs: item k) or dout. Dims unknown
  /// until run time (dynamic batch) are -1. Only defined for values of the forward call.
  virtual TensorMeta meta(const GradVar& v) const = 0;
  virtual TensorMeta out_meta(size_t k) const = 0;
  /// Number of items of a tuple value (variadic inputs, multi-output ops).
  virtual size_t tuple_size(const GradVar& v) const = 0;

  // ---- building ----
  /// Calls a registry op; attributes by name (defaults fill the rest). Multi-output ops give a
  /// tuple.
  virtual GradVar call(const std::string& op, std::vector<GradVar> inputs,
                       const std::map<std::string, AttrValue>& attrs = {}) = 0;
  virtual GradVar constant(const Tensor& t) = 0;
  virtual GradVar make_tuple(std::vector<GradVar> items) = 0;
  virtual GradVar tuple_get(const GradVar& t, size_t i) = 0;

  // ---- conveniences (implemented with call) ----
  GradVar add(GradVar a, GradVar b) { return call("add", {a, b}); }
  GradVar sub(GradVar a, GradVar b) { return call("sub", {a, b}); }
  GradVar mul(GradVar a, GradVar b) { return call("mul", {a, b}); }
  GradVar div(GradVar a, GradVar b) { return call("div", {a, b}); }
  GradVar neg(GradVar a) { return call("neg", {a}); }
  GradVar cast(GradVar a, DType t) { return call("cast", {a}, {{"dtype", t}}); }
  GradVar reshape(GradVar a, const Shape& s) { return call("reshape", {a}, {{"shape", s}}); }
  GradVar zeros_like(GradVar a) { return call("zeros_like", {a}); }
  GradVar ones_like(GradVar a) { return call("ones_like", {a}); }
  /// A 0-d constant of dtype t (it broadcasts against anything).
  GradVar scalar(double v, DType t);
  /// sum over `axes` (keep_dims as given).
  GradVar sum(GradVar a, const std::vector<int64_t>& axes, bool keep_dims = false);
  /// Sums a broadcast result's gradient back to the shape of `like` (a forward value): leading
  /// axes and axes where `like` has size 1 are summed; returns dx unchanged when nothing broadcast.
  GradVar reduce_to(GradVar dx, const GradVar& like, const Shape& dx_shape);
  GradVar reduce_to(GradVar dx, const GradVar& like) {
    return reduce_to(dx, like, out_meta(0).shape);
  }
};

/// A backward rule: returns one sensitivity per input of the op (see the file comment).
using BpropFn = std::function<std::vector<GradVar>(BpropBuilder&)>;

/// The rules, by op name. An op's `grad` policy says "bprop" exactly when it has a rule here (a
/// registry test checks it).
class BpropRegistry {
 public:
  static BpropRegistry& get();
  void add(const std::string& op, BpropFn fn);
  const BpropFn* find(const std::string& op) const;  // nullptr if none

 private:
  std::map<std::string, BpropFn> rules_;
};

/// Registers rules at static-initialization time, next to the ops:
///   MYCEL_REGISTER_BPROPS(binary) { b.add("mul", [](BpropBuilder& g) { ... }); }
#define MYCEL_REGISTER_BPROPS(family)                                      \
  static void mycel_register_##family##_bprops(::mycel::BpropRegistry& b); \
  static const bool mycel_bprops_##family = [] {                           \
    mycel_register_##family##_bprops(::mycel::BpropRegistry::get());       \
    return true;                                                           \
  }();                                                                     \
  static void mycel_register_##family##_bprops(::mycel::BpropRegistry& b)

}  // namespace mycel
