// The specializer's engine: contexts (one per graph, signature and enclosing context), demand-
// driven evaluation of nodes into the context's clone, calls with memoization, recursion (a
// fixpoint on the output abstract) and widening of changing constants.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "mycel/analysis/abstract_util.h"
#include "mycel/analysis/analysis.h"

namespace mycel::analysis::detail {

/// One specialization of a graph: its signature, where its free variables live, its clone.
struct Context {
  ir::FuncGraph* graph = nullptr;  // the original graph
  Context* env = nullptr;          // the context of graph->parent() (nullptr at top level)
  std::vector<ir::AbstractPtr> args;
  std::string key;
  ir::FuncGraph* clone = nullptr;
  std::unordered_map<const ir::Node*, ir::NodePtr> map;  // original node -> specialized node
  ir::AbstractPtr output;                                // nullptr while not known
  bool in_progress = false;
  bool assumed = false;   // a recursive call used `output` before it was final
  int dynamic_calls = 0;  // calls through run-time switches now being analysed
};

class Engine {
 public:
  Engine(ir::Module& m, const SpecializeOptions& o, SpecializeStats* s)
      : module_(m), opts_(o), stats_(s) {}

  /// Specializes the entry graph (its own top-level context) and finalizes every clone.
  ir::FuncGraph* run(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& args);

  // ---- used by the op and primitive evaluators ----
  /// A new Constant node holding v, with its abstract.
  ir::NodePtr constant(Context* ctx, const ir::ValuePtr& v);
  /// A new Apply in ctx's clone with the given abstract and the original node's location.
  ir::NodePtr emit(Context* ctx, std::vector<ir::NodePtr> inputs, ir::AbstractPtr abs,
                   const ir::SourceLoc& loc);
  /// True while the node being evaluated is reached only through a switch on a run-time
  /// condition (a branch, a data-dependent loop): a `raise` there waits for the Program to run.
  bool in_runtime_branch() const;
  /// Calls a function abstract with argument nodes (already specialized); returns the call node.
  /// `bound`: the parser (or the caller) bound args to the callee's parameters, one each; else
  /// they are positional arguments, bound here as Python would (bind_positional).
  ir::NodePtr call(Context* ctx, const ir::NodePtr& callee, const std::vector<ir::NodePtr>& args,
                   const ir::SourceLoc& loc, bool bound = false);
  /// Positional arguments of a call bound to the callee graph's parameters: missing trailing
  /// ones get its compile-time defaults; where it has *args or **kwargs, the extra arguments
  /// become *args' tuple and **kwargs an empty dict.
  std::vector<ir::NodePtr> bind_positional(Context* ctx, const ir::AbstractPtr& fa,
                                           const std::vector<ir::NodePtr>& args,
                                           const ir::SourceLoc& loc);
  /// grad_op(fn[, weights]): a gradient function (eval_grad.cc).
  ir::NodePtr make_grad_fn(Context* ctx, const ir::NodePtr& callee, const ir::GradOpValue& op,
                           const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);
  // ---- records (eval_record.cc) ----
  /// make_record / record_attr / record_method, and call_method on a record; nullptr when
  /// `callee` is none of these (or the receiver is a compile-time Python value).
  ir::NodePtr record_call(Context* ctx, const ir::Value& callee,
                          const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);
  /// An op with a record input: the record's dunder method (x + y -> x.__add__(y)), or an error.
  ir::NodePtr record_op(Context* ctx, const OpDef& op, const std::vector<ir::NodePtr>& args,
                        const ir::SourceLoc& loc);
  /// shape / rank / dtype of a record: its attribute of that name; nullptr otherwise.
  ir::NodePtr record_prim(Context* ctx, ir::Prim p, const std::vector<ir::NodePtr>& args,
                          const ir::SourceLoc& loc);
  ir::NodePtr method_node(Context* ctx, ir::FuncGraph* g);
  ir::NodePtr record_field(Context* ctx, const ir::NodePtr& rec, size_t k,
                           const ir::SourceLoc& loc);
  ir::NodePtr record_attr(Context* ctx, const ir::NodePtr& rec, const std::string& name,
                          const ir::SourceLoc& loc);
  ir::NodePtr record_method(Context* ctx, const ir::NodePtr& rec, const std::string& name,
                            const std::vector<std::string>& keywords,
                            const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);
  /// A call of a gradient function: specializes the differentiated function (eval_grad.cc).
  ir::NodePtr call_grad_fn(Context* ctx, const ir::NodePtr& callee,
                           const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);

 private:
  ir::NodePtr get(Context* ctx, const ir::NodePtr& orig);
  ir::NodePtr eval_apply(Context* ctx, const ir::Apply& a);
  ir::AbstractPtr grad_output(Context* ctx, const GradFnAbs& gf, const ir::NodePtr& made,
                              std::vector<ir::AbstractPtr> args, const ir::SourceLoc& loc);
  ir::NodePtr make_vmap_fn(Context* ctx, const ir::NodePtr& callee,
                           const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);
  ir::NodePtr call_vmap_fn(Context* ctx, const ir::NodePtr& callee,
                           const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);
  ir::AbstractPtr vmap_output(Context* ctx, const VmapFnAbs& vf, const ir::NodePtr& made,
                              const std::vector<ir::AbstractPtr>& args, const ir::SourceLoc& loc);
  ir::AbstractPtr call_graph(Context* ctx, const FnAbs& fn,
                             const std::vector<ir::AbstractPtr>& args, const ir::SourceLoc& loc,
                             ir::FuncGraph** spec);
  Context* find_env(Context* ctx, ir::FuncGraph* parent, const ir::SourceLoc& loc);
  void analyse(Context* ctx);
  void finalize(ir::FuncGraph* root);

  ir::Module& module_;
  SpecializeOptions opts_;
  SpecializeStats* stats_;
  std::vector<std::unique_ptr<Context>> all_;  // every context ever made (owned)
  std::map<std::string, Context*> memo_;       // live contexts by key
  std::vector<std::string> created_;           // memo keys in creation order
  std::vector<Context*> stack_;                // contexts being analysed
  std::unordered_map<const ir::Node*, std::shared_ptr<Site>> sites_;  // graph constants made
  std::vector<ir::NodePtr> site_nodes_;    // ... kept alive (no address reuse)
  std::vector<ir::FuncGraph*> discarded_;  // clones of contexts dropped on re-analysis
};

/// The truth of a one-element tensor condition computable at compile time (constants and
/// ops on them, scalar_to_tensor of constant scalars); nullopt when known only at run time.
std::optional<bool> constant_condition(const ir::NodePtr& cond);

// Implemented in eval_op.cc and eval_prim.cc.
/// Resolves an op call (attributes, weak scalars, promotion casts, infer); returns the new node.
ir::NodePtr eval_op_call(Engine& e, Context* ctx, const ir::OpValue& op,
                         const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);
/// Evaluates a graph primitive; returns the new node (possibly a folded Constant or an input).
ir::NodePtr eval_prim_call(Engine& e, Context* ctx, ir::Prim p,
                           const std::vector<ir::NodePtr>& args, const ir::SourceLoc& loc);

}  // namespace mycel::analysis::detail
