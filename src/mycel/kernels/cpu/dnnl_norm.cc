// layer_norm and batch_norm on oneDNN's normalization primitives. Scale, shift and statistics are
// float32 there whatever the data type; this file converts them, turns oneDNN's variance into our
// 1/sqrt(var + eps) outputs and applies our running-statistics rule (unbiased variance).
#include <bit>
#include <cmath>
#include <vector>

#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;
using flags = dnnl::normalization_flags;

struct NormEntry : PrimEntry {
  memory::desc data, stat, param;
};

Tensor as_f32(const Tensor& t) { return t.dtype() == DType::float32 ? t : t.to(DType::float32); }

// t, or a float32 buffer of the same size when t is not float32 (copy back with store()).
Tensor f32_buffer(const Tensor& t) {
  return t.dtype() == DType::float32 ? t : Tensor::empty({t.numel()}, DType::float32);
}
void store(const Tensor& buf, Tensor& t) {
  if (buf.data() != t.data())
    convert_elements(buf.data(), DType::float32, t.data(), t.dtype(), t.numel());
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  convert_elements(t.data(), t.dtype(), v.data(), DType::float64, t.numel());
  return v;
}
void from_doubles(const std::vector<double>& v, Tensor& t) {
  convert_elements(v.data(), DType::float64, t.data(), t.dtype(), t.numel());
}

// Builds e->pd/e->prim with `make`, marking e unusable when oneDNN has no implementation.
template <class Make>
void try_build(NormEntry& e, Make make) {
  try {
    make();
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e.ok = false;
  }
}

std::shared_ptr<NormEntry> build_layer_norm(DType dtype, int64_t outer, int64_t inner, float eps) {
  auto e = std::make_shared<NormEntry>();
  e->data = memory::desc({outer, inner}, to_dnnl(dtype), tag::ab);
  e->stat = memory::desc({outer}, memory::data_type::f32, tag::a);
  e->param = memory::desc({inner}, memory::data_type::f32, tag::a);
  try_build(*e, [&] {
    // forward_training: the only kind that outputs the mean and variance.
    dnnl::layer_normalization_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_training, e->data, e->stat, eps,
         flags::use_scale | flags::use_shift},
        default_attr(), engine());
    e->pd = pd;
    e->prim = dnnl::layer_normalization_forward(pd);
  });
  return e;
}

std::shared_ptr<NormEntry> build_batch_norm(DType dtype, int64_t n, int64_t c, int64_t spatial,
                                            bool training, float eps) {
  auto e = std::make_shared<NormEntry>();
  const auto dt = to_dnnl(dtype);
  // (N, C) or (N, C, 1, spatial): oneDNN 2.6 has its ncsp kernel for 2-d and 4-d data, only its
  // slow reference for 3-d.
  e->data = spatial == 1 ? memory::desc({n, c}, dt, tag::ab)
                         : memory::desc({n, c, 1, spatial}, dt, tag::nchw);
  e->param = memory::desc({c}, memory::data_type::f32, tag::a);
  e->stat = e->param;
  try_build(*e, [&] {
    const auto f = flags::use_scale | flags::use_shift;
    dnnl::batch_normalization_forward::primitive_desc pd(
        training
            ? dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, e->data,
                                                      eps, f)
            : dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, e->data,
                                                      eps, f | flags::use_global_stats),
        default_attr(), engine());
    e->pd = pd;
    e->prim = dnnl::batch_normalization_forward(pd);
  });
  return e;
}

}  // namespace

void layer_norm_dnnl(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                     Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps) {
  auto fallback = [&] {
    if (gamma.dtype() != x.dtype()) {  // bf16 x, float32 parameters (amp O2): widened, rounded once
      Tensor y32 = Tensor::empty(y.shape(), DType::float32);
      layer_norm_ref<float>(x.to(DType::float32), gamma, beta, y32, mean, rstd, outer, inner, eps);
      convert_elements(y32.data(), DType::float32, y.data(), y.dtype(), y.numel());
      return;
    }
    visit_float_dtype(x.dtype(), "layer_norm", [&](auto t) {
      layer_norm_ref<typename decltype(t)::type>(x, gamma, beta, y, mean, rstd, outer, inner, eps);
    });
  };
  const float feps = static_cast<float>(eps);
  if (outer == 0 || inner == 0 || !std::isfinite(feps)) return fallback();
  const SerialScope threads(8 * outer * inner);  // two passes and a rsqrt per row: ~8 MAC per item
  const std::string k =
      key("layer_norm", dtype_name(x.dtype()), outer, inner, std::bit_cast<uint32_t>(feps));
  auto e = cached<NormEntry>(k, [&] { return build_layer_norm(x.dtype(), outer, inner, feps); });
  if (!e->ok) return fallback();
  Tensor g = as_f32(gamma), b = as_f32(beta), m = f32_buffer(mean), v = f32_buffer(rstd);
  execute(*e, {{DNNL_ARG_SRC, wrap(e->data, x)},
               {DNNL_ARG_DST, wrap(e->data, y)},
               {DNNL_ARG_SCALE, wrap(e->param, g)},
               {DNNL_ARG_SHIFT, wrap(e->param, b)},
               {DNNL_ARG_MEAN, wrap(e->stat, m)},
               {DNNL_ARG_VARIANCE, wrap(e->stat, v)}});
  float* vp = v.data<float>();
  for (int64_t i = 0; i < outer; ++i)
    vp[i] = static_cast<float>(1.0 / std::sqrt(double(vp[i]) + eps));
  store(m, mean);
  store(v, rstd);
}

void batch_norm_dnnl(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                     int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                     double momentum) {
  auto fallback = [&] {
    batch_norm_ref(x, scale, bias, running_mean, running_var, y, saved_mean, saved_invstd, n, c,
                   spatial, training, eps, momentum);
  };
  const float feps = static_cast<float>(eps);
  if (n == 0 || c == 0 || spatial == 0 || !std::isfinite(feps)) return fallback();
  const SerialScope threads(8 * n * c * spatial);
  const std::string k = key("batch_norm", dtype_name(x.dtype()), n, c, spatial, training,
                            std::bit_cast<uint32_t>(feps));
  auto e = cached<NormEntry>(
      k, [&] { return build_batch_norm(x.dtype(), n, c, spatial, training, feps); });
  if (!e->ok) return fallback();
  Tensor s = as_f32(scale), b = as_f32(bias);
  // Inference reads the running statistics; training writes the batch's (biased variance).
  Tensor m = training ? Tensor::empty({c}, DType::float32) : as_f32(running_mean);
  Tensor v = training ? Tensor::empty({c}, DType::float32) : as_f32(running_var);
  execute(*e, {{DNNL_ARG_SRC, wrap(e->data, x)},
               {DNNL_ARG_DST, wrap(e->data, y)},
               {DNNL_ARG_SCALE, wrap(e->param, s)},
               {DNNL_ARG_SHIFT, wrap(e->param, b)},
               {DNNL_ARG_MEAN, wrap(e->stat, m)},
               {DNNL_ARG_VARIANCE, wrap(e->stat, v)}});
  std::vector<double> mean = to_doubles(training ? m : running_mean),
                      var = to_doubles(training ? v : running_var), invstd(c);
  for (int64_t ch = 0; ch < c; ++ch) invstd[ch] = 1.0 / std::sqrt(var[ch] + eps);
  from_doubles(mean, saved_mean);
  from_doubles(invstd, saved_invstd);
  if (!training) return;
  std::vector<double> rmean = to_doubles(running_mean), rvar = to_doubles(running_var);
  const double count = double(n) * double(spatial);
  for (int64_t ch = 0; ch < c; ++ch) {
    rmean[ch] = (1 - momentum) * rmean[ch] + momentum * mean[ch];
    rvar[ch] = (1 - momentum) * rvar[ch] + momentum * var[ch] * count / (count - 1);
  }
  from_doubles(rmean, running_mean);
  from_doubles(rvar, running_var);
}

}  // namespace mycel::cpu
