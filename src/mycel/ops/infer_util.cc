#include "mycel/ops/infer_util.h"

#include <algorithm>

namespace mycel {

const std::string& input_name(const InferContext& ctx, size_t i) {
  static const std::string fallback = "input";
  const auto& ins = ctx.op.inputs;
  if (ins.empty()) return fallback;
  return ins[std::min(i, ins.size() - 1)].name;
}

std::vector<TensorMeta> infer_same_as_input(const InferContext& ctx) { return {ctx.in(0)}; }

TensorMeta infer_broadcast(const InferContext& ctx, DType dtype) {
  Shape s;
  bool first = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    s = first ? ctx.in(i).shape : broadcast_shapes(s, ctx.in(i).shape, ctx.op.name.c_str());
    first = false;
  }
  return {s, dtype};
}

DType float_result_dtype(DType t) { return is_floating(t) ? t : promote_types(t, DType::float16); }

void check_rank(const InferContext& ctx, size_t i, int64_t lo, int64_t hi) {
  int64_t r = static_cast<int64_t>(ctx.in(i).shape.size());
  if (r >= lo && r <= hi) return;
  std::string want =
      lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
  MYCEL_THROW(ShapeError, "[", ctx.op.name, "] input '", input_name(ctx, i), "' must have rank ",
              want, ", got shape ", shape_str(ctx.in(i).shape));
}

void check_float(const InferContext& ctx, size_t i) {
  if (!is_floating(ctx.in(i).dtype))
    MYCEL_THROW(TypeError, "[", ctx.op.name, "] input '", input_name(ctx, i),
                "' must be floating point, got ", dtype_name(ctx.in(i).dtype));
}

void check_same_dtype(const InferContext& ctx, size_t i, size_t j) {
  if (ctx.in(i).dtype != ctx.in(j).dtype)
    MYCEL_THROW(TypeError, "[", ctx.op.name, "] inputs '", input_name(ctx, i), "' and '",
                input_name(ctx, j), "' must have the same dtype, got ", dtype_name(ctx.in(i).dtype),
                " and ", dtype_name(ctx.in(j).dtype));
}

}  // namespace mycel
