// int8 kernels (see quant.h): oneDNN's u8 x s8 convolution and matmul with per-channel output
// scales, runtime zero points and a fused relu; exact int32 reference loops where oneDNN cannot
// be exact on this CPU or has no implementation.
#include "mycel/kernels/cpu/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "mycel/core/error.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/quant_loop.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

// The requantization of oneDNN's int8 primitives (int8_attr, scaled_bias, output_scales): the
// bias in accumulator units added to the int32 sum converted to float, times the per-channel
// output scale (x_scale * w_scale[o], / y_scale for a uint8 output), then relu or relu6's clip in
// those units, then for uint8 the zero point added, clamped and rounded to nearest even. The
// exact loops apply the same float operations in the same order, so every path gives the same
// outputs to the bit. (Multiplying by x_scale * w_scale[o] and adding the bias in output units,
// then dividing by y_scale, gives the same real number rounded differently: a value on a
// rounding boundary then went the other way on oneDNN than on the exact loops, and over
// ResNet-18's 21 int8 layers those flips moved logits by up to 2.4 quantization steps.)
struct Requant {
  std::vector<float> bias, scale;
  float hi = 0, zp = 0;
  bool relu = false, relu6 = false, u8 = false;

  Requant(const QuantSpec& q, const float* b, bool u8_) : u8(u8_) {
    const size_t n = q.w_scale.size();
    bias.assign(n, 0.0f);
    scale.resize(n);
    for (size_t o = 0; o < n; ++o) {
      if (b) bias[o] = b[o] / (q.x_scale * q.w_scale[o]);  // as scaled_bias
      scale[o] = u8 ? q.x_scale * q.w_scale[o] / q.y_scale : q.x_scale * q.w_scale[o];
    }
    relu = q.relu;
    relu6 = q.relu && q.relu6;  // as int8_attr: relu6 is a clip post-op in place of relu
    hi = u8 ? 6.0f / q.y_scale : 6.0f;
    zp = static_cast<float>(q.y_zp);
  }
  // The float32 output, or the uint8 value as a float.
  float operator()(int32_t acc, int64_t o) const {
    float v = (static_cast<float>(acc) + bias[o]) * scale[o];
    if (relu) v = relu6 ? std::min(std::max(v, 0.0f), hi) : std::max(v, 0.0f);
    if (u8) v = std::nearbyint(std::min(std::max(v + zp, 0.0f), 255.0f));
    return v;
  }
  void store(int32_t acc, int64_t o, void* out, int64_t i) const {
    const float v = (*this)(acc, o);
    if (u8)
      static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
    else
      static_cast<float*>(out)[i] = v;
  }
};

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
    if (q.relu6)  // the post-op sees the output-scaled value: y_f / y_scale for a uint8 output
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, u8 ? 6.0f / q.y_scale : 6.0f);
    else
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
                                       const QuantSpec& q, Int8Layout layout) {
  auto e = std::make_shared<QConvEntry>();
  const auto out_dt = u8 ? memory::data_type::u8 : memory::data_type::f32;
  const memory::dims src{g.n, g.c, g.h, g.w}, dst{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei = g.groups > 1
                               ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                               : memory::dims{g.oc, g.c, g.kh, g.kw};
  e->src_user = memory::desc(src, memory::data_type::u8, layout.src_nhwc ? tag::nhwc : tag::nchw);
  e->dst_user = memory::desc(dst, out_dt, layout.dst_nhwc ? tag::nhwc : tag::nchw);
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
    if (g.c == 1 && !layout.src_nhwc &&
        e->pd.src_desc() == memory::desc(src, memory::data_type::u8, tag::nhwc))
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
// MYCEL_INT8_EXACT=1 runs every qconv2d and qdense on the exact int32 loops instead of oneDNN
// (for measuring how far oneDNN's requantization is from them; see docs/edge.md).
bool force_exact() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_INT8_EXACT");
    return v && std::string(v) == "1";
  }();
  return on;
}

bool weights_safe_cached(const Tensor& w, bool constant) {
  if (force_exact()) return false;
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

// Small layers (batch-1 LeNet-sized convolutions and dense layers): int8 weights widened to
// int16 and packed (k / 2, n8, 2), so one vpmaddwd multiplies a broadcast pair of activations by
// the pair's weights of 8 outputs and adds the two products into int32: exact for any int8
// weights (u8 * s8 fits int16), unlike vpmaddubsw, and no oneDNN call or reorder.
struct Packed16 {
  Tensor keep;                // the weights it was packed from (constant buffers only)
  std::vector<int16_t> w;     // (k2, n8, 2)
  std::vector<int32_t> wsum;  // per output: sum of its weights (for the zero point)
  int64_t k = 0, k2 = 0, n = 0, n8 = 0;
};

Packed16 pack16(const Tensor& w, int64_t n, int64_t k) {
  Packed16 p;
  p.k = k, p.k2 = (k + 1) / 2, p.n = n, p.n8 = (n + 7) / 8 * 8;
  p.w.assign(p.k2 * p.n8 * 2, 0);
  p.wsum.assign(n, 0);
  const int8_t* W = w.data<int8_t>();
  for (int64_t o = 0; o < n; ++o)
    for (int64_t j = 0; j < k; ++j) {
      p.w[((j / 2) * p.n8 + o) * 2 + j % 2] = W[o * k + j];
      p.wsum[o] += W[o * k + j];
    }
  return p;
}

// The packing of constant weights, once per buffer (the source kept alive so its address cannot
// be reused by other weights; bounded like the other caches); other weights are packed per call.
std::shared_ptr<const Packed16> packed16(const Tensor& w, int64_t n, int64_t k, bool constant) {
  if (!constant) return std::make_shared<Packed16>(pack16(w, n, k));
  static std::mutex mu;
  static std::unordered_map<const void*, std::shared_ptr<Packed16>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(w.data());
  if (it == cache.end() || it->second->n != n || it->second->k != k) {
    if (cache.size() >= 256) cache.clear();
    auto p = std::make_shared<Packed16>(pack16(w, n, k));
    p->keep = w;
    it = cache.insert_or_assign(w.data(), std::move(p)).first;
  }
  return it->second;
}

// acc[0, 8 * NB) of outputs [o0, ...) for one row given as int32 pairs (x[2j] | x[2j+1] << 16).
template <int NB>
void madd_block(const int32_t* xp, const int16_t* wp, int64_t k2, int64_t n8, int64_t o0,
                int32_t* acc) {
#ifdef __AVX2__
  __m256i a[NB];
  for (int b = 0; b < NB; ++b) a[b] = _mm256_setzero_si256();
  for (int64_t j = 0; j < k2; ++j) {
    const __m256i xv = _mm256_set1_epi32(xp[j]);
    const int16_t* wj = wp + (j * n8 + o0) * 2;
    for (int b = 0; b < NB; ++b)
      a[b] = _mm256_add_epi32(
          a[b],
          _mm256_madd_epi16(xv, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wj + 16 * b))));
  }
  for (int b = 0; b < NB; ++b) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 8 * b), a[b]);
#else
  std::fill(acc, acc + 8 * NB, 0);
  for (int64_t j = 0; j < k2; ++j) {
    const int32_t lo = static_cast<int16_t>(xp[j] & 0xFFFF), hi = xp[j] >> 16;
    for (int i = 0; i < 8 * NB; ++i)
      acc[i] += lo * wp[((j * n8) + o0 + i) * 2] + hi * wp[((j * n8) + o0 + i) * 2 + 1];
  }
#endif
}

using MaddFn = void (*)(const int32_t*, const int16_t*, int64_t, int64_t, int64_t, int32_t*);
constexpr MaddFn kMadd[8] = {madd_block<1>, madd_block<2>, madd_block<3>, madd_block<4>,
                             madd_block<5>, madd_block<6>, madd_block<7>, madd_block<8>};

// Four rows at once (a convolution's output pixels), outputs [o0, o0 + 8 * NB): four times the
// independent accumulator chains of madd_block, each weight load shared by the four.
// acc[r * stride + i] for row r, output o0 + i.
template <int NB>
void madd_pixels(const int32_t* const* xp, const int16_t* wp, int64_t k2, int64_t n8, int64_t o0,
                 int32_t* acc, int64_t stride) {
#ifdef __AVX2__
  __m256i a[4][NB];
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < NB; ++b) a[r][b] = _mm256_setzero_si256();
  for (int64_t j = 0; j < k2; ++j) {
    const int16_t* wj = wp + (j * n8 + o0) * 2;
    __m256i w[NB];
    for (int b = 0; b < NB; ++b)
      w[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wj + 16 * b));
    for (int r = 0; r < 4; ++r) {
      const __m256i xv = _mm256_set1_epi32(xp[r][j]);
      for (int b = 0; b < NB; ++b) a[r][b] = _mm256_add_epi32(a[r][b], _mm256_madd_epi16(xv, w[b]));
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < NB; ++b)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * stride + 8 * b), a[r][b]);
#else
  for (int r = 0; r < 4; ++r) madd_block<NB>(xp[r], wp, k2, n8, o0, acc + r * stride);
#endif
}

// All n outputs of one row: acc[o] = sum_j x[j] * w[o, j] (x as int32 pairs).
void madd_row(const int32_t* xp, const Packed16& p, int32_t* acc) {
  alignas(32) int32_t buf[64];
  for (int64_t o0 = 0; o0 < p.n8; o0 += 64) {
    const int64_t nb = std::min<int64_t>(8, (p.n8 - o0) / 8);
    kMadd[nb - 1](xp, p.w.data(), p.k2, p.n8, o0, buf);
    std::copy(buf, buf + std::min<int64_t>(8 * nb, p.n - o0), acc + o0);
  }
}

// Whether qconv2d's small path takes this convolution: one group, few outputs per pixel, a
// short patch, and little work in all (past that oneDNN's threaded kernels win).
bool small_conv(const WindowGeom& g) {
  const int64_t patch = g.c * g.kh * g.kw;
  return g.groups == 1 && g.oc <= 64 && patch <= 512 &&
         g.n * g.oh * g.ow * g.oc * patch <= (int64_t{1} << 21);
}

}  // namespace

std::string Int8Path::name() const {
  switch (kind) {
    case Kind::kOneDnn:
      return "onednn:" + impl;
    case Kind::kRows:
      return "rows";
    case Kind::kSmall:
      return "small";
    case Kind::kDirect:
      return "direct";
    case Kind::kReference:
      return "reference";
    case Kind::kNone:
      break;
  }
  return "none";
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
  const Requant rq(q, B, y.dtype() == DType::uint8);
  const int64_t cg = g.c / g.groups, og = g.oc / g.groups;
  int64_t i = 0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.oc; ++o) {
      const int64_t c0 = (o / og) * cg;
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
          rq.store(acc, o, y.data(), i);
        }
    }
}

void qdense_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m,
                int64_t k, int64_t n, const QuantSpec& q) {
  const uint8_t* X = x.data<uint8_t>();
  const int8_t* W = w.data<int8_t>();
  const float* B = bias ? bias->data<float>() : nullptr;
  const Requant rq(q, B, y.dtype() == DType::uint8);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t o = 0; o < n; ++o) {
      int32_t acc = 0;
      for (int64_t j = 0; j < k; ++j)
        acc += (static_cast<int32_t>(X[r * k + j]) - q.x_zp) * static_cast<int32_t>(W[o * k + j]);
      rq.store(acc, o, y.data(), r * n + o);
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

// The small path of qconv2d: each output pixel's patch gathered as int32 pairs (padding reads
// the zero point, whose (x - zp) is 0), four pixels at a time through madd_pixels into int32
// accumulators per channel, then the epilogue as one vectorizable loop per channel.
void qconv2d_small(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                   const WindowGeom& g, const QuantSpec& q, bool constant) {
  const int64_t patch = g.c * g.kh * g.kw, ohw = g.oh * g.ow, npix = g.n * ohw;
  const std::shared_ptr<const Packed16> packed = packed16(w, g.oc, patch, constant);
  const Packed16& p = *packed;
  const uint8_t* X = x.data<uint8_t>();
  const uint16_t zp = static_cast<uint16_t>(q.x_zp);
  const int64_t row_len = p.k2;
  std::vector<int32_t> rows(4 * row_len, 0);
  std::vector<uint16_t> border(p.k2 * 2, 0);    // a border window's values (the odd tail stays 0)
  std::vector<int32_t> acc((npix + 3) * p.n8);  // (pixel, n8) rows; 3 spare for a short last group
  // A window inside the image reads X at its corner plus a fixed offset per tap; border windows
  // check each tap (padding reads the zero point).
  std::vector<int64_t> tap(patch);
  for (int64_t c = 0, t = 0; c < g.c; ++c)
    for (int64_t kh = 0; kh < g.kh; ++kh)
      for (int64_t kw = 0; kw < g.kw; ++kw) tap[t++] = (c * g.h + kh * g.dh) * g.w + kw * g.dw;
  // Pairs are written as whole int32s: madd_pixels reads them so (two 16-bit stores read back
  // as one 32-bit load stall store forwarding, which cost more than the arithmetic).
  auto gather = [&](int64_t n, int64_t oh, int64_t ow, int32_t* out) {
    const int64_t ih0 = oh * g.sh - g.pt, iw0 = ow * g.sw - g.pl;
    if (ih0 >= 0 && iw0 >= 0 && ih0 + (g.kh - 1) * g.dh < g.h && iw0 + (g.kw - 1) * g.dw < g.w) {
      const uint8_t* corner = X + (n * g.c * g.h + ih0) * g.w + iw0;
      int64_t t = 0;
      for (; t + 1 < patch; t += 2)
        out[t / 2] = static_cast<int32_t>(corner[tap[t]] | (uint32_t{corner[tap[t + 1]]} << 16));
      if (t < patch) out[t / 2] = corner[tap[t]];
      return;
    }
    uint16_t* r = border.data();
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const int64_t ih = ih0 + kh * g.dh;
        if (ih < 0 || ih >= g.h) {
          r = std::fill_n(r, g.kw, zp);
          continue;
        }
        const uint8_t* xr = X + ((n * g.c + c) * g.h + ih) * g.w;
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const int64_t iw = iw0 + kw * g.dw;
          *r++ = iw < 0 || iw >= g.w ? zp : xr[iw];
        }
      }
    for (int64_t j = 0; j < p.k2; ++j)
      out[j] = static_cast<int32_t>(border[2 * j] | (uint32_t{border[2 * j + 1]} << 16));
  };
  int64_t n = 0, oh = 0, ow = 0;  // the next pixel to gather
  for (int64_t p0 = 0; p0 < npix; p0 += 4) {
    const int32_t* xp[4];
    for (int r = 0; r < 4; ++r) {  // a short last group repeats its last pixel's row
      if (p0 + r < npix) {
        gather(n, oh, ow, rows.data() + r * row_len);
        if (++ow == g.ow) ow = 0, ++oh;
        if (oh == g.oh) oh = 0, ++n;
      }
      xp[r] = rows.data() + std::min<int64_t>(r, npix - 1 - p0) * row_len;
    }
    for (int64_t o0 = 0; o0 < p.n8; o0 += 16)  // acc has 3 spare rows for a short last group
      (p.n8 - o0 >= 16 ? madd_pixels<2> : madd_pixels<1>)(xp, p.w.data(), p.k2, p.n8, o0,
                                                          acc.data() + p0 * p.n8 + o0, p.n8);
  }
  // Epilogue per (image, channel): Requant's arithmetic (oneDNN's), branch-free so it vectorizes.
  const bool u8 = y.dtype() == DType::uint8;
  const Requant rq(q, bias ? bias->data<float>() : nullptr, u8);
  const float lo = rq.relu ? 0.0f : -std::numeric_limits<float>::infinity(),
              hi = rq.relu6 ? rq.hi : std::numeric_limits<float>::infinity();
  std::vector<float> yf(ohw);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.oc; ++o) {
      const float s = rq.scale[o], b = rq.bias[o];
      const int32_t off = q.x_zp * p.wsum[o];
      const int32_t* a = acc.data() + n * ohw * p.n8 + o;
      for (int64_t i = 0; i < ohw; ++i)
        yf[i] = std::min(std::max((static_cast<float>(a[i * p.n8] - off) + b) * s, lo), hi);
      const int64_t base = (n * g.oc + o) * ohw;
      if (u8) {
        uint8_t* Y = y.data<uint8_t>() + base;
        for (int64_t i = 0; i < ohw; ++i)
          Y[i] = static_cast<uint8_t>(static_cast<int32_t>(
              std::nearbyint(std::min(std::max(yf[i] + rq.zp, 0.0f), 255.0f))));
      } else {
        std::copy(yf.begin(), yf.end(), y.data<float>() + base);
      }
    }
}

void relayout_nhwc(const Tensor& x, Tensor& y, bool to_nhwc) {
  const Shape& s = x.shape();
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  auto move = [&](auto tag) {
    using T = decltype(tag);
    const T* X = static_cast<const T*>(x.data());
    T* Y = static_cast<T*>(y.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p) {
          const int64_t nchw = (i * c + ch) * hw + p, nhwc = (i * hw + p) * c + ch;
          Y[to_nhwc ? nhwc : nchw] = X[to_nhwc ? nchw : nhwc];
        }
  };
  MYCEL_CHECK(itemsize(x.dtype()) == 1 || itemsize(x.dtype()) == 4, RuntimeError,
              "relayout_nhwc: 1- or 4-byte elements only");
  if (itemsize(x.dtype()) == 1)
    move(uint8_t{});
  else
    move(uint32_t{});
}

#ifdef __AVX2__
namespace {
// The direct path's shape: one input channel (NCHW and NHWC are the same bytes), unit stride and
// dilation, no padding, rows of at least 16 output pixels, few outputs and taps.
bool direct_c1(const WindowGeom& g) {
  return g.c == 1 && g.groups == 1 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         g.pt == 0 && g.pb == 0 && g.pl == 0 && g.pr == 0 && g.ow >= 16 && g.oc <= 16 &&
         g.kh * g.kw <= 64;
}

// A one-input-channel convolution, 16 output pixels of a row at a time: each tap's 16 inputs
// (x - zp, int16) interleaved with the next tap's, so one vpmaddwd multiplies a pair of taps by
// the pair's weights of one output channel and adds both products into int32 (exact for any int8
// weights: |u8 - zp| * 128 fits int16 products, int32 sums). oneDNN's int8 kernel took 16.6 us
// on LeNet5's first layer (its fixed costs and a 1-channel layout it does not favour).
// OC: the output channels, a constant so the accumulators stay in registers.
template <int OC>
void qconv2d_direct_c1(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                       const WindowGeom& g, const QuantSpec& q, bool dst_nhwc) {
  const int64_t taps = g.kh * g.kw, pairs = (taps + 1) / 2;
  const int8_t* W = w.data<int8_t>();
  const bool u8 = y.dtype() == DType::uint8;
  const Requant rq(q, bias ? bias->data<float>() : nullptr, u8);
  int32_t wp[16 * 32];  // (output, pair): the pair's two weights as int16 halves
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t p = 0; p < pairs; ++p) {
      const int32_t lo = W[o * taps + 2 * p];
      const int32_t hi = 2 * p + 1 < taps ? W[o * taps + 2 * p + 1] : 0;
      wp[o * 32 + p] = static_cast<int32_t>((static_cast<uint32_t>(lo) & 0xffffu) |
                                            (static_cast<uint32_t>(hi) << 16));
    }
  int64_t off[64];  // each tap's offset from the window's corner
  for (int64_t t = 0; t < taps; ++t) off[t] = (t / g.kw) * g.w + t % g.kw;
  const __m256i zp = _mm256_set1_epi16(static_cast<int16_t>(q.x_zp));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow0 = 0; ow0 < g.ow; ow0 += 16) {
        const int64_t c0 = std::min(ow0, g.ow - 16);  // the last block overlaps the one before
        __m256i lo_acc[OC], hi_acc[OC];
        for (int o = 0; o < OC; ++o) lo_acc[o] = hi_acc[o] = _mm256_setzero_si256();
        const uint8_t* corner = x.data<uint8_t>() + (n * g.h + oh) * g.w + c0;
        auto tap = [&](int64_t t) {
          if (t >= taps) return _mm256_setzero_si256();
          const uint8_t* r = corner + off[t];
          return _mm256_sub_epi16(
              _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r))), zp);
        };
        for (int64_t p = 0; p < pairs; ++p) {
          const __m256i a = tap(2 * p), b = tap(2 * p + 1);
          // pixels 0-3 and 8-11 (lo), 4-7 and 12-15 (hi): unpack works within 128-bit halves
          const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
          for (int o = 0; o < OC; ++o) {
            const __m256i wv = _mm256_set1_epi32(wp[o * 32 + p]);
            lo_acc[o] = _mm256_add_epi32(lo_acc[o], _mm256_madd_epi16(lo, wv));
            hi_acc[o] = _mm256_add_epi32(hi_acc[o], _mm256_madd_epi16(hi, wv));
          }
        }
        // Requant's epilogue, 8 lanes at a time per output channel: bias, scale, relu or relu6,
        // then the float32 result or its requantization (zero point, clamp, round to even).
        // The unpacks left pixels 0-3 and 8-11 in lo, 4-7 and 12-15 in hi: the 128-bit lane
        // permutes put them back in order. The block's results are gathered in the destination's
        // order in `tile` and copied out contiguously (NHWC: the 16 pixels' OC values are one
        // run; NCHW: one run of 16 per output channel): a scattered store per value with its
        // index computed cost more than the multiplies (LeNet5's first layer: 15 us, now 8).
        alignas(32) int32_t acc[OC][16];
        for (int o = 0; o < OC; ++o) {
          const __m256 sc = _mm256_set1_ps(rq.scale[o]);
          const __m256 bo = _mm256_set1_ps(rq.bias[o]);
          const __m256i ordered[2] = {_mm256_permute2x128_si256(lo_acc[o], hi_acc[o], 0x20),
                                      _mm256_permute2x128_si256(lo_acc[o], hi_acc[o], 0x31)};
          for (int half = 0; half < 2; ++half) {
            __m256 v = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(ordered[half]), bo), sc);
            if (rq.relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
            if (rq.relu6) v = _mm256_min_ps(v, _mm256_set1_ps(rq.hi));
            if (u8) {
              v = _mm256_add_ps(v, _mm256_set1_ps(rq.zp));
              v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
              v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
              _mm256_store_si256(reinterpret_cast<__m256i*>(acc[o] + 8 * half),
                                 _mm256_cvtps_epi32(v));
            } else {
              _mm256_store_ps(reinterpret_cast<float*>(acc[o] + 8 * half), v);
            }
          }
        }
        const int64_t es = u8 ? 1 : 4;  // bytes per output value
        alignas(32) unsigned char tile[16 * OC * sizeof(float)];
        auto put = [&](int slot, int o, int i) {
          if (u8)
            tile[slot] = static_cast<unsigned char>(acc[o][i]);
          else
            std::memcpy(tile + 4 * slot, &acc[o][i], sizeof(float));
        };
        unsigned char* out = u8 ? reinterpret_cast<unsigned char*>(y.data<uint8_t>())
                                : reinterpret_cast<unsigned char*>(y.data<float>());
        if (dst_nhwc) {
          for (int i = 0; i < 16; ++i)
            for (int o = 0; o < OC; ++o) put(i * OC + o, o, i);
          std::memcpy(out + ((n * g.oh + oh) * g.ow + c0) * OC * es, tile,
                      static_cast<size_t>(16 * OC * es));
        } else {
          for (int o = 0; o < OC; ++o) {
            for (int i = 0; i < 16; ++i) put(o * 16 + i, o, i);
            std::memcpy(out + (((n * OC + o) * g.oh + oh) * g.ow + c0) * es, tile + o * 16 * es,
                        static_cast<size_t>(16 * es));
          }
        }
      }
}

using DirectFn = void (*)(const Tensor&, const Tensor&, const Tensor*, Tensor&, const WindowGeom&,
                          const QuantSpec&, bool);
template <size_t... I>
constexpr std::array<DirectFn, sizeof...(I)> direct_table(std::index_sequence<I...>) {
  return {qconv2d_direct_c1<static_cast<int>(I) + 1>...};
}
constexpr auto kDirect = direct_table(std::make_index_sequence<16>());  // 1 to 16 outputs
}  // namespace
#endif

void qconv2d(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const WindowGeom& g,
             const QuantSpec& q, bool constant, Int8Path* path, Int8Layout layout) {
  report(path, Int8Path::Kind::kNone);
  if (y.numel() == 0) return;
#ifdef __AVX2__
  if (x.numel() > 0 && direct_c1(g)) {
    report(path, Int8Path::Kind::kDirect);
    return kDirect[g.oc - 1](x, w, bias, y, g, q, layout.dst_nhwc);
  }
#endif
  const bool u8 = y.dtype() == DType::uint8;
  // The exact loops read and write NCHW: NHWC tensors are staged around them.
  auto exact = [&](Int8Path::Kind kind) {
    report(path, kind);
    Tensor xs = x, ys = y;
    if (layout.src_nhwc) {
      xs = Tensor::empty(x.shape(), x.dtype());
      relayout_nhwc(x, xs, false);
    }
    if (layout.dst_nhwc) ys = Tensor::empty(y.shape(), y.dtype());
    if (kind == Int8Path::Kind::kSmall)
      qconv2d_small(xs, w, bias, ys, g, q, constant);
    else
      qconv2d_ref(xs, w, bias, ys, g, q);
    if (layout.dst_nhwc) relayout_nhwc(ys, y, true);
  };
  // 8-bit weights without VNNI: oneDNN would saturate, so an exact path runs: the int16-pair
  // loops for small layers (about oneDNN's speed on LeNet5's convolutions), else the reference.
  if (x.numel() == 0 || w.numel() == 0 || !weights_safe_cached(w, constant))
    return exact(x.numel() > 0 && w.numel() > 0 && small_conv(g) ? Int8Path::Kind::kSmall
                                                                 : Int8Path::Kind::kReference);
  const std::string k =
      key("qconv2d", g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pb, g.pl,
          g.pr, g.groups, bias != nullptr, u8, q.relu, q.relu6, q.x_zp != 0, q.y_zp != 0,
          spec_hash(q, u8), layout.src_nhwc, layout.dst_nhwc);
  auto e = cached<QConvEntry>(k, [&] { return build_conv(g, u8, bias != nullptr, q, layout); });
  if (!e->ok) return exact(Int8Path::Kind::kReference);
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

// A few rows (batch-1 inference): madd_row over the packed weights beats the GEMM's setup, and
// is exact for any int8 weights, 8-bit ones included, on any CPU.
void qdense_rows(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m,
                 int64_t k, int64_t n, const QuantSpec& q, bool constant) {
  const std::shared_ptr<const Packed16> packed = packed16(w, n, k, constant);
  const Packed16& p = *packed;
  const uint8_t* X = x.data<uint8_t>();
  const Requant rq(q, bias ? bias->data<float>() : nullptr, y.dtype() == DType::uint8);
  std::vector<uint16_t> row(p.k2 * 2, 0);
  std::vector<int32_t> acc(n);
  for (int64_t r = 0; r < m; ++r) {
    std::copy(X + r * k, X + (r + 1) * k, row.begin());
    madd_row(reinterpret_cast<const int32_t*>(row.data()), p, acc.data());
    for (int64_t o = 0; o < n; ++o) rq.store(acc[o] - q.x_zp * p.wsum[o], o, y.data(), r * n + o);
  }
}

void qdense(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m, int64_t k,
            int64_t n, const QuantSpec& q, bool constant, Int8Path* path) {
  report(path, Int8Path::Kind::kNone);
  if (y.numel() == 0) return;
  const bool u8 = y.dtype() == DType::uint8;
  if (m <= 4) {
    report(path, Int8Path::Kind::kRows);
    return qdense_rows(x, w, bias, y, m, k, n, q, constant);
  }
  if (k == 0 || !weights_safe_cached(w, constant)) {
    report(path, Int8Path::Kind::kReference);
    return qdense_ref(x, w, bias, y, m, k, n, q);
  }
  const std::string kk = key("qdense", m, k, n, bias != nullptr, u8, q.relu, q.relu6, q.x_zp != 0,
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

namespace {
// One input of qadd as float32 (dequantized when uint8) into buf.
inline void qadd_operand(const Tensor& t, int64_t i0, int64_t len, float scale, int32_t zp,
                         float* buf) {
  if (t.dtype() == DType::float32) {
    std::memcpy(buf, t.data<float>() + i0, len * sizeof(float));
    return;
  }
  const uint8_t* X = t.data<uint8_t>() + i0;
  for (int64_t i = 0; i < len; ++i)
    buf[i] = static_cast<float>(static_cast<int32_t>(X[i]) - zp) * scale;
}
}  // namespace

#ifdef __AVX2__
// 8 operands as float32: uint8 ones dequantized as dequantize_linear does ((x - zp) * scale).
template <bool U8>
inline __m256 qadd_load8(const void* p, int64_t i, __m256i zp, __m256 scale) {
  if constexpr (U8) {
    const __m128i b =
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const uint8_t*>(p) + i));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(b), zp)), scale);
  } else {
    return _mm256_loadu_ps(static_cast<const float*>(p) + i);
  }
}

// qadd over the whole groups of 8: the scalar path's operations lane by lane (the same division,
// round-to-nearest-even and saturation), so the results are identical. Returns the count done.
template <bool AU8, bool BU8>
int64_t qadd_avx2(const void* A, const void* B, uint8_t* Y, int64_t n, const QAddSpec& q) {
  const __m256 as = _mm256_set1_ps(q.a_scale), bs = _mm256_set1_ps(q.b_scale);
  const __m256i azp = _mm256_set1_epi32(q.a_zp), bzp = _mm256_set1_epi32(q.b_zp);
  const __m256 ys = _mm256_set1_ps(q.y_scale), yzp = _mm256_set1_ps(static_cast<float>(q.y_zp));
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_add_ps(qadd_load8<AU8>(A, i, azp, as), qadd_load8<BU8>(B, i, bzp, bs));
    if (q.relu) v = _mm256_max_ps(v, zero);  // NaN -> 0, which quantizes to the zero point too
    __m256 r = _mm256_add_ps(
        _mm256_round_ps(_mm256_div_ps(v, ys), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), yzp);
    r = _mm256_min_ps(_mm256_max_ps(r, zero), top);
    r = _mm256_blendv_ps(yzp, r, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> the zero point
    const __m256i w = _mm256_cvtps_epi32(r);
    const __m128i p16 = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(Y + i), _mm_packus_epi16(p16, p16));
  }
  return i;
}
#endif

void qadd(const Tensor& a, const Tensor& b, Tensor& y, const QAddSpec& q) {
  constexpr int64_t kChunk = 256;  // operands dequantized through the stack, a chunk at a time
  alignas(32) float fa[kChunk], fb[kChunk];
  const int64_t n = y.numel();
  uint8_t* Y = y.data<uint8_t>();
  int64_t done = 0;
#ifdef __AVX2__
  const bool au8 = a.dtype() == DType::uint8, bu8 = b.dtype() == DType::uint8;
  done = au8 ? (bu8 ? qadd_avx2<true, true>(a.data(), b.data(), Y, n, q)
                    : qadd_avx2<true, false>(a.data(), b.data(), Y, n, q))
             : (bu8 ? qadd_avx2<false, true>(a.data(), b.data(), Y, n, q)
                    : qadd_avx2<false, false>(a.data(), b.data(), Y, n, q));
#endif
  for (int64_t i0 = done; i0 < n; i0 += kChunk) {
    const int64_t len = std::min(kChunk, n - i0);
    qadd_operand(a, i0, len, q.a_scale, q.a_zp, fa);
    qadd_operand(b, i0, len, q.b_scale, q.b_zp, fb);
    if (q.relu)
      for (int64_t i = 0; i < len; ++i) fa[i] = std::max(fa[i] + fb[i], 0.0f);
    else
      for (int64_t i = 0; i < len; ++i) fa[i] = fa[i] + fb[i];
    quantize_loop(fa, Y + i0, len, q.y_scale, q.y_zp);
  }
}

}  // namespace mycel::cpu
