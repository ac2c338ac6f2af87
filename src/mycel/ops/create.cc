// Creation ops: tensors made from attributes alone (zeros, ones, fill, arange, eye) or from
// another tensor's shape (zeros_like, ones_like).
#include <cmath>
#include <cstring>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::attr;
using detail::Ints;
using detail::make_op;
using detail::optional_attr;

std::vector<TensorMeta> infer_shape_attr(const InferContext& c) {
  const Ints& s = c.attrs.get_ints("shape");
  detail::check_dims(s, c.op.name, "shape");
  detail::check_size(s, c.op.name);
  return {{s, c.attrs.get_dtype("dtype")}};
}

std::vector<TensorMeta> infer_like(const InferContext& c) {
  return {{c.in(0).shape, c.attrs.has("dtype") ? c.attrs.get_dtype("dtype") : c.in(0).dtype}};
}

// dynamic_fill: `shape` with the sizes named by `ref_dims` triples (position, ref, dim) taken
// from refs[ref].shape[dim], so a created tensor can follow a dimension known only when the
// program runs (analysis turns zeros/ones/fill whose shape names x.shape[k] into it). dim -1
// takes the value of refs[ref] itself, a 0-d integer tensor (a size computed by the program,
// ops.zeros((n, 4)) with n a tensor): that dim is data-dependent, and the kernel allocates.
void check_ref_dims(const InferContext& c, const Ints& s, const Ints& t) {
  if (t.size() % 3 != 0)
    MYCEL_THROW(ValueError,
                "[dynamic_fill] attribute 'ref_dims' holds (position, ref, dim) "
                "triples, got ",
                t.size(), " values");
  for (size_t i = 0; i < t.size(); i += 3) {
    const int64_t at = t[i], ref = t[i + 1], dim = t[i + 2];
    if (at < 0 || at >= static_cast<int64_t>(s.size()) || ref < 0 ||
        ref >= static_cast<int64_t>(c.num_inputs()) || dim < -1 ||
        dim >= static_cast<int64_t>(c.in(ref).shape.size()))
      MYCEL_THROW(ValueError, "[dynamic_fill] 'ref_dims' triple (", at, ", ", ref, ", ", dim,
                  ") is out of range for shape ", shape_str(s), " and ", c.num_inputs(), " refs");
    if (dim == -1 && (!c.in(ref).shape.empty() || !is_integral(c.in(ref).dtype)))
      MYCEL_THROW(TypeError,
                  "[dynamic_fill] a size given by a value must be a 0-d integer "
                  "tensor, got ",
                  dtype_name(c.in(ref).dtype), shape_str(c.in(ref).shape), " for dimension ", at);
  }
}

std::vector<TensorMeta> infer_dynamic_fill(const InferContext& c) {
  Ints s = c.attrs.get_ints("shape");
  const Ints& t = c.attrs.get_ints("ref_dims");
  check_ref_dims(c, s, t);
  std::vector<size_t> valued;  // positions sized by a value: data-dependent
  for (size_t i = 0; i < t.size(); i += 3)
    if (t[i + 2] == -1)
      valued.push_back(static_cast<size_t>(t[i]));
    else
      s[t[i]] = c.in(t[i + 1]).shape[t[i + 2]];
  for (size_t at : valued) s[at] = 0;
  detail::check_dims(s, c.op.name, "shape");
  detail::check_size(s, c.op.name);
  for (size_t at : valued) s[at] = kDataDependent;
  return {{s, c.attrs.get_dtype("dtype")}};
}

void dynamic_fill_kernel(const KernelContext& c) {
  Tensor& y = c.out(0);
  if (!y.defined()) {  // a size given by a value: read it now
    Ints s = c.attrs.get_ints("shape");
    const Ints& t = c.attrs.get_ints("ref_dims");
    for (size_t i = 0; i < t.size(); i += 3) {
      const Tensor& ref = c.in(t[i + 1]);
      s[t[i]] = t[i + 2] >= 0 ? ref.shape()[t[i + 2]] : ref.to(DType::int64).data<int64_t>()[0];
    }
    detail::check_dims(s, c.op.name, "shape");
    detail::check_size(s, c.op.name);
    y = Tensor::empty(s, c.attrs.get_dtype("dtype"));
  }
  cpu::fill_value(y, c.attrs.get_float("value"));
}

KernelFn fill_kernel(double v) {
  return [v](const KernelContext& c) { cpu::fill_value(c.out(0), v); };
}

// ---- arange ----

struct RangeSpec {
  double start, limit, delta;
  int64_t n;
  DType dtype;
};

RangeSpec range_spec(const Attrs& a) {
  RangeSpec r;
  r.start = a.get_float("start");
  r.limit = a.has("limit") ? a.get_float("limit") : r.start;
  if (!a.has("limit")) r.start = 0;  // arange(n) counts from 0
  r.delta = a.get_float("delta");
  if (r.delta == 0) MYCEL_THROW(ValueError, "[arange] delta must be non-zero");
  if (!std::isfinite(r.start) || !std::isfinite(r.limit) || !std::isfinite(r.delta))
    MYCEL_THROW(ValueError, "[arange] start, limit and delta must be finite, got ", r.start, ", ",
                r.limit, ", ", r.delta);
  // Attributes arrive as floats: integral values mean integer arguments (-> int64).
  bool integral = r.start == std::floor(r.start) && r.limit == std::floor(r.limit) &&
                  r.delta == std::floor(r.delta);
  r.dtype = a.has("dtype") ? a.get_dtype("dtype") : integral ? DType::int64 : DType::float32;
  double len = std::ceil((r.limit - r.start) / r.delta);  // numpy's length rule
  if (len > 1e12) MYCEL_THROW(ValueError, "[arange] would produce ", len, " elements");
  r.n = len > 0 ? static_cast<int64_t>(len) : 0;
  return r;
}

std::vector<TensorMeta> infer_arange(const InferContext& c) {
  RangeSpec r = range_spec(c.attrs);
  return {{{r.n}, r.dtype}};
}

void arange_kernel(const KernelContext& c) {
  RangeSpec r = range_spec(c.attrs);
  visit_dtype(r.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = c.out(0).data<T>();
    parallel_for(r.n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v = r.start + static_cast<double>(i) * r.delta;
        // Integers go through int64 so that values beyond a narrow type wrap as in numpy.
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          y[i] = static_cast<T>(static_cast<int64_t>(v));
        else
          y[i] = static_cast<T>(static_cast<compute_t<T>>(v));
      }
    });
  });
}

// ---- eye ----

std::vector<TensorMeta> infer_eye(const InferContext& c) {
  int64_t n = c.attrs.get_int("n");
  int64_t m = c.attrs.has("m") ? c.attrs.get_int("m") : n;
  if (n < 0 || m < 0) MYCEL_THROW(ValueError, "[eye] n and m must be >= 0, got ", n, " and ", m);
  detail::check_size({n, m}, "eye");
  return {{{n, m}, c.attrs.get_dtype("dtype")}};
}

void eye_kernel(const KernelContext& c) {
  Tensor& y = c.out(0);
  cpu::fill_value(y, 0);
  const int64_t n = y.shape()[0], m = y.shape()[1];
  const size_t isz = itemsize(y.dtype());
  Tensor one = Tensor::scalar(1, y.dtype());
  for (int64_t i = 0; i < std::min(n, m); ++i)
    std::memcpy(static_cast<char*>(y.data()) + (i * m + i) * isz, one.data(), isz);
}

}  // namespace

MYCEL_REGISTER_OPS(create) {
  const AttrValue f32 = DType::float32;
  auto shape_attr = [] { return attr("shape", AttrKind::kInts, {}, {"size"}); };
  r.add(with_traits(make_op("zeros", "Zeros", "A tensor of `shape` filled with 0.", {},
                            {shape_attr(), attr("dtype", AttrKind::kDType, f32)}, infer_shape_attr,
                            fill_kernel(0), all_dtypes(), "none"),
                    [](OpDef& d) {
                      d.fill = {true, 0.0, ""};
                    }));
  r.add(with_traits(make_op("ones", "Ones", "A tensor of `shape` filled with 1.", {},
                            {shape_attr(), attr("dtype", AttrKind::kDType, f32)}, infer_shape_attr,
                            fill_kernel(1), all_dtypes(), "none"),
                    [](OpDef& d) {
                      d.fill = {true, 1.0, ""};
                    }));
  // MindSpore's order: ops.fill(type, shape, value) (ops.full in Python takes size first).
  r.add(with_traits(
      make_op(
          "fill", "Fill", "A tensor of `shape` and dtype `type` filled with `value`.", {},
          {attr("type", AttrKind::kDType, {}, {"dtype"}), shape_attr(),
           attr("value", AttrKind::kFloat, {}, {"fill_value"})},
          infer_shape_attr,
          [](const KernelContext& c) { cpu::fill_value(c.out(0), c.attrs.get_float("value")); },
          all_dtypes(), "none"),
      [](OpDef& d) {
        d.fill = {true, 0.0, "value"};
      }));
  r.add(
      make_op("dynamic_fill", "DynamicFill",
              "A tensor of `shape` filled with `value`, the sizes `ref_dims` names taken from dims "
              "of `refs` (graph mode's zeros/ones/fill of a shape with a dynamic dim).",
              {{"refs", false, true}},
              {shape_attr(), attr("ref_dims", AttrKind::kInts, Ints{}),
               attr("value", AttrKind::kFloat, 0.0), attr("dtype", AttrKind::kDType, f32)},
              infer_dynamic_fill, dynamic_fill_kernel, all_dtypes(), "none"));
  r.add(make_op("zeros_like", "ZerosLike", "Zeros with x's shape (and dtype unless given).",
                {{"x"}}, {optional_attr("dtype", AttrKind::kDType)}, infer_like, fill_kernel(0),
                every_dtype(), "none"));  // fill_value takes every type
  r.add(make_op("ones_like", "OnesLike", "Ones with x's shape (and dtype unless given).", {{"x"}},
                {optional_attr("dtype", AttrKind::kDType)}, infer_like, fill_kernel(1),
                every_dtype(), "none"));
  r.add(make_op(
      "arange", "Range",
      "Evenly spaced values in [start, limit) by delta (numpy.arange); integral arguments give "
      "int64.",
      {},
      {attr("start", AttrKind::kFloat, {}),
       optional_attr("limit", AttrKind::kFloat, {"end", "stop"}),
       attr("delta", AttrKind::kFloat, 1.0, {"step"}), optional_attr("dtype", AttrKind::kDType)},
      infer_arange, arange_kernel, all_dtypes(), "none"));
  r.add(make_op("eye", "Eye", "The (n, m) identity matrix.", {},
                {attr("n", AttrKind::kInt, {}), optional_attr("m", AttrKind::kInt),
                 attr("dtype", AttrKind::kDType, f32)},
                infer_eye, eye_kernel, all_dtypes(), "none"));
}

}  // namespace mycel
