// Unary elementwise ops. Each op: name, class, doc, dtypes, output-dtype rule and a scalar functor.
#include <cmath>

#include "mycel/kernels/cpu/unary.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// Output-dtype rules.
std::vector<TensorMeta> same_dtype(const InferContext& c) { return {c.in(0)}; }
std::vector<TensorMeta> float_dtype(const InferContext& c) {
  return {{c.in(0).shape, float_result_dtype(c.in(0).dtype)}};
}
std::vector<TensorMeta> bool_dtype(const InferContext& c) { return {{c.in(0).shape, DType::bool_}}; }

OpDef unary(std::string name, std::string cls, std::string doc, std::vector<DType> dtypes,
            InferFn infer, KernelFn kernel, std::string grad = "todo") {
  OpDef d;
  d.name = std::move(name);
  d.class_name = std::move(cls);
  d.doc = std::move(doc);
  d.inputs = {{"x"}};
  d.infer = std::move(infer);
  d.kernel = std::move(kernel);
  d.dtypes = std::move(dtypes);
  d.grad = std::move(grad);
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(unary) {
  using namespace cpu;
  r.add(unary("neg", "Neg", "Elementwise -x.", signed_dtypes(), same_dtype,
              same_dtype_unary([](auto x) { return -x; })));
  r.add(unary("exp", "Exp", "Elementwise e**x.", all_dtypes(), float_dtype,
              float_unary([](auto x) { return std::exp(x); })));
  r.add(unary("relu", "ReLU", "Elementwise max(x, 0).", signed_dtypes(), same_dtype,
              same_dtype_unary([](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); })));
  r.add(unary("isnan", "IsNan", "Elementwise test for NaN.", all_dtypes(), bool_dtype,
              predicate_unary([](auto x) {
                if constexpr (std::is_floating_point_v<decltype(x)>) return std::isnan(x);
                else return false;
              }), "none"));
}

}  // namespace mycel
