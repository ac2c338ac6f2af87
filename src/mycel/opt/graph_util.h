// Helpers shared by the passes: walking every live node, replacing uses, recognizing ops.
#pragma once
#include <optional>
#include <unordered_map>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::opt::detail {

/// `root` and every graph it uses, transitively (nested graphs and callees).
std::vector<ir::FuncGraph*> reachable_graphs(ir::FuncGraph* root);
/// Every Apply reachable from the outputs of the reachable graphs, inputs before users (free
/// variables used only by nested graphs included).
std::vector<ir::NodePtr> all_applies(ir::FuncGraph* root);
/// Replaces every use (inputs and graph outputs) of the keys by their values (chains followed).
void replace_uses(ir::FuncGraph* root,
                  const std::unordered_map<const ir::Node*, ir::NodePtr>& repl);

/// The op a node applies (callee a constant OpValue), or nullptr.
const ir::OpValue* op_of(const ir::NodePtr& n);
/// True when the op named `name` is applied by n.
bool is_op(const ir::NodePtr& n, const char* name);
/// The value of a Constant node, or nullptr.
const ir::ValuePtr* const_value(const ir::NodePtr& n);
/// Applying n has no effect besides its result and gives the same result for the same inputs.
bool is_pure(const ir::NodePtr& n);
/// If every element of a constant tensor (or scalar_to_tensor of a constant) equals one value.
std::optional<double> uniform_constant(const ir::NodePtr& n);
/// A new Apply in g copying abstract and location from `like`.
ir::NodePtr make_like(ir::FuncGraph* g, std::vector<ir::NodePtr> inputs, const ir::NodePtr& like);

}  // namespace mycel::opt::detail
