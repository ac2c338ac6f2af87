// Internals of the J transform shared by its files.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::ad::detail {

/// A Constant node (belonging to no graph, like the ones analysis makes).
inline ir::NodePtr cst(ir::ValuePtr v) {
  return std::make_shared<ir::Constant>(nullptr, std::move(v));
}

/// A call of a graph in the original graph: its callee(s) (two for a call through a switch, with
/// the switch condition's forward value), the free variables in the order of the callee vjp's
/// sensitivity tuple, and the arguments a partial application bound before the call's own.
struct CallSite {
  ir::FuncGraph* callee = nullptr;
  ir::FuncGraph* other = nullptr;  // switch: the false branch
  ir::NodePtr cond;                // switch: the condition (forward value)
  std::vector<ir::NodePtr> fvs;
  std::vector<ir::NodePtr> bound;
};

/// One graph being (or having been) transformed: either its vjp graph (parameters, then the
/// output sensitivity; returns (free-variable sensitivities, parameter sensitivities...)) or a
/// forward clone (a nested graph re-homed so its free variables are the enclosing vjp's values).
struct GraphJ {
  ir::FuncGraph* orig = nullptr;
  bool vjp = false;
  bool identity = false;           // a graph not transformed (its nodes are their own image)
  bool primal = false;             // its forward part is the primal forward, not a recomputation
  ir::FuncGraph* graph = nullptr;  // the vjp graph or forward clone
  std::vector<ir::NodePtr> fvs;    // orig's free variables, in sensitivity-tuple order
  std::unordered_map<const ir::Node*, ir::NodePtr> fwd;  // orig node -> its forward value here
  std::unordered_map<const ir::Node*, CallSite> calls;
};

/// True for float tensors and tuples holding some (the values that get sensitivities).
bool differentiable(const ir::AbstractPtr& a);

class Transformer {
 public:
  /// g's vjp graph with this free-variable order (empty: g's own), built on first use where g's
  /// parent's vjp (or forward clone) is being built.
  GraphJ* vjp(ir::FuncGraph* g, const std::vector<ir::NodePtr>& fvs);
  /// f's vjp as the one forward of a gradient: f_vjp(x..., [dout]) = (f's vjp result, f(x...)),
  /// with dout made from the forward value by `seed` when it is given (else a last parameter).
  /// Nothing is recomputed, so effects (collectives, summaries, in-place statistics) happen once.
  /// nullptr for a graph with its own bprop (that one calls the forward itself).
  GraphJ* vjp_primal(ir::FuncGraph* f,
                     const std::function<ir::NodePtr(ir::FuncGraph*, const ir::NodePtr&)>& seed);
  /// The graph to call for g's forward value here: g itself when it has no free variables, else a
  /// clone nested in the vjp graph being built for g's parent.
  ir::FuncGraph* forward(ir::FuncGraph* g);
  /// Makes g's nodes visible, untransformed, to graphs nested in it that are transformed.
  void enter_identity(ir::FuncGraph* g);
  /// The free variables whose sensitivities g's vjp returns: those g and its nested graphs read,
  /// and those of graphs enclosing g read by any graph g calls (transitively) — a weight read
  /// only by a sibling graph g calls still gets its gradient through g.
  const std::vector<ir::NodePtr>& free_variables(ir::FuncGraph* g);

  // Sensitivity arithmetic (nullptr = no sensitivity yet).
  static ir::NodePtr none();
  static ir::NodePtr getitem(ir::FuncGraph* g, const ir::NodePtr& t, size_t i);
  static ir::NodePtr zeros(ir::FuncGraph* g, const ir::NodePtr& fwd, const ir::AbstractPtr& a);
  static ir::NodePtr add(ir::FuncGraph* g, const ir::NodePtr& x, const ir::NodePtr& y,
                         const ir::AbstractPtr& a);
  static ir::NodePtr op_const(const char* name, const std::map<std::string, AttrValue>& attrs = {});

 private:
  ir::FuncGraph* forward_parent(ir::FuncGraph* g);
  ir::ValuePtr recompute_safe(
      const ir::ValuePtr& op) const;  // no in-place updates when recomputing
  GraphJ* owner(const ir::Node* n);
  ir::NodePtr fwd(GraphJ* s, const ir::NodePtr& n);
  ir::NodePtr fwd_apply(GraphJ* s, const ir::NodePtr& n);
  GraphJ* build(ir::FuncGraph* g, const std::vector<ir::NodePtr>& fvs, bool vjp);
  GraphJ* new_state(ir::FuncGraph* g, std::vector<ir::NodePtr> fvs, ir::FuncGraph* graph, bool vjp);
  ir::NodePtr dout_parameter(GraphJ* s);
  void build_bprop(GraphJ* s, const ir::NodePtr& dout);   // bprop_graph.cc
  void build_custom(GraphJ* s, const ir::NodePtr& dout);  // a Cell's own bprop

  using Key = std::tuple<ir::FuncGraph*, std::vector<const ir::Node*>, ir::FuncGraph*, bool>;
  std::map<Key, GraphJ*> memo_;
  std::map<const ir::FuncGraph*, std::vector<ir::NodePtr>> free_variables_;
  std::vector<std::unique_ptr<GraphJ>> states_;
  std::vector<GraphJ*> active_;  // states whose forward part is being built (innermost last)
};

}  // namespace mycel::ad::detail
