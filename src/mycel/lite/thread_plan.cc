#include "mycel/lite/thread_plan.h"

#include <cstdlib>
#include <string>

namespace mycel::lite {
namespace {

int64_t numel_of(int id, const std::vector<TensorMeta>& meta) {
  return id >= 0 && static_cast<size_t>(id) < meta.size() ? numel(meta[id].shape) : 0;
}

int64_t env_or(const char* name, int64_t fallback) {
  if (const char* s = std::getenv(name)) {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    if (end != s && v >= 0) return static_cast<int64_t>(v);
  }
  return fallback;
}

}  // namespace

int64_t node_work(const NodeInfo& n, const std::vector<TensorMeta>& meta) {
  int64_t out = 0;
  for (int id : n.outputs) out += numel_of(id, meta);
  const std::string& op = n.op->name;
  const bool has_w = n.inputs.size() > 1 && n.inputs[1] >= 0;
  if (has_w && (op == "conv2d" || op == "qconv2d")) {
    const Shape& w = meta[n.inputs[1]].shape;  // (oc, c / groups, kh, kw)
    if (w.size() == 4 && w[0] > 0) return out * (numel(w) / w[0]);
  }
  if (has_w && (op == "dense" || op == "qdense" || op == "matmul")) {
    const Shape& x = meta[n.inputs[0]].shape;  // the reduced length is x's last dimension
    if (!x.empty()) return out * x.back();
  }
  int64_t in = 0;
  for (int id : n.inputs) in += numel_of(id, meta);
  return in + out;
}

int64_t node_cost(const NodeInfo& n, const std::vector<TensorMeta>& meta) {
  const int64_t work = node_work(n, meta);
  const std::string& op = n.op->name;
  if ((op == "conv2d" || op == "qconv2d") && n.inputs.size() > 1 && n.inputs[1] >= 0 &&
      n.inputs[0] >= 0) {
    const Shape& w = meta[n.inputs[1]].shape;  // (oc, c / groups, kh, kw)
    const Shape& x = meta[n.inputs[0]].shape;
    if (w.size() == 4 && w[1] == 1 && x.size() == 4 && x[1] > 1) return 4 * work;  // depthwise
  }
  return work;
}

int64_t model_work(const Graph& g) {
  std::vector<TensorMeta> meta(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    meta[i] = TensorMeta{g.values[i].shape, g.values[i].dtype};
    for (int64_t& d : meta[i].shape)
      if (d < 0) d = 1;
  }
  int64_t total = 0;
  try {
    for (const NodeInfo& n : g.nodes) {
      std::vector<const TensorMeta*> ins;
      for (int id : n.inputs) ins.push_back(id >= 0 ? &meta[id] : nullptr);
      while (ins.size() < n.op->inputs.size()) ins.push_back(nullptr);
      const std::vector<TensorMeta> outs = infer_checked(*n.op, InferContext{*n.op, ins, n.attrs});
      for (size_t o = 0; o < n.outputs.size() && o < outs.size(); ++o)
        if (n.outputs[o] >= 0) meta[n.outputs[o]] = outs[o];
      total += node_work(n, meta);
    }
  } catch (const std::exception&) {
    return -1;  // e.g. an input whose declared shape another input's size constrains
  }
  return total;
}

int64_t lite_serial_work() {
  static const int64_t threshold = env_or("MYCEL_LITE_SERIAL_WORK", int64_t(1) << 20);
  return threshold;
}

int64_t lite_bf16_min_work() {
  static const int64_t threshold = env_or("MYCEL_LITE_BF16_MIN_WORK", int64_t(1) << 20);
  return threshold;
}

}  // namespace mycel::lite
