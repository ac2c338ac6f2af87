#include "mycel/lite/thread_plan.h"

#include <cstdlib>
#include <string>

namespace mycel::lite {
namespace {

int64_t numel_of(int id, const std::vector<TensorMeta>& meta) {
  return id >= 0 && static_cast<size_t>(id) < meta.size() ? numel(meta[id].shape) : 0;
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

int64_t lite_serial_work() {
  static const int64_t threshold = [] {
    if (const char* s = std::getenv("MYCEL_LITE_SERIAL_WORK")) {
      char* end = nullptr;
      const long long v = std::strtoll(s, &end, 10);
      if (end != s && v >= 0) return static_cast<int64_t>(v);
    }
    return int64_t(1) << 20;
  }();
  return threshold;
}

}  // namespace mycel::lite
