// Well-formedness of the IR, checked after every pass in debug builds and in tests.
#pragma once
#include <string>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::ir {

/// Problems found in `g` and the graphs it uses (empty when well formed): null inputs, nodes
/// used outside their scope (a node may be used in its own graph or in graphs nested inside it),
/// parameters of other graphs, a missing output, primitive arity mismatches, empty applies.
std::vector<std::string> check(const FuncGraph& g);
/// Throws RuntimeError listing the problems, naming `stage` (the pass that produced them).
void verify(const FuncGraph& g, const std::string& stage);

}  // namespace mycel::ir
