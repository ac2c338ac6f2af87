// IR nodes in A-normal form: Apply (a call: inputs[0] is the callee, which may be any node, so
// functions are values), Constant and Parameter. Every node remembers the Python source it came
// from, for error messages.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mycel/ir/abstract.h"
#include "mycel/ir/value.h"

namespace mycel::ir {

struct InlinedFrame;

/// Where a node came from in the user's Python source.
struct SourceLoc {
  std::shared_ptr<const std::string> file;  // shared: many nodes, one file name
  int line = 0;                             // 1-based; 0 = unknown
  int col = 0;                              // 0-based, as Python's ast
  std::shared_ptr<const std::string> text;  // the source line, for messages
  /// Set on a node that inlining copied into a caller: the call it came through. That call's own
  /// loc continues the chain, so an error at run time can show every call that led to a library
  /// line, as a Python traceback would (the IR keeps no call frames once calls are inlined).
  std::shared_ptr<const InlinedFrame> inlined_at;
  bool known() const { return line > 0; }
  /// "file.py:12:4" or "<unknown>".
  std::string str() const;
  /// "file.py:12: text" (the source line stripped), or "" when unknown.
  std::string line_str() const;
};

/// One call a node was inlined through: the call's site, and the Cell the call reached (its
/// label, "self.layers[1] (Block<>)"; null when the callee is a plain function).
struct InlinedFrame {
  SourceLoc site;
  std::shared_ptr<const std::string> callee;
};

/// The calls that led to `loc`, innermost first, as traceback lines: "called from file:line: text",
/// each followed by "  <Cell label>" when the call reached a Cell. Empty when loc was not inlined.
/// Calls of branches and loop bodies are not frames (is_control_flow_line).
std::vector<std::string> inlined_callers(const SourceLoc& loc);

/// True when loc's source line is a control-flow statement (if/elif/else/while/for/assert/with/
/// try/except): a call made there is a branch or loop body, part of the same Python frame.
bool is_control_flow_line(const SourceLoc& loc);

enum class NodeKind { kApply, kConstant, kParameter };

class FuncGraph;
class Node;
using NodePtr = std::shared_ptr<Node>;

/// Base of all nodes. A node belongs to one graph (Constants may belong to none).
class Node {
 public:
  Node(NodeKind k, FuncGraph* g) : kind_(k), graph_(g) {}
  virtual ~Node() = default;
  NodeKind kind() const { return kind_; }
  bool is_apply() const { return kind_ == NodeKind::kApply; }
  bool is_constant() const { return kind_ == NodeKind::kConstant; }
  bool is_parameter() const { return kind_ == NodeKind::kParameter; }
  FuncGraph* graph() const { return graph_; }
  void set_graph(FuncGraph* g) { graph_ = g; }
  const SourceLoc& loc() const { return loc_; }
  void set_loc(SourceLoc l) { loc_ = std::move(l); }
  /// Debug name (the Python variable it was bound to), printed as a comment.
  const std::string& debug_name() const { return debug_name_; }
  void set_debug_name(std::string n) { debug_name_ = std::move(n); }
  /// What analysis inferred (nullptr before analysis).
  const AbstractPtr& abstract() const { return abstract_; }
  void set_abstract(AbstractPtr a) { abstract_ = std::move(a); }

 private:
  NodeKind kind_;
  FuncGraph* graph_;
  SourceLoc loc_;
  std::string debug_name_;
  AbstractPtr abstract_;
};

/// A call: inputs()[0] is the callee (a Constant holding an op, prim or graph, or any node that
/// evaluates to a function), inputs()[1..] are the arguments.
class Apply : public Node {
 public:
  Apply(FuncGraph* g, std::vector<NodePtr> inputs)
      : Node(NodeKind::kApply, g), inputs_(std::move(inputs)) {}
  const std::vector<NodePtr>& inputs() const { return inputs_; }
  const NodePtr& callee() const { return inputs_[0]; }
  const NodePtr& arg(size_t i) const { return inputs_[i + 1]; }
  size_t num_args() const { return inputs_.size() - 1; }
  void set_input(size_t i, NodePtr n) { inputs_[i] = std::move(n); }
  void set_inputs(std::vector<NodePtr> in) { inputs_ = std::move(in); }

 private:
  std::vector<NodePtr> inputs_;
};

/// A compile-time value.
class Constant : public Node {
 public:
  Constant(FuncGraph* g, ValuePtr v) : Node(NodeKind::kConstant, g), value_(std::move(v)) {}
  const ValuePtr& value() const { return value_; }

 private:
  ValuePtr value_;
};

/// A graph parameter. A Cell's weights are parameters too, bound to their tensors (`bound`).
class Parameter : public Node {
 public:
  Parameter(FuncGraph* g, std::string name)
      : Node(NodeKind::kParameter, g), name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  const Tensor& bound() const { return bound_; }
  void bind(Tensor t) { bound_ = std::move(t); }
  bool is_weight() const { return bound_.defined(); }

 private:
  std::string name_;
  Tensor bound_;
};

inline Apply* as_apply(const NodePtr& n) {
  return n && n->is_apply() ? static_cast<Apply*>(n.get()) : nullptr;
}
inline Constant* as_constant(const NodePtr& n) {
  return n && n->is_constant() ? static_cast<Constant*>(n.get()) : nullptr;
}
inline Parameter* as_parameter(const NodePtr& n) {
  return n && n->is_parameter() ? static_cast<Parameter*>(n.get()) : nullptr;
}
/// The graph primitive a node's callee is, if it is a constant graph primitive.
/// True for a Constant holding primitive p.
bool is_prim_value(const NodePtr& n, Prim p);
bool is_prim_call(const NodePtr& n, Prim p);
/// The graph a Constant holds, or nullptr.
FuncGraph* constant_graph(const NodePtr& n);

}  // namespace mycel::ir
