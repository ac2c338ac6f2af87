// More samplers for MindSpore compatibility: TruncatedNormal (N(0, 1) within [-2, 2]),
// LogNormalReverse (Tensor.log_normal), exponential (Tensor.exponential_), binomial and beta.
// Seeds as in random.cc: seed == seed2 == 0 draws from the global generator, otherwise each call
// restarts the op's own stream. Not differentiable.
#include <cmath>
#include <limits>

#include "mycel/kernels/cpu/random_more.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/random_attrs.h"

namespace mycel {
namespace {

void check_finite(const InferContext& c, const char* name) {
  const double v = c.attrs.get_float(name);
  if (!std::isfinite(v))
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute '", name, "' must be finite, got ", v);
}

// TruncatedNormal(shape): attribute dtype among the float types.
std::vector<TensorMeta> infer_truncated_normal(const InferContext& c) {
  check_seeds(c);
  const DType t = c.attrs.get_dtype("dtype");
  if (t != DType::float16 && t != DType::float32 && t != DType::float64)
    MYCEL_THROW(TypeError, "[truncated_normal] attribute 'dtype' must be one of float16, ",
                "float32, float64, got ", dtype_name(t));
  return {{sample_shape(c, {}), t}};
}

// log_normal(x): x's shape and float dtype; std > 0.
std::vector<TensorMeta> infer_log_normal(const InferContext& c) {
  check_seeds(c);
  check_float(c, 0);
  check_finite(c, "mean");
  check_finite(c, "std");
  if (!(c.attrs.get_float("std") > 0))
    MYCEL_THROW(ValueError, "[log_normal] attribute 'std' must be > 0, got ",
                c.attrs.get_float("std"));
  return {c.in(0)};
}

// exponential(x): x's shape and float dtype; lambd > 0.
std::vector<TensorMeta> infer_exponential(const InferContext& c) {
  check_seeds(c);
  check_float(c, 0);
  check_finite(c, "lambd");
  if (!(c.attrs.get_float("lambd") > 0))
    MYCEL_THROW(ValueError, "[exponential] attribute 'lambd' must be > 0, got ",
                c.attrs.get_float("lambd"));
  return {c.in(0)};
}

// Two float parameter tensors of one shape (the functional forms broadcast them first).
void check_param_pair(const InferContext& c) {
  check_float(c, 0);
  check_float(c, 1);
  if (c.in(0).shape != c.in(1).shape)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] '", input_name(c, 0), "' ", shape_str(c.in(0).shape),
                " and '", input_name(c, 1), "' ", shape_str(c.in(1).shape),
                " must have the same shape");
}

// binomial(count, probs): their shape, count's dtype.
std::vector<TensorMeta> infer_binomial(const InferContext& c) {
  check_seeds(c);
  check_param_pair(c);
  return {c.in(0)};
}

// random_beta(alpha, beta): shape + alpha.shape, alpha's dtype.
std::vector<TensorMeta> infer_beta(const InferContext& c) {
  check_seeds(c);
  check_param_pair(c);
  return {{sample_shape(c, c.in(0).shape), c.in(0).dtype}};
}

OpDef random_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
                std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel) {
  attrs.push_back(attr("seed", AttrKind::kInt, int64_t(0), {"Seed0"}));
  attrs.push_back(attr("seed2", AttrKind::kInt, int64_t(0), {"Seed1"}));
  OpDef d = make_op(std::move(name), std::move(cls), std::move(doc), std::move(inputs),
                    std::move(attrs), std::move(infer), std::move(kernel),
                    {DType::float16, DType::float32, DType::float64}, "none");
  d.random = true;
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(random_more) {
  using namespace cpu;
  const AttrDef shape = attr("shape", AttrKind::kInts, {}, {"size"});
  r.add(random_op("truncated_normal", "TruncatedNormal",
                  "N(0, 1) samples restricted to [-2, 2] (out-of-range draws re-picked) of the "
                  "given shape.",
                  {}, {shape, attr("dtype", AttrKind::kDType, DType::float32)},
                  infer_truncated_normal, truncated_normal_kernel));
  r.add(random_op("log_normal", "LogNormalReverse",
                  "exp(N(mean, std^2)) samples with the shape and dtype of x.", {{"x"}},
                  {attr("mean", AttrKind::kFloat, 1.0), attr("std", AttrKind::kFloat, 2.0)},
                  infer_log_normal, log_normal_kernel));
  r.add(random_op("exponential", "Exponential",
                  "Exponential samples (density lambd exp(-lambd x)) with the shape and dtype of "
                  "x.",
                  {{"x"}}, {attr("lambd", AttrKind::kFloat, 1.0, {"rate"})}, infer_exponential,
                  exponential_kernel));
  r.add(random_op("binomial", "Binomial",
                  "Binomial(count, probs) samples (successes in count trials), elementwise over "
                  "count and probs of one shape, in count's dtype.",
                  {{"count"}, {"probs"}}, {}, infer_binomial, binomial_kernel));
  r.add(random_op("random_beta", "RandomBeta",
                  "Beta(alpha, beta) samples of shape shape + alpha.shape (alpha and beta of one "
                  "shape, > 0; else NaN).",
                  {{"alpha"}, {"beta"}}, {shape}, infer_beta, random_beta_kernel));
}

}  // namespace mycel
