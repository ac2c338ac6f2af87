// FuncGraph: one function in the IR (parameters, output, nested graphs that may use its nodes as
// free variables), and Module, which owns every graph of a compilation.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mycel/ir/node.h"

namespace mycel::ir {

class Module;

/// A function: parameters and one output node; its body is what the output depends on.
class FuncGraph {
 public:
  FuncGraph(Module* m, std::string name, FuncGraph* parent)
      : module_(m), name_(std::move(name)), parent_(parent) {}
  FuncGraph(const FuncGraph&) = delete;
  FuncGraph& operator=(const FuncGraph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  Module* module() const { return module_; }
  /// The lexically enclosing graph (nullptr at top level); free variables come from ancestors.
  FuncGraph* parent() const { return parent_; }
  void set_parent(FuncGraph* p) { parent_ = p; }
  bool is_ancestor_of(const FuncGraph* g) const;
  /// A loop header analysis always unrolls (a for over a tuple or list: its trip count is the
  /// sequence's length, and its items may differ in type, so it cannot stay a loop).
  bool unroll() const { return unroll_; }
  void set_unroll(bool u) { unroll_ = u; }
  /// A Cell's own bprop(inputs..., out, dout) -> input sensitivities, used by autodiff instead of
  /// differentiating this graph (specialized alongside it; such graphs are not inlined).
  FuncGraph* bprop() const { return bprop_; }
  void set_bprop(FuncGraph* b) { bprop_ = b; }
  /// Compile-time default values of the trailing parameters, one per parameter (nullptr =
  /// required): a call whose callee is only known after analysis (a Cell taken from a CellList
  /// in a loop) is completed with them, as Python would.
  const std::vector<ValuePtr>& default_values() const { return defaults_; }
  void set_default_values(std::vector<ValuePtr> d) { defaults_ = std::move(d); }
  /// Python's parameter kinds, for binding such a call: the leading positional parameters, then
  /// *args (it takes the tuple of the extra positional arguments), keyword-only ones and
  /// **kwargs (a dict); -1 where the function has no *args or **kwargs.
  struct VarParams {
    size_t n_positional = 0;
    int vararg = -1;
    int kwarg = -1;
    bool any() const { return vararg >= 0 || kwarg >= 0; }
  };
  const VarParams& var_params() const { return var_params_; }
  void set_var_params(VarParams v) { var_params_ = v; }
  /// The Cell whose construct this graph is, as errors name it: its attribute path from the
  /// compiled Cell and its repr, "self.layers[1].fc (Dense<...>)"; null for a plain function.
  /// Specializations carry it, and inlining records it in each copied node's call chain.
  const std::shared_ptr<const std::string>& cell_label() const { return cell_label_; }
  void set_cell_label(std::shared_ptr<const std::string> l) { cell_label_ = std::move(l); }

  const std::vector<NodePtr>& parameters() const { return params_; }
  NodePtr add_parameter(const std::string& name);
  void set_parameters(std::vector<NodePtr> params) { params_ = std::move(params); }
  const NodePtr& output() const { return output_; }
  void set_output(NodePtr n) { output_ = std::move(n); }

  /// Creates an Apply in this graph: callee and arguments.
  NodePtr apply(std::vector<NodePtr> inputs, SourceLoc loc = {});
  /// Calls a graph primitive.
  NodePtr prim(Prim p, std::vector<NodePtr> args, SourceLoc loc = {});
  /// Creates a Constant.
  NodePtr constant(ValuePtr v);

  /// This graph's Apply nodes reachable from the output, each after its inputs (parameters and
  /// constants excluded; nodes of other graphs are not entered).
  std::vector<NodePtr> toposort() const;
  /// Nodes of ancestor graphs used here or in nested graphs (the closure's environment), in
  /// first-use order.
  std::vector<NodePtr> free_variables() const;
  /// Graphs referenced by constants in this graph's body, in first-use order.
  std::vector<FuncGraph*> used_graphs() const;

 private:
  Module* module_;
  std::string name_;
  FuncGraph* parent_;
  std::vector<NodePtr> params_;
  NodePtr output_;
  bool unroll_ = false;
  FuncGraph* bprop_ = nullptr;
  std::vector<ValuePtr> defaults_;
  VarParams var_params_;
  std::shared_ptr<const std::string> cell_label_;
};

/// Owns the graphs of one compilation (parse, specialization and AD add to it).
class Module {
 public:
  /// Creates a graph; the name is made unique within the module ("f", "f.1", ...).
  FuncGraph* add_graph(const std::string& name, FuncGraph* parent = nullptr);
  const std::vector<std::unique_ptr<FuncGraph>>& graphs() const { return graphs_; }
  /// Drops graphs not reachable from `roots` (after inlining and specialization).
  void collect_garbage(const std::vector<FuncGraph*>& roots);

 private:
  std::vector<std::unique_ptr<FuncGraph>> graphs_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;
};

}  // namespace mycel::ir
