// Binary elementwise ops with numpy broadcasting and type promotion.
#include <cmath>

#include "mycel/kernels/cpu/binary.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

std::vector<TensorMeta> same_dtype(const InferContext& c) {
  return {infer_broadcast(c, c.in(0).dtype)};
}
std::vector<TensorMeta> float_dtype(const InferContext& c) {
  return {infer_broadcast(c, float_result_dtype(c.in(0).dtype))};
}
// numpy's true division of integers is float64 whatever their width.
std::vector<TensorMeta> div_dtype(const InferContext& c) {
  DType t = c.in(0).dtype;
  return {infer_broadcast(c, is_floating(t) ? t : DType::float64)};
}
std::vector<TensorMeta> bool_dtype(const InferContext& c) {
  return {infer_broadcast(c, DType::bool_)};
}

OpDef binary(std::string name, std::string cls, std::string doc, std::vector<DType> dtypes,
             InferFn infer, KernelFn kernel, std::string grad = "todo") {
  OpDef d;
  d.name = std::move(name);
  d.class_name = std::move(cls);
  d.doc = std::move(doc);
  d.inputs = {{"x"}, {"y"}};
  d.infer = std::move(infer);
  d.kernel = std::move(kernel);
  d.dtypes = std::move(dtypes);
  d.promote_inputs = true;
  d.grad = std::move(grad);
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(binary) {
  using namespace cpu;
  r.add(binary("add", "Add", "Elementwise x + y with broadcasting.", all_dtypes(), same_dtype,
               same_dtype_binary([](auto x, auto y) -> decltype(x) {
                 if constexpr (std::is_same_v<decltype(x), bool>) return x || y;
                 else return x + y;
               })));
  r.add(binary("sub", "Sub", "Elementwise x - y with broadcasting.", numeric_dtypes(), same_dtype,
               same_dtype_binary([](auto x, auto y) -> decltype(x) { return x - y; })));
  r.add(binary("mul", "Mul", "Elementwise x * y with broadcasting.", all_dtypes(), same_dtype,
               same_dtype_binary([](auto x, auto y) -> decltype(x) {
                 if constexpr (std::is_same_v<decltype(x), bool>) return x && y;
                 else return x * y;
               })));
  r.add(binary("div", "Div", "Elementwise true division x / y (integers give floats).",
               all_dtypes(), div_dtype, float_binary([](auto x, auto y) { return x / y; })));
  r.add(binary("equal", "Equal", "Elementwise x == y.", all_dtypes(), bool_dtype,
               predicate_binary([](auto x, auto y) { return x == y; }), "none"));
}

}  // namespace mycel
