#include "mycel/ops/bprop.h"

namespace mycel {

GradVar BpropBuilder::scalar(double v, DType t) { return constant(Tensor::scalar(v, t)); }

GradVar BpropBuilder::sum(GradVar a, const std::vector<int64_t>& axes, bool keep_dims) {
  return call("sum", {a}, {{"axis", axes}, {"keep_dims", keep_dims}});
}

GradVar BpropBuilder::reduce_to(GradVar dx, const GradVar& like, const Shape& dx_shape) {
  const Shape& to = meta(like).shape;
  if (to == dx_shape) return dx;
  const size_t lead = dx_shape.size() - to.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < dx_shape.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && dx_shape[i] != 1))
      axes.push_back(static_cast<int64_t>(i));
  if (!axes.empty()) dx = sum(dx, axes, true);
  return reshape(dx, to);
}

BpropRegistry& BpropRegistry::get() {
  static BpropRegistry r;
  return r;
}

void BpropRegistry::add(const std::string& op, BpropFn fn) {
  if (!rules_.emplace(op, std::move(fn)).second)
    MYCEL_THROW(RuntimeError, "[bprop] op '", op, "' has two backward rules");
}

const BpropFn* BpropRegistry::find(const std::string& op) const {
  auto it = rules_.find(op);
  return it == rules_.end() ? nullptr : &it->second;
}

}  // namespace mycel
