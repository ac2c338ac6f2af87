// Sampled distributions (MindSpore's ops.random_gamma, random_poisson, standard_laplace,
// random_categorical, multinomial), drawn from the Philox generator with the seed rules of
// random.cc: seed == seed2 == 0 draws from the global generator, otherwise each call restarts the
// op's own stream. Not differentiable (the samples' reparameterization gradients are not
// provided).
#include "mycel/kernels/cpu/random_dist.h"

#include <cstdint>
#include <limits>

#include "mycel/ops/infer_util.h"
#include "mycel/ops/random_attrs.h"

namespace mycel {
namespace {

DType checked_dtype(const InferContext& c, std::initializer_list<DType> allowed) {
  DType t = c.attrs.get_dtype("dtype");
  for (DType a : allowed)
    if (a == t) return t;
  std::string list;
  for (DType a : allowed) list += std::string(list.empty() ? "" : ", ") + dtype_name(a);
  MYCEL_THROW(TypeError, "[", c.op.name, "] attribute 'dtype' must be one of ", list, ", got ",
              dtype_name(t));
}

std::vector<TensorMeta> infer_laplace(const InferContext& c) {
  check_seeds(c);
  return {
      {sample_shape(c, {}), checked_dtype(c, {DType::float16, DType::float32, DType::float64})}};
}

// random_gamma(shape, alpha): shape + alpha.shape, alpha's dtype.
std::vector<TensorMeta> infer_gamma(const InferContext& c) {
  check_seeds(c);
  return {{sample_shape(c, c.in(0).shape), c.in(0).dtype}};
}

// random_poisson(shape, rate): shape + rate.shape, attribute dtype.
std::vector<TensorMeta> infer_poisson(const InferContext& c) {
  check_seeds(c);
  DType t = checked_dtype(
      c, {DType::float16, DType::float32, DType::float64, DType::int32, DType::int64});
  return {{sample_shape(c, c.in(0).shape), t}};
}

int64_t positive_count(const InferContext& c, const char* name) {
  int64_t k = c.attrs.get_int(name);
  if (k < 0) MYCEL_THROW(ValueError, "[", c.op.name, "] '", name, "' must be >= 0, got ", k);
  return k;
}

// The largest class index must fit the output dtype.
void check_index_fits(const InferContext& c, DType t, int64_t classes) {
  const int64_t top = t == DType::int16 ? 32767 : t == DType::int32 ? 2147483647 : INT64_MAX;
  if (classes - 1 > top)
    MYCEL_THROW(ValueError, "[", c.op.name, "] ", classes, " classes do not fit dtype ",
                dtype_name(t));
}

// random_categorical(logits (batch, classes), num_sample) -> (batch, num_sample).
std::vector<TensorMeta> infer_categorical(const InferContext& c) {
  check_seeds(c);
  check_rank(c, 0, 2, 2);
  check_float(c, 0);
  if (c.in(0).shape[1] < 1)
    MYCEL_THROW(ValueError, "[random_categorical] input 'logits' needs at least one class, got ",
                "shape ", shape_str(c.in(0).shape));
  DType t = checked_dtype(c, {DType::int16, DType::int32, DType::int64});
  check_index_fits(c, t, c.in(0).shape[1]);
  return {{{c.in(0).shape[0], positive_count(c, "num_sample")}, t}};
}

// multinomial(x (classes,) or (rows, classes), num_samples) -> (num_samples,) or (rows, ...).
std::vector<TensorMeta> infer_multinomial(const InferContext& c) {
  check_seeds(c);
  check_rank(c, 0, 1, 2);
  check_float(c, 0);
  const Shape& xs = c.in(0).shape;
  const int64_t k = positive_count(c, "num_samples");
  if (xs.back() < 1)
    MYCEL_THROW(ValueError, "[multinomial] input 'x' needs at least one class, got shape ",
                shape_str(xs));
  if (!c.attrs.get_bool("replacement") && k > xs.back())
    MYCEL_THROW(ValueError, "[multinomial] num_samples (", k, ") without replacement exceeds ",
                "the number of classes ", xs.back());
  DType t = checked_dtype(c, {DType::int32, DType::int64});
  check_index_fits(c, t, xs.back());
  Shape out = xs;
  out.back() = k;
  return {{out, t}};
}

// multinomial_with_replacement(x, seed, offset): multinomial's shapes, int64, attribute
// numsamples; seed and offset are one-element int tensors (run-time values).
std::vector<TensorMeta> infer_multinomial_with_replacement(const InferContext& c) {
  check_rank(c, 0, 1, 2);
  check_float(c, 0);
  for (size_t i : {size_t(1), size_t(2)}) {
    const TensorMeta& m = c.in(i);
    if (m.dtype != DType::int32 && m.dtype != DType::int64)
      MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must be int32 or int64, got ", dtype_name(m.dtype));
    int64_t n = 1;
    for (int64_t d : m.shape) n *= d;
    if (n != 1)
      MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must hold one value, got shape ", shape_str(m.shape));
  }
  const Shape& xs = c.in(0).shape;
  const int64_t k = positive_count(c, "numsamples");
  if (xs.back() < 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input 'x' needs at least one class, got shape ",
                shape_str(xs));
  if (!c.attrs.get_bool("replacement") && k > xs.back())
    MYCEL_THROW(ValueError, "[", c.op.name, "] numsamples (", k, ") without replacement ",
                "exceeds the number of classes ", xs.back());
  Shape out = xs;
  out.back() = k;
  return {{out, DType::int64}};
}

std::vector<AttrDef> seeds() {
  return {attr("seed", AttrKind::kInt, int64_t(0), {"Seed0"}),
          attr("seed2", AttrKind::kInt, int64_t(0), {"Seed1"})};
}

OpDef random_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
                std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel,
                std::vector<DType> dtypes) {
  for (AttrDef& a : seeds()) attrs.push_back(std::move(a));
  OpDef d =
      make_op(std::move(name), std::move(cls), std::move(doc), std::move(inputs), std::move(attrs),
              std::move(infer), std::move(kernel), std::move(dtypes), "none");
  d.random = true;
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(random_dist) {
  using namespace cpu;
  const AttrDef shape = attr("shape", AttrKind::kInts, {}, {"size"});
  const std::vector<DType> floats = {DType::float16, DType::float32, DType::float64};
  r.add(random_op("standard_laplace", "StandardLaplace",
                  "Laplace(0, 1) samples of the given shape (density exp(-|x|) / 2).", {},
                  {shape, attr("dtype", AttrKind::kDType, DType::float32)}, infer_laplace,
                  standard_laplace_kernel, floats));
  r.add(random_op("random_gamma", "RandomGamma",
                  "Gamma(alpha, 1) samples of shape shape + alpha.shape (alpha > 0; else NaN).",
                  {{"alpha"}}, {shape}, infer_gamma, random_gamma_kernel, floats));
  r.add(random_op("random_poisson", "RandomPoisson",
                  "Poisson(rate) samples of shape shape + rate.shape (rate in [0, 2^50]).",
                  {{"rate"}}, {shape, attr("dtype", AttrKind::kDType, DType::float32)},
                  infer_poisson, random_poisson_kernel, floats));
  r.add(random_op(
      "random_categorical", "RandomCategorical",
      "num_sample class indices per row drawn from softmax(logits).", {{"logits"}},
      {attr("num_sample", AttrKind::kInt, {}), attr("dtype", AttrKind::kDType, DType::int64)},
      infer_categorical, random_categorical_kernel, floats));
  r.add(random_op(
      "multinomial", "Multinomial",
      "num_samples indices per row drawn with probability proportional to the row's "
      "weights, with or without replacement.",
      {{"x"}},
      {attr("num_samples", AttrKind::kInt, {}), attr("replacement", AttrKind::kBool, true),
       attr("dtype", AttrKind::kDType, DType::int32)},
      infer_multinomial, multinomial_kernel, floats));
  // MindSpore's MultinomialWithReplacement: the seeds are inputs (tensors), not attributes.
  OpDef mwr = make_op(
      "multinomial_with_replacement", "MultinomialWithReplacement",
      "numsamples int64 indices per row drawn with probability proportional to the row's "
      "weights, from the Philox stream keyed by the seed input starting at the offset input "
      "(seed -1 and offset 0: the global generator).",
      {{"x"}, {"seed"}, {"offset"}},
      {attr("numsamples", AttrKind::kInt, {}), attr("replacement", AttrKind::kBool, false)},
      infer_multinomial_with_replacement, multinomial_with_replacement_kernel, floats, "none");
  mwr.random = true;
  r.add(std::move(mwr));
}

}  // namespace mycel
