// The optimizer: small passes over specialized IR, each idempotent, run by a pipeline until
// nothing changes. Every pass returns whether it changed the graph.
#pragma once
#include <string>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::opt {

struct OptOptions {
  int max_rounds = 8;              // pipeline rounds before giving up on a fixpoint
  bool verify = default_verify();  // ir::verify after each pass (debug builds, MYCEL_VERIFY_IR=1)
  std::string dump_dir;  // IR after each pass to <dir>/<seq>_<pass>.ir; MYCEL_DUMP_IR if empty
  int64_t fold_max_elements = 1024;  // constant folding only computes outputs up to this size
  static bool default_verify();
};

/// Inlines direct calls of non-recursive graphs whose free variables are in scope at the call.
bool inline_calls(ir::FuncGraph* g, const OptOptions& o);
/// tuple_getitem(make_tuple(a, ...), i) -> a_i; make_tuple(t[0], ..., t[n-1]) -> t; tuple_len.
bool eliminate_tuples(ir::FuncGraph* g, const OptOptions& o);
/// partial(f, a)(b) -> f(a, b); partial(partial(f, a), b) -> partial(f, a, b); switch on constants.
bool eliminate_closures(ir::FuncGraph* g, const OptOptions& o);
/// Merges identical pure applies (ops that are not random nor mutate inputs; no print/depend).
bool eliminate_common_subexpressions(ir::FuncGraph* g, const OptOptions& o);
/// depend on pure values, unused parameters of directly called graphs (with their arguments).
bool eliminate_dead_code(ir::FuncGraph* g, const OptOptions& o);
/// Runs small ops on constant inputs at compile time (never random ones); scalar_to_tensor.
bool fold_constants(ir::FuncGraph* g, const OptOptions& o);
/// x*1, x+0, x-0, x/1, transpose chains, reshape chains, no-op reshape/cast, identity.
bool simplify_algebra(ir::FuncGraph* g, const OptOptions& o);

/// Top-level inputs that specialization fixed to one value (Python scalars, None, strings): their
/// uses in the entry graph g read Constants, and with `drop` they stop being parameters of g.
/// Returns, per non-weight parameter in order, whether it was such an input (with `drop`,
/// callers then do not pass that argument).
std::vector<bool> bind_constant_inputs(ir::FuncGraph* g, bool drop = true);

/// Runs the passes above until a fixpoint (bounded by max_rounds).
void optimize(ir::FuncGraph* g, const OptOptions& opts = {});

}  // namespace mycel::opt
