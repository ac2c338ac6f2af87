// Analysis: abstract interpretation of the IR from an entry graph with argument abstracts, and
// specialization of every graph per call signature into monomorphic clones (one clone per
// (graph, signature, enclosing context), MindSpore static_analysis style). The input graphs are
// never modified. Canonical unresolved op calls are resolved (attributes folded, weak scalars and
// promotion made explicit), Python-level constants fold, and every node gets its abstract.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::analysis {

/// Compile-time evaluation of an opaque callee (a Python object constant) on constant arguments.
/// Returns nullptr when it cannot evaluate; the Python glue registers one.
using ConstEvalHook = std::function<ir::ValuePtr(const ir::Value& callee,
                                                 const std::vector<ir::ValuePtr>& const_args)>;
void set_const_eval_hook(ConstEvalHook hook);
const ConstEvalHook& const_eval_hook();

/// The registry op an opaque callee stands for (a `mycel.ops` function passed around as a value,
/// or a Primitive object called with a tuple known only at run time: `self.op(*inputs)`) and its
/// attributes; op is nullptr for anything else. The Python glue registers one.
struct OpaqueOp {
  const OpDef* op = nullptr;
  Attrs attrs;
};
using OpaqueOpHook = std::function<OpaqueOp(const ir::Value& callee)>;
void set_opaque_op_hook(OpaqueOpHook hook);
const OpaqueOpHook& opaque_op_hook();

/// Limits of the specializer.
struct SpecializeOptions {
  int max_unroll = 16;   // same graph on the stack this often with changing constants: widen
  int max_fixpoint = 6;  // re-analyses of a recursive graph until its output abstract is stable
};

/// Statistics of one specialize() call (tests check that a cache hit does no work).
struct SpecializeStats {
  int contexts = 0;    // (graph, signature) contexts analysed
  int reanalyses = 0;  // re-runs of recursive contexts
};

/// Specializes `entry` for `args` (one per parameter, or one per unbound parameter: weights,
/// i.e. parameters bound to tensors, take their tensor's abstract). Returns a new graph in `m`.
ir::FuncGraph* specialize(ir::Module& m, ir::FuncGraph* entry,
                          const std::vector<ir::AbstractPtr>& args,
                          const SpecializeOptions& opts = {}, SpecializeStats* stats = nullptr);

/// A stable text key of an argument signature (the compile cache's key).
std::string signature_key(const std::vector<ir::AbstractPtr>& args);

}  // namespace mycel::analysis
