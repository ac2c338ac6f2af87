// More samplers for MindSpore compatibility: TruncatedNormal (N(0, 1) within [-2, 2]),
// LogNormalReverse (Tensor.log_normal), exponential (Tensor.exponential_), binomial, beta,
// ParameterizedTruncatedNormal, NonDeterministicInts and the candidate samplers.
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

// parameterized_truncated_normal(mean, stdevs, min, max): attribute shape (rank >= 1), each
// parameter one value or one per row (shape[0]); mean's float dtype, the parameters alike.
std::vector<TensorMeta> infer_parameterized_truncated_normal(const InferContext& c) {
  check_seeds(c);
  const Shape out = sample_shape(c, {});
  if (out.empty())
    MYCEL_THROW(ValueError, "[parameterized_truncated_normal] attribute 'shape' must have rank ",
                ">= 1 (its first dim is the batch), got ()");
  const DType t = c.in(0).dtype;
  for (size_t i = 0; i < 4; ++i) {
    check_float(c, i);
    if (c.in(i).dtype != t)
      MYCEL_THROW(TypeError, "[parameterized_truncated_normal] input '", input_name(c, i),
                  "' must have mean's dtype ", dtype_name(t), ", got ", dtype_name(c.in(i).dtype));
    const Shape& s = c.in(i).shape;
    const bool one = s.empty() || (s.size() == 1 && s[0] == 1);
    if (!one && !(s.size() == 1 && s[0] == out[0]))
      MYCEL_THROW(ShapeError, "[parameterized_truncated_normal] input '", input_name(c, i),
                  "' must hold one value or one per batch row (shape (", out[0], ",)), got ",
                  shape_str(s));
  }
  return {{out, t}};
}

// non_deterministic_ints(): attribute shape, dtype int32/int64/uint32/uint64.
std::vector<TensorMeta> infer_non_deterministic_ints(const InferContext& c) {
  const DType t = c.attrs.get_dtype("dtype");
  if (t != DType::int32 && t != DType::int64 && t != DType::uint32 && t != DType::uint64)
    MYCEL_THROW(TypeError, "[non_deterministic_ints] attribute 'dtype' must be one of int32, ",
                "int64, uint32, uint64, got ", dtype_name(t));
  return {{sample_shape(c, {}), t}};
}

// candidate_sampler(true_classes (batch, num_true) int32/int64): (sampled (num_sampled,) of
// its dtype, true_expected_count (batch, num_true) float32, sampled_expected_count float32).
std::vector<TensorMeta> infer_candidate_sampler(const InferContext& c) {
  check_seeds(c);
  const std::string& dist = c.attrs.get_str("distribution");
  if (dist != "uniform" && dist != "log_uniform")
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'distribution' must be 'uniform' or ",
                "'log_uniform', got '", dist, "'");
  const int64_t num_true = c.attrs.get_int("num_true"),
                num_sampled = c.attrs.get_int("num_sampled"), range = c.attrs.get_int("range_max");
  if (num_true < 1 || num_sampled < 1 || range < 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] num_true, num_sampled and range_max must be >= 1, ",
                "got ", num_true, ", ", num_sampled, ", ", range);
  if (c.attrs.get_bool("unique") && num_sampled > range)
    MYCEL_THROW(ValueError, "[", c.op.name, "] with unique=True num_sampled (", num_sampled,
                ") must be <= range_max (", range, ")");
  const TensorMeta& t = c.in(0);
  if (t.dtype != DType::int32 && t.dtype != DType::int64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input 'true_classes' must be int32 or int64, got ",
                dtype_name(t.dtype));
  if (t.shape.size() != 2 || t.shape[1] != num_true)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'true_classes' must have shape (batch, ",
                num_true, ") (num_true = ", num_true, "), got ", shape_str(t.shape));
  return {{{num_sampled}, t.dtype}, {t.shape, DType::float32}, {{num_sampled}, DType::float32}};
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
  r.add(random_op("parameterized_truncated_normal", "ParameterizedTruncatedNormal",
                  "N(mean, stdevs^2) samples restricted to [min, max] of the given shape, each "
                  "parameter one value or one per row of the first dim.",
                  {{"mean"}, {"stdevs"}, {"min"}, {"max"}}, {shape},
                  infer_parameterized_truncated_normal, parameterized_truncated_normal_kernel));
  {
    OpDef d = make_op("non_deterministic_ints", "NonDeterministicInts",
                      "Integers over the whole range of dtype from the operating system's "
                      "entropy (no seed reproduces them).",
                      {}, {shape, attr("dtype", AttrKind::kDType, DType::int64)},
                      infer_non_deterministic_ints, non_deterministic_ints_kernel,
                      {DType::int32, DType::int64, DType::uint32, DType::uint64}, "none");
    d.random = true;
    r.add(std::move(d));
  }
  {
    OpDef d = random_op(
        "candidate_sampler", "CandidateSampler",
        "num_sampled classes of [0, range_max) drawn uniformly or log-uniformly, with the "
        "expected counts of the true and sampled classes (TensorFlow's candidate samplers).",
        {{"true_classes"}},
        // MindSpore's order, all four required (so the generated signature keeps it).
        {attr("num_true", AttrKind::kInt, {}), attr("num_sampled", AttrKind::kInt, {}),
         attr("unique", AttrKind::kBool, {}), attr("range_max", AttrKind::kInt, {}),
         attr("remove_accidental_hits", AttrKind::kBool, false),
         attr("distribution", AttrKind::kStr, std::string("uniform"))},
        infer_candidate_sampler, candidate_sampler_kernel);
    d.dtypes = {DType::int32, DType::int64};
    r.add(std::move(d));
  }
}

}  // namespace mycel
