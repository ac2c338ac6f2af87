// Compile-time values held by Constant nodes: Python-level constants (None, bool, int, float, str,
// tuples, lists, dicts with constant keys, dtypes), tensors, primitives and graphs. Values are
// immutable and shared; equality and hashing are structural (CSE and the compile cache use them).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/ir/prim.h"
#include "mycel/ops/registry.h"

namespace mycel::ir {

class FuncGraph;
class Value;
using ValuePtr = std::shared_ptr<const Value>;

// kExternal: an object of the host language the IR cannot inspect (the frontend's Python objects,
// evaluated by analysis at compile time when all the arguments of a call of it are constants).
// kGradOp: a gradient transformation (GradOperation / grad / value_and_grad) used inside a graph.
// kVmapOp: a vmap transformation (its in_axes / out_axes) used inside a graph.
enum class ValueKind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kStr,
  kDType,
  kTensor,
  kTuple,
  kList,
  kDict,
  kOp,
  kPrim,
  kGraph,
  kExternal,
  kGradOp,
  kVmapOp
};

/// Base of all values.
class Value {
 public:
  explicit Value(ValueKind k) : kind_(k) {}
  virtual ~Value() = default;
  ValueKind kind() const { return kind_; }
  /// Text form used by the IR printer ("3", "(1, 2)", "f32[2, 3]{...}", "add", "@f").
  virtual std::string repr() const = 0;
  /// Structural equality (tensors compare by identity of storage, never by content).
  virtual bool equals(const Value& o) const = 0;
  virtual size_t hash() const = 0;

 private:
  ValueKind kind_;
};

/// Python None.
class NoneValue : public Value {
 public:
  NoneValue() : Value(ValueKind::kNone) {}
  std::string repr() const override { return "None"; }
  bool equals(const Value& o) const override { return o.kind() == ValueKind::kNone; }
  size_t hash() const override { return 0x4e6f6e65; }
};

/// bool, int, float or str.
template <class T, ValueKind K>
class ScalarValue : public Value {
 public:
  explicit ScalarValue(T v) : Value(K), v_(std::move(v)) {}
  const T& value() const { return v_; }
  std::string repr() const override;
  bool equals(const Value& o) const override {
    return o.kind() == K && static_cast<const ScalarValue&>(o).v_ == v_;
  }
  size_t hash() const override { return std::hash<T>()(v_) ^ static_cast<size_t>(K); }

 private:
  T v_;
};
using BoolValue = ScalarValue<bool, ValueKind::kBool>;
using IntValue = ScalarValue<int64_t, ValueKind::kInt>;
using FloatValue = ScalarValue<double, ValueKind::kFloat>;
using StrValue = ScalarValue<std::string, ValueKind::kStr>;
using DTypeValue = ScalarValue<DType, ValueKind::kDType>;

/// A constant tensor (weights bound at compile time, folded constants).
class TensorValue : public Value {
 public:
  explicit TensorValue(Tensor t) : Value(ValueKind::kTensor), t_(std::move(t)) {}
  const Tensor& tensor() const { return t_; }
  std::string repr() const override;
  bool equals(const Value& o) const override;
  size_t hash() const override;

 private:
  Tensor t_;
};

/// A tuple or list of values (lists are immutable in the IR, like MindSpore's graph mode).
class SequenceValue : public Value {
 public:
  SequenceValue(ValueKind k, std::vector<ValuePtr> items) : Value(k), items_(std::move(items)) {}
  const std::vector<ValuePtr>& items() const { return items_; }
  std::string repr() const override;
  bool equals(const Value& o) const override;
  size_t hash() const override;

 private:
  std::vector<ValuePtr> items_;
};

/// A dict with constant keys, in insertion order.
class DictValue : public Value {
 public:
  explicit DictValue(std::vector<std::pair<ValuePtr, ValuePtr>> items)
      : Value(ValueKind::kDict), items_(std::move(items)) {}
  const std::vector<std::pair<ValuePtr, ValuePtr>>& items() const { return items_; }
  std::string repr() const override;
  bool equals(const Value& o) const override;
  size_t hash() const override;

 private:
  std::vector<std::pair<ValuePtr, ValuePtr>> items_;
};

/// A registry op with its attributes fixed (the callee of an op application).
class OpValue : public Value {
 public:
  OpValue(const OpDef* op, Attrs attrs)
      : Value(ValueKind::kOp), op_(op), attrs_(std::move(attrs)) {}
  const OpDef& op() const { return *op_; }
  const Attrs& attrs() const { return attrs_; }
  std::string repr() const override;
  bool equals(const Value& o) const override;
  size_t hash() const override;

 private:
  const OpDef* op_;
  Attrs attrs_;
};

/// A graph primitive: structure and control (make_tuple, switch, partial, scalar arithmetic).
class PrimValue : public Value {
 public:
  explicit PrimValue(Prim p) : Value(ValueKind::kPrim), p_(p) {}
  Prim prim() const { return p_; }
  std::string repr() const override { return prim_name(p_); }
  bool equals(const Value& o) const override {
    return o.kind() == ValueKind::kPrim && static_cast<const PrimValue&>(o).p_ == p_;
  }
  size_t hash() const override { return static_cast<size_t>(p_) * 0x9E3779B9u; }

 private:
  Prim p_;
};

/// A graph used as a value (a function). Closures are graphs with free variables: their
/// environment is the enclosing graph's nodes, so a graph value is only meaningful inside it.
/// Graphs are owned by their Module (recursion would make shared ownership cyclic).
class GraphValue : public Value {
 public:
  explicit GraphValue(FuncGraph* g) : Value(ValueKind::kGraph), g_(g) {}
  FuncGraph* graph() const { return g_; }
  std::string repr() const override;
  bool equals(const Value& o) const override {
    return o.kind() == ValueKind::kGraph && static_cast<const GraphValue&>(o).g_ == g_;
  }
  size_t hash() const override { return std::hash<const void*>()(g_); }

 private:
  FuncGraph* g_;
};

/// What a gradient function returns, as MindSpore's grad / value_and_grad / GradOperation define
/// it.
struct GradFlags {
  std::vector<int> positions;    // input positions to differentiate
  bool all_positions = false;    // every input (GradOperation(get_all=True)); positions ignored
  bool positions_tuple = false;  // a tuple even for one position
  bool with_weights = false;     // weight gradients (a tuple) after the input gradients
  bool return_value = false;     // (value, grads)
  bool has_aux = false;          // fn returns (out, aux...): only out is differentiated
  bool sens_param = false;       // the last argument is the output sensitivity
  std::string repr() const;
  bool operator==(const GradFlags&) const = default;
};

/// A gradient transformation used inside a graph: `op(fn, weights)` is the gradient function of
/// fn, which analysis specializes and ad expands into a gradient graph (ad::expand_grad_calls).
class GradOpValue : public Value {
 public:
  explicit GradOpValue(GradFlags f) : Value(ValueKind::kGradOp), f_(std::move(f)) {}
  const GradFlags& flags() const { return f_; }
  std::string repr() const override { return f_.repr(); }
  bool equals(const Value& o) const override {
    return o.kind() == ValueKind::kGradOp && static_cast<const GradOpValue&>(o).f_ == f_;
  }
  size_t hash() const override { return std::hash<std::string>()(f_.repr()); }

 private:
  GradFlags f_;
};

/// Where the batch is in a value (vmap's in_axes / out_axes): `mapped` and an axis for a whole
/// value (every tensor in it), or one entry per item of a tuple. Unmapped is None.
struct BatchAxes {
  bool leaf = true;
  bool mapped = false;
  int64_t axis = 0;              // may be negative until normalized against a shape
  std::vector<BatchAxes> items;  // when !leaf
  static BatchAxes none() { return {}; }
  static BatchAxes at(int64_t a) { return {true, true, a, {}}; }
  static BatchAxes tuple(std::vector<BatchAxes> items) {
    return {false, false, 0, std::move(items)};
  }
  std::string repr() const;
  bool operator==(const BatchAxes&) const = default;
};

/// A vmap transformation used inside a graph: `op(fn)` is fn mapped over in_axes, which analysis
/// types per call and ad::expand_vmap_calls rewrites into a batched graph (ad/vmap.h).
class VmapOpValue : public Value {
 public:
  VmapOpValue(BatchAxes in, BatchAxes out)
      : Value(ValueKind::kVmapOp), in_(std::move(in)), out_(std::move(out)) {}
  const BatchAxes& in_axes() const { return in_; }
  const BatchAxes& out_axes() const { return out_; }
  std::string repr() const override {
    return "vmap[in_axes=" + in_.repr() + " out_axes=" + out_.repr() + "]";
  }
  bool equals(const Value& o) const override {
    return o.kind() == ValueKind::kVmapOp && static_cast<const VmapOpValue&>(o).in_ == in_ &&
           static_cast<const VmapOpValue&>(o).out_ == out_;
  }
  size_t hash() const override { return std::hash<std::string>()(repr()); }

 private:
  BatchAxes in_, out_;
};

// Constructors.
ValuePtr none();
ValuePtr boolean(bool v);
ValuePtr integer(int64_t v);
ValuePtr floating(double v);
ValuePtr string(std::string v);
ValuePtr dtype_value(DType t);
ValuePtr tensor_value(Tensor t);
ValuePtr tuple(std::vector<ValuePtr> items);
ValuePtr list(std::vector<ValuePtr> items);
ValuePtr op_value(const OpDef* op, Attrs attrs);
ValuePtr prim_value(Prim p);
ValuePtr graph_value(FuncGraph* g);

/// Equality and hashing through pointers, for unordered containers keyed by values.
struct ValueHash {
  size_t operator()(const ValuePtr& v) const { return v ? v->hash() : 0; }
};
struct ValueEq {
  bool operator()(const ValuePtr& a, const ValuePtr& b) const {
    return a == b || (a && b && a->equals(*b));
  }
};

}  // namespace mycel::ir
