// The lite optimizer's passes (see optimize.h). Each keeps the graph valid: validate() holds after.
#include "mycel/lite/optimize.h"

#include <cmath>

#include "mycel/core/error.h"

namespace mycel::lite {
namespace {

// How many times each value is read (node inputs and model outputs).
std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const NodeInfo& n : g.nodes)
    for (int id : n.inputs)
      if (id >= 0) ++uses[id];
  for (int id : g.outputs) ++uses[id];
  return uses;
}

// The index of the node producing each value (-1: input or weight).
std::vector<int> producers(const Graph& g) {
  std::vector<int> p(g.values.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int id : g.nodes[k].outputs)
      if (id >= 0) p[id] = static_cast<int>(k);
  return p;
}

bool is_f32_weight(const Graph& g, int id) {
  return id >= 0 && g.values[id].weight >= 0 && g.values[id].dtype == DType::float32;
}

int add_weight(Graph& g, const std::string& name, Tensor t) {
  ValueInfo v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.weight = static_cast<int>(g.weights.size());
  g.weights.push_back(std::move(t));
  g.values.push_back(std::move(v));
  return static_cast<int>(g.values.size()) - 1;
}

void erase_nodes(Graph& g, const std::vector<char>& dead) {
  std::vector<NodeInfo> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!dead[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
}

}  // namespace

int fold_batch_norm(Graph& g) {
  std::vector<int> uses = use_counts(g);
  std::vector<int> prod = producers(g);
  std::vector<char> dead(g.nodes.size(), 0);
  int folded = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    NodeInfo& bn = g.nodes[k];
    if (bn.op->name != "batch_norm" || bn.attrs.get_bool("is_training")) continue;
    if (bn.inputs.size() < 5 || !is_f32_weight(g, bn.inputs[1]) ||
        !is_f32_weight(g, bn.inputs[2]) || !is_f32_weight(g, bn.inputs[3]) ||
        !is_f32_weight(g, bn.inputs[4]))
      continue;
    bool stats_read = false;  // saved mean / invstd outputs must be unread
    for (size_t o = 1; o < bn.outputs.size(); ++o)
      stats_read |= bn.outputs[o] >= 0 && uses[bn.outputs[o]] > 0;
    const int x = bn.inputs[0];
    if (stats_read || prod[x] < 0 || uses[x] != 1 || dead[prod[x]]) continue;
    NodeInfo& conv = g.nodes[prod[x]];
    if (conv.op->name != "conv2d" || conv.post_act != NodeInfo::Act::kNone ||
        !is_f32_weight(g, conv.inputs[1]))
      continue;
    const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
    if (has_bias && !is_f32_weight(g, conv.inputs[2])) continue;
    const Tensor& w = g.weights[g.values[conv.inputs[1]].weight];
    const int64_t oc = w.shape()[0];
    const int64_t per = oc ? w.numel() / oc : 0;
    auto wt = [&](int id) { return g.weights[g.values[id].weight].data<float>(); };
    const float *gamma = wt(bn.inputs[1]), *beta = wt(bn.inputs[2]), *mean = wt(bn.inputs[3]),
                *var = wt(bn.inputs[4]);
    if (g.values[bn.inputs[1]].shape != Shape{oc}) continue;
    const double eps = bn.attrs.get_float("epsilon");
    Tensor nw = Tensor::empty(w.shape(), DType::float32);
    Tensor nb = Tensor::empty({oc}, DType::float32);
    const float* b0 = has_bias ? wt(conv.inputs[2]) : nullptr;
    for (int64_t c = 0; c < oc;
         ++c) {  // y = (conv(x) + b - mean) * s + beta, s = gamma / sqrt(var + eps)
      const double s = gamma[c] / std::sqrt(static_cast<double>(var[c]) + eps);
      for (int64_t i = 0; i < per; ++i)
        nw.data<float>()[c * per + i] = static_cast<float>(w.data<float>()[c * per + i] * s);
      nb.data<float>()[c] = static_cast<float>(((b0 ? b0[c] : 0.0) - mean[c]) * s + beta[c]);
    }
    const std::string base = g.values[conv.inputs[1]].name;
    conv.inputs.resize(3);
    conv.inputs[1] = add_weight(g, base + ".bn_folded", std::move(nw));
    conv.inputs[2] = add_weight(g, base + ".bn_folded_bias", std::move(nb));
    conv.outputs[0] = bn.outputs[0];
    dead[k] = 1;
    ++folded;
  }
  erase_nodes(g, dead);
  return folded;
}

int fold_constants(Graph& g) {
  std::vector<char> dead(g.nodes.size(), 0);
  int folded = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    NodeInfo& n = g.nodes[k];
    bool all_const = !n.inputs.empty() && !n.op->random && !n.op->effect;
    std::vector<Tensor> ins;
    for (int id : n.inputs) {
      if (id < 0) {
        ins.emplace_back();
        continue;
      }
      all_const &= g.values[id].weight >= 0;
      if (all_const) ins.push_back(g.weights[g.values[id].weight]);
    }
    if (!all_const) continue;
    std::vector<Tensor> outs = call_op(*n.op, ins, n.attrs);
    for (size_t o = 0; o < n.outputs.size() && o < outs.size(); ++o) {
      const int id = n.outputs[o];
      if (id < 0) continue;
      ValueInfo& v = g.values[id];
      v.dtype = outs[o].dtype();
      v.shape = outs[o].shape();
      v.weight = static_cast<int>(g.weights.size());
      g.weights.push_back(outs[o]);
    }
    dead[k] = 1;
    ++folded;
  }
  erase_nodes(g, dead);
  return folded;
}

int fuse_activation(Graph& g) {
  std::vector<int> uses = use_counts(g);
  std::vector<int> prod = producers(g);
  std::vector<char> dead(g.nodes.size(), 0);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    NodeInfo& act = g.nodes[k];
    const bool relu6 = act.op->name == "relu6";
    if ((act.op->name != "relu" && !relu6) || act.inputs.empty()) continue;
    const int x = act.inputs[0];
    if (prod[x] < 0 || uses[x] != 1 || g.values[x].dtype != DType::float32) continue;
    NodeInfo& p = g.nodes[prod[x]];
    const std::string& name = p.op->name;
    if ((name != "conv2d" && name != "dense" && name != "matmul" && name != "add") ||
        p.post_act != NodeInfo::Act::kNone || p.outputs.size() != 1)
      continue;
    // Only the conv kernel takes a clip post-op; the session applies an add's itself.
    if (relu6 && name != "conv2d" && name != "add") continue;
    p.post_act = relu6 ? NodeInfo::Act::kRelu6 : NodeInfo::Act::kRelu;
    p.outputs[0] = act.outputs[0];
    dead[k] = 1;
    ++fused;
  }
  erase_nodes(g, dead);
  return fused;
}

int eliminate_dead_nodes(Graph& g) {
  int removed = 0;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> uses = use_counts(g);
    std::vector<char> dead(g.nodes.size(), 0);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      bool read = false;
      for (int id : g.nodes[k].outputs) read |= id >= 0 && uses[id] > 0;
      if (!read) dead[k] = 1, changed = true, ++removed;
    }
    erase_nodes(g, dead);
  }
  return removed;
}

OptimizeReport optimize(Graph& g) {
  OptimizeReport r;
  r.batch_norms_folded = fold_batch_norm(g);
  r.constants_folded = fold_constants(g);
  r.activations_fused = fuse_activation(g);
  r.dead_nodes_removed = eliminate_dead_nodes(g);
  validate(g, "lite optimizer");
  return r;
}

}  // namespace mycel::lite
