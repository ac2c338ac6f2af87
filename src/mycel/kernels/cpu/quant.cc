// int8 kernels (see quant.h): oneDNN's u8 x s8 convolution and matmul with per-channel output
// scales, runtime zero points and a fused relu; exact int32 reference loops where oneDNN cannot
// be exact on this CPU or has no implementation.
#include "mycel/kernels/cpu/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>

#include "mycel/core/error.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

// round-to-nearest-even then saturate into Q; NaN goes to the zero point.
template <class Q>
inline Q saturate(float v, int32_t zp) {
  if (!(v == v)) return static_cast<Q>(zp);
  v = std::nearbyint(v) + static_cast<float>(zp);
  v = std::min(std::max(v, float(std::numeric_limits<Q>::min())),
               float(std::numeric_limits<Q>::max()));
  return static_cast<Q>(v);
}

// The epilogue shared by the reference loops.
inline void store(float yf, const QuantSpec& q, bool u8, void* out, int64_t i) {
  if (q.relu) yf = std::max(yf, 0.0f);
  if (u8)
    static_cast<uint8_t*>(out)[i] = saturate<uint8_t>(yf / q.y_scale, q.y_zp);
  else
    static_cast<float*>(out)[i] = yf;
}

uint64_t fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Identity of the static parts of a QuantSpec (oneDNN bakes output scales into the primitive).
uint64_t spec_hash(const QuantSpec& q, bool u8) {
  uint64_t h = fnv(q.w_scale.data(), q.w_scale.size() * sizeof(float));
  h = fnv(&q.x_scale, sizeof q.x_scale, h);
  if (u8) h = fnv(&q.y_scale, sizeof q.y_scale, h);
  return h;
}

// Per-output-channel scales of the primitive: x_scale * w_scale[o] (/ y_scale for uint8 output).
std::vector<float> output_scales(const QuantSpec& q, bool u8) {
  std::vector<float> s(q.w_scale.size());
  for (size_t o = 0; o < s.size(); ++o)
    s[o] = u8 ? q.x_scale * q.w_scale[o] / q.y_scale : q.x_scale * q.w_scale[o];
  return s;
}

// oneDNN 2.x adds the bias to the int32 accumulator before the output scales, so it is passed in
// accumulator units: b / (x_scale * w_scale).
const float* scaled_bias(const Tensor* bias, const QuantSpec& q) {
  if (!bias) return nullptr;
  thread_local std::vector<float> buf;
  buf.resize(q.w_scale.size());
  const float* b = bias->data<float>();
  for (size_t o = 0; o < buf.size(); ++o) buf[o] = b[o] / (q.x_scale * q.w_scale[o]);
  return buf.data();
}

dnnl::primitive_attr int8_attr(const QuantSpec& q, bool u8, int scale_mask) {
  dnnl::primitive_attr attr = default_attr();
  attr.set_output_scales(scale_mask, output_scales(q, u8));
  if (q.x_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (u8 && q.y_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  if (q.relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return attr;
}

// Runtime zero points, when the primitive takes them.
void add_zero_points(std::unordered_map<int, memory>& args, const QuantSpec& q, bool u8,
                     int32_t* store) {
  const memory::desc md({1}, memory::data_type::s32, tag::x);
  store[0] = q.x_zp;
  store[1] = q.y_zp;
  if (q.x_zp != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = memory(md, engine(), &store[0]);
  if (u8 && q.y_zp != 0)
    args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = memory(md, engine(), &store[1]);
}

struct QConvEntry : Entry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory::desc src_user, wei_user, dst_user, bias_md;
  std::optional<dnnl::reorder> src_r, wei_r, dst_r;
  std::string impl;
  // Constant weights in the primitive's layout, by buffer (the source kept alive, as conv2d does).
  std::mutex mu;
  std::unordered_map<const void*, std::pair<Tensor, Tensor>> const_wei;
};

std::optional<dnnl::reorder> reorder_if(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  return dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
}

std::shared_ptr<QConvEntry> build_conv(const WindowGeom& g, bool u8, bool has_bias,
                                       const QuantSpec& q) {
  auto e = std::make_shared<QConvEntry>();
  const auto out_dt = u8 ? memory::data_type::u8 : memory::data_type::f32;
  const memory::dims src{g.n, g.c, g.h, g.w}, dst{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei = g.groups > 1
                               ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                               : memory::dims{g.oc, g.c, g.kh, g.kw};
  e->src_user = memory::desc(src, memory::data_type::u8, tag::nchw);
  e->dst_user = memory::desc(dst, out_dt, tag::nchw);
  e->wei_user = memory::desc(wei, memory::data_type::s8, g.groups > 1 ? tag::goihw : tag::oihw);
  e->bias_md = memory::desc({g.oc}, memory::data_type::f32, tag::x);
  try {
    const memory::desc src_any(src, memory::data_type::u8, tag::any),
        dst_any(dst, out_dt, tag::any), wei_any(wei, memory::data_type::s8, tag::any);
    const memory::dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl},
        pad_r{g.pb, g.pr};
    const auto kind = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    auto d = has_bias ? dnnl::convolution_forward::desc(kind, alg, src_any, wei_any, e->bias_md,
                                                        dst_any, strides, dil, pad_l, pad_r)
                      : dnnl::convolution_forward::desc(kind, alg, src_any, wei_any, dst_any,
                                                        strides, dil, pad_l, pad_r);
    e->pd = dnnl::convolution_forward::primitive_desc(d, int8_attr(q, u8, 1 << 1), engine());
    e->prim = dnnl::convolution_forward(e->pd);
    e->impl = e->pd.impl_info_str();
    // One input channel: NCHW bytes are already NHWC, so a plain NHWC source needs no reorder.
    if (g.c == 1 && e->pd.src_desc() == memory::desc(src, memory::data_type::u8, tag::nhwc))
      e->src_user = e->pd.src_desc();
    e->src_r = reorder_if(e->src_user, e->pd.src_desc());
    e->wei_r = reorder_if(e->wei_user, e->pd.weights_desc());
    e->dst_r = reorder_if(e->pd.dst_desc(), e->dst_user);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

// Weights `user` (of tensor w) in the primitive's layout `to`: reordered into a staging buffer per
// call, or, for constant weights, once per weight buffer (the source kept alive so its address
// cannot be reused by another tensor; bounded: cleared past 64 buffers).
memory packed_weights(const memory::desc& to, dnnl::reorder& r, memory user, const Tensor& w,
                      bool constant, std::mutex& mu,
                      std::unordered_map<const void*, std::pair<Tensor, Tensor>>& cache,
                      Tensor& hold) {
  auto reorder_into = [&](void* buf) {
    memory m(to, engine(), buf);
    r.execute(stream(), user, m);
    stream().wait();
    return m;
  };
  if (!constant) {
    hold = staging_buffer(1, to.get_size());
    return reorder_into(hold.data());
  }
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(w.data());
  if (it == cache.end()) {
    if (cache.size() >= 64) cache.clear();
    Tensor buf = Tensor::empty({static_cast<int64_t>(to.get_size())}, DType::uint8);
    reorder_into(buf.data());
    it = cache.emplace(w.data(), std::make_pair(w, buf)).first;
  }
  return memory(to, engine(), it->second.second.data());
}

memory conv_weights(QConvEntry& e, const Tensor& w, bool constant, Tensor& hold) {
  const memory user = wrap(e.wei_user, w);
  if (!e.wei_r) return user;
  return packed_weights(e.pd.weights_desc(), *e.wei_r, user, w, constant, e.mu, e.const_wei, hold);
}

// Whether weights of a constant buffer fit s7, remembered per buffer (the source kept alive so the
// address cannot be reused by other weights; bounded: forgotten past 512 buffers).
bool weights_safe_cached(const Tensor& w, bool constant) {
  if (cpu_has_vnni()) return true;
  if (!constant) return int8_weights_safe(w);
  static std::mutex mu;
  static std::unordered_map<const void*, std::pair<Tensor, bool>> seen;
  std::lock_guard<std::mutex> lock(mu);
  auto it = seen.find(w.data());
  if (it == seen.end()) {
    if (seen.size() >= 512) seen.clear();
    it = seen.emplace(w.data(), std::make_pair(w, int8_weights_safe(w))).first;
  }
  return it->second.second;
}

struct QMatmulEntry : Entry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_md, b_md, bias_md, c_md;
  std::optional<dnnl::reorder> wei_r;  // to the primitive's packed weights (with compensation)
  std::string impl;
  std::mutex mu;
  std::unordered_map<const void*, std::pair<Tensor, Tensor>> const_wei;
};

std::shared_ptr<QMatmulEntry> build_matmul(int64_t m, int64_t k, int64_t n, bool u8, bool has_bias,
                                           const QuantSpec& q) {
  auto e = std::make_shared<QMatmulEntry>();
  e->a_md = memory::desc({m, k}, memory::data_type::u8, memory::dims{k, 1});
  e->b_md =
      memory::desc({k, n}, memory::data_type::s8, memory::dims{1, k});  // w (n, k) read transposed
  e->bias_md = memory::desc({1, n}, memory::data_type::f32, memory::dims{n, 1});
  e->c_md =
      memory::desc({m, n}, u8 ? memory::data_type::u8 : memory::data_type::f32, memory::dims{n, 1});
  try {
    // Weights in the layout the primitive picks: packed once per constant weight buffer rather
    // than by the GEMM on every call (which dominates at batch 1).
    const memory::desc b_any({k, n}, memory::data_type::s8, tag::any);
    auto d = has_bias ? dnnl::matmul::desc(e->a_md, b_any, e->bias_md, e->c_md)
                      : dnnl::matmul::desc(e->a_md, b_any, e->c_md);
    e->pd = dnnl::matmul::primitive_desc(d, int8_attr(q, u8, 1 << 1), engine());
    e->prim = dnnl::matmul(e->pd);
    e->impl = e->pd.impl_info_str();
    e->wei_r = reorder_if(e->b_md, e->pd.weights_desc());
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

}  // namespace

std::string Int8Path::name() const {
  switch (kind) {
    case Kind::kOneDnn:
      return "onednn:" + impl;
    case Kind::kRows:
      return "rows";
    case Kind::kReference:
      return "reference";
    case Kind::kNone:
      break;
  }
  return "none";
}

// Branch-free form of saturate() so the loop vectorizes (roundps, blends): it sat at 5% of an
// int8 ResNet-18 run as a scalar loop.
template <class Q>
void quantize_loop(const float* X, Q* Y, int64_t n, float scale, int32_t zp) {
  const float z = static_cast<float>(zp);
  const float lo = static_cast<float>(std::numeric_limits<Q>::min());
  const float hi = static_cast<float>(std::numeric_limits<Q>::max());
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(X[i] / scale) + z;
    v = v < lo ? lo : v;  // NaN fails both comparisons ...
    v = v > hi ? hi : v;
    v = v == v ? v : z;  // ... and goes to the zero point here
    Y[i] = static_cast<Q>(static_cast<int32_t>(v));
  }
}

void quantize_linear(const Tensor& x, Tensor& y, float scale, int32_t zp) {
  if (y.dtype() == DType::uint8)
    quantize_loop(x.data<float>(), y.data<uint8_t>(), x.numel(), scale, zp);
  else
    quantize_loop(x.data<float>(), y.data<int8_t>(), x.numel(), scale, zp);
}

void dequantize_linear(const Tensor& x, Tensor& y, float scale, int32_t zp) {
  float* Y = y.data<float>();
  const int64_t n = x.numel();
  if (x.dtype() == DType::uint8) {
    const uint8_t* X = x.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i)
      Y[i] = static_cast<float>(static_cast<int32_t>(X[i]) - zp) * scale;
  } else {
    const int8_t* X = x.data<int8_t>();
    for (int64_t i = 0; i < n; ++i)
      Y[i] = static_cast<float>(static_cast<int32_t>(X[i]) - zp) * scale;
  }
}

bool cpu_has_vnni() {
  static const bool v = [] {
    const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    auto has = [&](unsigned m) { return (isa & m) == m; };
    return has(static_cast<unsigned>(dnnl_cpu_isa_avx512_core_vnni)) ||
           has(static_cast<unsigned>(dnnl_cpu_isa_avx2_vnni));
  }();
  return v;
}

bool int8_weights_safe(const Tensor& w) {
  if (cpu_has_vnni()) return true;
  const int8_t* p = w.data<int8_t>();
  const int64_t n = w.numel();
  for (int64_t i = 0; i < n; ++i)
    if (p[i] < -64 || p[i] > 63) return false;
  return true;
}

void qconv2d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g, const QuantSpec& q) {
  const uint8_t* X = x.data<uint8_t>();
  const int8_t* W = w.data<int8_t>();
  const float* B = bias ? bias->data<float>() : nullptr;
  const bool u8 = y.dtype() == DType::uint8;
  const int64_t cg = g.c / g.groups, og = g.oc / g.groups;
  int64_t i = 0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.oc; ++o) {
      const int64_t c0 = (o / og) * cg;
      const float s = q.x_scale * q.w_scale[o];
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow, ++i) {
          int32_t acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < g.kh; ++kh) {
              const int64_t ih = oh * g.sh - g.pt + kh * g.dh;
              if (ih < 0 || ih >= g.h) continue;  // padding is a real zero: (x - zp) = 0
              for (int64_t kw = 0; kw < g.kw; ++kw) {
                const int64_t iw = ow * g.sw - g.pl + kw * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                acc +=
                    (static_cast<int32_t>(X[((n * g.c + c0 + c) * g.h + ih) * g.w + iw]) - q.x_zp) *
                    static_cast<int32_t>(W[((o * cg + c) * g.kh + kh) * g.kw + kw]);
              }
            }
          store(static_cast<float>(acc) * s + (B ? B[o] : 0.0f), q, u8, y.data(), i);
        }
    }
}

void qdense_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m,
                int64_t k, int64_t n, const QuantSpec& q) {
  const uint8_t* X = x.data<uint8_t>();
  const int8_t* W = w.data<int8_t>();
  const float* B = bias ? bias->data<float>() : nullptr;
  const bool u8 = y.dtype() == DType::uint8;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t o = 0; o < n; ++o) {
      int32_t acc = 0;
      for (int64_t j = 0; j < k; ++j)
        acc += (static_cast<int32_t>(X[r * k + j]) - q.x_zp) * static_cast<int32_t>(W[o * k + j]);
      store(static_cast<float>(acc) * (q.x_scale * q.w_scale[o]) + (B ? B[o] : 0.0f), q, u8,
            y.data(), r * n + o);
    }
}

namespace {
// Records the path taken, when the caller asked for it.
void report(Int8Path* path, Int8Path::Kind kind, const std::string& impl = {}) {
  if (!path) return;
  path->kind = kind;
  path->impl = impl;
}
}  // namespace

void qconv2d(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const WindowGeom& g,
             const QuantSpec& q, bool constant, Int8Path* path) {
  report(path, Int8Path::Kind::kNone);
  if (y.numel() == 0) return;
  const bool u8 = y.dtype() == DType::uint8;
  if (x.numel() == 0 || w.numel() == 0 || !weights_safe_cached(w, constant)) {
    report(path, Int8Path::Kind::kReference);
    return qconv2d_ref(x, w, bias, y, g, q);
  }
  const std::string k =
      key("qconv2d", g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pb, g.pl,
          g.pr, g.groups, bias != nullptr, u8, q.relu, q.x_zp != 0, q.y_zp != 0, spec_hash(q, u8));
  auto e = cached<QConvEntry>(k, [&] { return build_conv(g, u8, bias != nullptr, q); });
  if (!e->ok) {
    report(path, Int8Path::Kind::kReference);
    return qconv2d_ref(x, w, bias, y, g, q);
  }
  report(path, Int8Path::Kind::kOneDnn, e->impl);
  Tensor src_buf, wei_buf, dst_buf;
  memory src = wrap(e->src_user, x);
  if (e->src_r) {
    src_buf = staging_buffer(0, e->pd.src_desc().get_size());
    memory m(e->pd.src_desc(), engine(), src_buf.data());
    e->src_r->execute(stream(), src, m);
    src = m;
  }
  memory wei = conv_weights(*e, w, constant, wei_buf);
  memory dst = wrap(e->dst_user, y);
  if (e->dst_r) {
    dst_buf = staging_buffer(2, e->pd.dst_desc().get_size());
    dst = memory(e->pd.dst_desc(), engine(), dst_buf.data());
  }
  Tensor pad = scratchpad(e->pd);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DST, dst},
      {DNNL_ARG_SCRATCHPAD, memory(e->pd.scratchpad_desc(), engine(), pad.data())}};
  if (bias)
    args[DNNL_ARG_BIAS] = memory(e->bias_md, engine(), const_cast<float*>(scaled_bias(bias, q)));
  int32_t zps[2];
  add_zero_points(args, q, u8, zps);
  e->prim.execute(stream(), args);
  if (e->dst_r) {
    memory user = wrap(e->dst_user, y);
    e->dst_r->execute(stream(), dst, user);
  }
  stream().wait();
}

// A few rows (batch-1 inference): a matrix-vector loop beats the GEMM's setup. Products are
// widened to int16 and summed in int32 (vpmaddwd once vectorized), so it is exact for any int8
// weights, 8-bit ones included, on any CPU.
void qdense_rows(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m,
                 int64_t k, int64_t n, const QuantSpec& q) {
  const uint8_t* X = x.data<uint8_t>();
  const int8_t* W = w.data<int8_t>();
  const float* B = bias ? bias->data<float>() : nullptr;
  const bool u8 = y.dtype() == DType::uint8;
  for (int64_t r = 0; r < m; ++r) {
    const uint8_t* xr = X + r * k;
    for (int64_t o = 0; o < n; ++o) {
      const int8_t* wo = W + o * k;
      int32_t acc = 0, wsum = 0;
      for (int64_t j = 0; j < k; ++j) {
        acc += static_cast<int16_t>(xr[j]) * static_cast<int16_t>(wo[j]);
        wsum += wo[j];
      }
      acc -= q.x_zp * wsum;
      store(static_cast<float>(acc) * (q.x_scale * q.w_scale[o]) + (B ? B[o] : 0.0f), q, u8,
            y.data(), r * n + o);
    }
  }
}

void qdense(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m, int64_t k,
            int64_t n, const QuantSpec& q, bool constant, Int8Path* path) {
  report(path, Int8Path::Kind::kNone);
  if (y.numel() == 0) return;
  const bool u8 = y.dtype() == DType::uint8;
  if (m <= 4) {
    report(path, Int8Path::Kind::kRows);
    return qdense_rows(x, w, bias, y, m, k, n, q);
  }
  if (k == 0 || !weights_safe_cached(w, constant)) {
    report(path, Int8Path::Kind::kReference);
    return qdense_ref(x, w, bias, y, m, k, n, q);
  }
  const std::string kk = key("qdense", m, k, n, bias != nullptr, u8, q.relu, q.x_zp != 0,
                             q.y_zp != 0, spec_hash(q, u8));
  auto e = cached<QMatmulEntry>(kk, [&] { return build_matmul(m, k, n, u8, bias != nullptr, q); });
  if (!e->ok) {
    report(path, Int8Path::Kind::kReference);
    return qdense_ref(x, w, bias, y, m, k, n, q);
  }
  report(path, Int8Path::Kind::kOneDnn, e->impl);
  Tensor wei_buf;
  memory wei = wrap(e->b_md, w);
  if (e->wei_r)
    wei = packed_weights(e->pd.weights_desc(), *e->wei_r, wei, w, constant, e->mu, e->const_wei,
                         wei_buf);
  Tensor pad = scratchpad(e->pd);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, wrap(e->a_md, x)},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DST, wrap(e->c_md, y)},
      {DNNL_ARG_SCRATCHPAD, memory(e->pd.scratchpad_desc(), engine(), pad.data())}};
  if (bias)
    args[DNNL_ARG_BIAS] = memory(e->bias_md, engine(), const_cast<float*>(scaled_bias(bias, q)));
  int32_t zps[2];
  add_zero_points(args, q, u8, zps);
  e->prim.execute(stream(), args);
  stream().wait();
}

void max_pool2d_u8(const Tensor& x, Tensor& y, const WindowGeom& g) {
  const uint8_t* X = x.data<uint8_t>();
  uint8_t* Y = y.data<uint8_t>();
  if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.pt == 0 && g.pl == 0 &&
      g.oh * 2 <= g.h &&
      g.ow * 2 <= g.w) {  // the common 2x2 / 2 pooling: no window clipping, a tight loop
    for (int64_t p = 0; p < g.n * g.c; ++p) {
      const uint8_t* xp = X + p * g.h * g.w;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const uint8_t* r0 = xp + 2 * oh * g.w;
        const uint8_t* r1 = r0 + g.w;
        for (int64_t ow = 0; ow < g.ow; ++ow)
          *Y++ =
              std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), std::max(r1[2 * ow], r1[2 * ow + 1]));
      }
    }
    return;
  }
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const uint8_t* xp = X + p * g.h * g.w;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t h0 = std::max<int64_t>(oh * g.sh - g.pt, 0),
                    h1 = std::min(oh * g.sh - g.pt + g.kh, g.h);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t w0 = std::max<int64_t>(ow * g.sw - g.pl, 0),
                      w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
        uint8_t m = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) m = std::max(m, xp[h * g.w + w]);
        *Y++ = m;
      }
    }
  }
}

}  // namespace mycel::cpu
