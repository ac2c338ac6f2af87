// Source-to-source automatic differentiation on specialized IR (DESIGN.md section 4).
//
// Each graph f gets a vjp graph f_vjp(x..., dout) -> ((sensitivities of f's free variables...),
// sensitivity of each parameter...): f's forward body, then the backward pass over it in reverse,
// each op through its registered rule (ops/bprop.h). This is the J transform with the bprop closure
// applied where it is made: a call of a graph g inside f runs g's forward in f's forward part and
// calls g_vjp (which recomputes g's forward) in f's backward part, so no closure ever escapes the
// graph that makes it and the backend needs no closure values. Calls through switch (if/else),
// partial applications and recursion (loops) transform like any other call: control flow
// differentiates without unrolling, and a loop's vjp is a recursive graph keeping one frame per
// iteration. For straight-line code, inlining and CSE merge the recomputed forward with the
// original one, leaving one flat graph. Sensitivities of non-float values (scalars, integer
// tensors, functions) are None.
#pragma once
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::ad {

/// What a gradient graph returns (MindSpore's grad / value_and_grad / GradOperation).
struct GradSpec {
  std::vector<int> positions;      // input positions (non-weight parameters) to differentiate
  bool positions_tuple = false;    // return a tuple even for a single position
  std::vector<int> weight_params;  // parameter indices (weights) whose gradients are returned
  bool with_weights = false;       // return weight gradients (a tuple), after input gradients
  bool return_value = false;       // value_and_grad: (value, grads)
  bool has_aux = false;            // f returns (out, aux...): only out is differentiated
  bool sens_param = false;         // the grad graph takes the output sensitivity as a last input
  bool aux_out = true;             // with has_aux and no value: return (grads, aux)
};

/// f_vjp of a specialized top-level graph.
ir::FuncGraph* vjp_graph(ir::FuncGraph* f);

/// A top-level graph with f's parameters (plus the sensitivity when spec.sens_param) returning the
/// gradients spec asks for. f must be a specialized top-level graph.
ir::FuncGraph* grad_graph(ir::FuncGraph* f, const GradSpec& spec);

/// The same inside another graph: a graph nested in `parent`, whose free variables may include
/// `weights` (nodes visible in parent, e.g. its weight parameters), taking f's parameters.
ir::FuncGraph* grad_graph_in(ir::FuncGraph* parent, ir::FuncGraph* f, const GradSpec& spec,
                             const std::vector<ir::NodePtr>& weights);

/// Replaces calls of gradient functions made inside the graph (`grad_op(S, weights)(x...)`, left
/// by analysis) whose S holds no such calls itself by calls of S's gradient graph. Returns false
/// when there were none; after true, specialize and optimize again and repeat.
bool expand_grad_calls(ir::FuncGraph* top);

}  // namespace mycel::ad
