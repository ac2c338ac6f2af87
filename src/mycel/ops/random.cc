// Random ops: they draw from the Philox generator (core/random.h). Attributes seed and seed2
// (MindSpore's): both 0 draws from the global generator, seeded by mycel.set_seed, so each call
// gives new numbers; otherwise the op uses its own stream keyed by (seed, seed2) that restarts at
// every call, so the same op seeds give the same numbers each call (as in TF and MindSpore).
// Positional attribute order follows MindSpore's functions: uniform(shape, minval, maxval, seed,
// dtype), randint(low, high, size, seed, dtype). dropout takes keep_prob as MindSpore's Dropout
// primitive does (not the drop probability p of MindSpore 2.x ops.dropout).
#include "mycel/kernels/cpu/random.h"

#include <cmath>
#include <limits>

#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/random_attrs.h"

namespace mycel {
namespace {

DType dtype_attr(const InferContext& c) {
  DType t = c.attrs.get_dtype("dtype");
  if (!c.op.supports(t)) {
    std::string list;
    for (DType d : c.op.dtypes) list += std::string(list.empty() ? "" : ", ") + dtype_name(d);
    MYCEL_THROW(TypeError, "[", c.op.name, "] attribute 'dtype' must be one of ", list, ", got ",
                dtype_name(t));
  }
  return t;
}

void check_finite(const InferContext& c, const char* name) {
  double v = c.attrs.get_float(name);
  if (!std::isfinite(v))
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute '", name, "' must be finite, got ", v);
}

std::vector<TensorMeta> infer_uniform(const InferContext& c) {
  check_seeds(c);
  check_finite(c, "minval");
  check_finite(c, "maxval");
  double lo = c.attrs.get_float("minval"), hi = c.attrs.get_float("maxval");
  if (!(lo < hi) || !std::isfinite(hi - lo))
    MYCEL_THROW(ValueError, "[uniform] attribute 'minval' (", lo, ") must be less than 'maxval' (",
                hi, ") and maxval - minval finite");
  return {{sample_shape(c), dtype_attr(c)}};
}

std::vector<TensorMeta> infer_normal(const InferContext& c) {
  check_seeds(c);
  check_finite(c, "mean");
  check_finite(c, "stddev");
  if (c.attrs.get_float("stddev") < 0)
    MYCEL_THROW(ValueError, "[normal] attribute 'stddev' must be >= 0, got ",
                c.attrs.get_float("stddev"));
  return {{sample_shape(c), dtype_attr(c)}};
}

std::vector<TensorMeta> infer_randint(const InferContext& c) {
  check_seeds(c);
  DType t = dtype_attr(c);
  int64_t low = c.attrs.get_int("low"), high = c.attrs.get_int("high");
  if (low >= high)
    MYCEL_THROW(ValueError, "[randint] attribute 'low' (", low, ") must be less than 'high' (",
                high, ")");
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using L = std::numeric_limits<T>;
      if (low < int64_t(L::min()) || high - 1 > int64_t(L::max()))
        MYCEL_THROW(ValueError, "[randint] range [", low, ", ", high, ") does not fit dtype ",
                    dtype_name(t), " [", int64_t(L::min()), ", ", int64_t(L::max()), "]");
    }
  });
  return {{sample_shape(c), t}};
}

std::vector<TensorMeta> infer_bernoulli(const InferContext& c) {
  check_seeds(c);
  double p = c.attrs.get_float("p");
  if (!(p >= 0.0 && p <= 1.0))
    MYCEL_THROW(ValueError, "[bernoulli] attribute 'p' must be in [0, 1], got ", p);
  return {c.in(0)};
}

std::vector<TensorMeta> infer_dropout(const InferContext& c) {
  check_seeds(c);
  double k = c.attrs.get_float("keep_prob");
  if (!(k > 0.0 && k <= 1.0))
    MYCEL_THROW(ValueError, "[dropout] attribute 'keep_prob' must be in (0, 1], got ", k);
  return {c.in(0), c.in(0)};
}

std::vector<AttrDef> seed_attrs() {
  return {attr("seed", AttrKind::kInt, int64_t(0), {"Seed0"}),
          attr("seed2", AttrKind::kInt, int64_t(0), {"Seed1"})};
}

// A random op: attributes `head` then seed, dtype (when `dtype_default` is set) and seed2, in
// MindSpore's positional order (ops.uniform(shape, minval, maxval, seed, dtype)).
OpDef random_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
                std::vector<AttrDef> head, AttrValue dtype_default, InferFn infer, KernelFn kernel,
                std::vector<DType> dtypes, std::string grad = "none") {
  auto seeds = seed_attrs();
  head.push_back(seeds[0]);
  if (!std::holds_alternative<std::monostate>(dtype_default))
    head.push_back(attr("dtype", AttrKind::kDType, dtype_default));
  head.push_back(seeds[1]);
  OpDef d =
      make_op(std::move(name), std::move(cls), std::move(doc), std::move(inputs), std::move(head),
              std::move(infer), std::move(kernel), std::move(dtypes), std::move(grad));
  d.random = true;
  return d;
}

// Dropout shards like an elementwise op (each rank draws its slice's mask from its own stream,
// so a split run's masks differ from one process's).
OpDef with_rule(OpDef d, shard::LabelSpec (*spec)(const shard::ShardContext&)) {
  shard::set_label_rule(d, spec);
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(random) {
  using namespace cpu;
  const AttrDef shape = attr("shape", AttrKind::kInts, {}, {"size"});
  r.add(random_op(
      "uniform", "UniformReal", "Uniform floats in [minval, maxval) of the given shape.", {},
      {shape, attr("minval", AttrKind::kFloat, 0.0), attr("maxval", AttrKind::kFloat, 1.0)},
      DType::float32, infer_uniform, uniform_kernel, float_dtypes()));
  r.add(
      random_op("normal", "StandardNormal",
                "Normal floats with the given mean and stddev (Box-Muller) of the given shape.", {},
                {shape, attr("mean", AttrKind::kFloat, 0.0), attr("stddev", AttrKind::kFloat, 1.0)},
                DType::float32, infer_normal, normal_kernel, float_dtypes()));
  r.add(random_op("randint", "UniformInt", "Uniform integers in [low, high) of the given shape.",
                  {}, {attr("low", AttrKind::kInt, {}), attr("high", AttrKind::kInt, {}), shape},
                  DType::int64, infer_randint, randint_kernel, integer_dtypes()));
  r.add(random_op("bernoulli", "Bernoulli",
                  "1 with probability p, else 0, with the shape and dtype of x.", {{"x"}},
                  {attr("p", AttrKind::kFloat, 0.5)}, {}, infer_bernoulli, bernoulli_kernel,
                  all_dtypes()));
  r.add(with_rule(
      random_op("dropout", "Dropout",
                "Zeroes x's elements with probability 1 - keep_prob and scales the rest by "
                "1/keep_prob; returns (y, mask).",
                {{"x"}}, {attr("keep_prob", AttrKind::kFloat, 0.5)}, {}, infer_dropout,
                dropout_kernel, float_dtypes(), "bprop"),
      shard::elementwise_spec));
}

// Backward rule of dropout: the kept elements pass dy scaled as in the forward (the mask output
// is the draw, so the same elements are kept). The other random ops draw from attributes only or
// (bernoulli) ignore x's values: they are not differentiable.
MYCEL_REGISTER_BPROPS(random) {
  b.add("dropout", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar mask = g.tuple_get(g.out(), 1), dy = g.tuple_get(g.dout(), 0);
    DType t = g.meta(g.input(0)).dtype;
    return {g.mul(dy, g.mul(mask, g.scalar(1.0 / g.attrs().get_float("keep_prob"), t)))};
  });
}

}  // namespace mycel
