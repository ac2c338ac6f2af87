// conv2d and its backward (data and weights) on oneDNN's convolution primitives. Each primitive
// picks its preferred (blocked) layouts; cached reorders move NCHW data in and out of them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/kernels/cpu/conv_batch_lanes.h"
#include "mycel/kernels/cpu/conv_blocked8_loops.h"
#include "mycel/kernels/cpu/conv_direct.h"
#include "mycel/kernels/cpu/conv_gemm_filter.h"
#include "mycel/kernels/cpu/conv_gemm_forward.h"
#include "mycel/kernels/cpu/conv_stream.h"
#include "mycel/kernels/cpu/conv_weight_reorder.h"
#include "mycel/kernels/cpu/conv_winograd.h"
#include "mycel/kernels/cpu/conv_winograd_nchw.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_post_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn_grad_ref.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

// A reorder from one layout to another, present only when the two differ.
struct Reorder {
  memory::desc from, to;
  std::optional<dnnl::reorder> prim;
};

struct ConvEntry : Entry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory::desc bias_md;
  Reorder src, wei, dst;
  // The src (nChw8c -> NHWC) and dst (NHWC -> nChw8c) reorders run as plain loops on the
  // calling thread (plain_reorders below) instead of oneDNN's parallel reorders.
  bool src_loop = false, dst_loop = false;
  // Constant weights already in the primitive's layout, by their buffer (KernelParams::
  // const_weights); each keeps its source alive so the address cannot be reused by another.
  std::mutex const_mu;
  std::unordered_map<const void*, std::pair<Tensor, Tensor>> const_wei;
};

// w in e's weight layout, reordered once per weight buffer (bounded: cleared past 64 buffers).
void* const_weights(ConvEntry& e, const Tensor& w) {
  std::lock_guard<std::mutex> lock(e.const_mu);
  auto it = e.const_wei.find(w.data());
  if (it == e.const_wei.end()) {
    // Weights nobody else holds any more (graph mode's folded batch norm makes new ones at each
    // refold) can never be asked for again: their copies go first.
    for (auto k = e.const_wei.begin(); k != e.const_wei.end();)
      k = k->second.first.storage().use_count() == 1 ? e.const_wei.erase(k) : std::next(k);
    if (e.const_wei.size() >= 64) e.const_wei.clear();
    Tensor buf = Tensor::empty({static_cast<int64_t>(e.wei.to.get_size())}, DType::uint8);
    memory m(e.wei.to, engine(), buf.data());
    memory user = wrap(e.wei.from, w);
    e.wei.prim->execute(stream(), user, m);
    stream().wait();
    it = e.const_wei.emplace(w.data(), std::make_pair(w, buf)).first;
  }
  return it->second.second.data();
}

Reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  Reorder r{from, to, std::nullopt};
  if (from != to)
    r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  return r;
}

// Whether a convolution on the graph's blocked layouts keeps oneDNN's preferred primitive (with
// a reorder of x and y on each side) instead of a jit primitive on the blocked layouts. On Zen 4
// the graph's layout is nChw8c, where oneDNN has only its AVX2 kernels; its AVX-512 brgconv
// (NHWC) ran the batch-1 3x3 convolutions of ResNet-18 that Winograd does not take faster on one
// thread, the reorders included (bench/bench_infer_ops.py, per launch): 512 channels at 7x7
// 2.51 -> 2.01 ms, at 4x4 1.13 -> 0.83, the stride-2 ones into 14x14, 8x8, 7x7 and 4x4 5-30%;
// into 28x28 (from 56x56: 0.8 MB reordered) it was 4% slower, so output planes past 16x16 keep
// the jit kernel. So do 1x1 convolutions (the jit_1x1 kernel is as fast, the reorders then cost
// more), few input channels (the stem: its 3.2 MB output would be reordered), batches above 1
// (not measured) and groups (depthwise has its own kernels). MYCEL_CONV_NATIVE=0 turns it off.
bool keep_native(const std::string& impl, const WindowGeom& g) {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_CONV_NATIVE");
    return !(v && *v && std::atoi(v) == 0);
  }();
  return on && cpu_has_avx512() && cpu_is_zen4() && impl.rfind("brg", 0) == 0 && g.n == 1 &&
         g.groups == 1 && g.kh * g.kw > 1 && g.c >= 16 && g.oc >= 16 && g.oh * g.ow <= 16 * 16;
}

// The reorders around a kept native primitive (keep_native: brgconv on NHWC between nChw8c
// tensors) of at most this many bytes run as plain loops on the calling thread. Each of oneDNN's
// reorders is an OpenMP region of its own, and with OMP_WAIT_POLICY=PASSIVE every region wakes
// the sleeping pool threads: on the 2-vCPU Zen 4 VM a wake-up, not the copy (256 KiB at most
// here, a few us), is what such a reorder costs at two threads. ResNet-18 (32x32 input) has 12
// of them per run, 44 regions in all. MYCEL_CONV_LOOP_REORDERS=0 keeps oneDNN's.
constexpr size_t kLoopReorderBytes = size_t{256} << 10;

bool loop_reorders_on() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_CONV_LOOP_REORDERS");
    return !(v && *v && std::atoi(v) == 0);
  }();
  return on;
}

// Whether the post-ops start with an add (a residual, or an operand residual_of turned down).
bool has_residual_add(const KernelParams* params) {
  return params && !params->post_ops.empty() && params->post_ops[0].kind == PostOp::Kind::kAddRow;
}

// Whether reorder r is from `from_tag` to `to_tag` on float32 dims, small enough for a loop.
bool loop_reorder(const Reorder& r, const memory::dims& dims, memory::format_tag from_tag,
                  memory::format_tag to_tag) {
  if (!r.prim || !loop_reorders_on() || r.from.get_size() > kLoopReorderBytes) return false;
  const auto f32 = memory::data_type::f32;
  return r.from == memory::desc(dims, f32, from_tag) && r.to == memory::desc(dims, f32, to_tag);
}

// `post` may only hold relu (conv2d has no row-vector post-op). `src_blocked`/`dst_blocked` say
// whether x and y are channel-blocked (graph backend) rather than NCHW.
std::shared_ptr<ConvEntry> build(DType dtype, const WindowGeom& g, bool has_bias,
                                 const KernelParams* post, bool src_blocked, bool dst_blocked) {
  auto e = std::make_shared<ConvEntry>();
  const auto dt = to_dnnl(dtype);
  const memory::dims src_dims{g.n, g.c, g.h, g.w}, dst_dims{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei_dims =
      g.groups > 1 ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                   : memory::dims{g.oc, g.c, g.kh, g.kw};
  const memory::desc src_user = blocked_desc({g.n, g.c, g.h, g.w}, dtype, src_blocked);
  const memory::desc dst_user = blocked_desc({g.n, g.oc, g.oh, g.ow}, dtype, dst_blocked);
  const memory::desc wei_user(wei_dims, dt, g.groups > 1 ? tag::goihw : tag::oihw);
  e->bias_md = memory::desc({g.oc}, dt, tag::x);
  try {
    const memory::desc src_any(src_dims, dt, tag::any), dst_any(dst_dims, dt, tag::any),
        wei_any(wei_dims, dt, tag::any);
    const memory::dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl},
        pad_r{g.pb, g.pr};
    auto d = has_bias ? dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                            src_any, wei_any, e->bias_md, dst_any, strides, dil, pad_l, pad_r)
                      : dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                            src_any, wei_any, dst_any, strides, dil, pad_l, pad_r);
    dnnl::primitive_attr attr = default_attr();
    append_post_ops(attr, post, e->bias_md);
    e->pd = dnnl::convolution_forward::primitive_desc(d, attr, engine());
    if ((src_blocked || dst_blocked) &&
        (e->pd.src_desc() != src_user || e->pd.dst_desc() != dst_user) &&
        !keep_native(e->pd.impl_info_str(), g)) {
      // The preferred primitive wants other activation layouts than the blocked ones the graph
      // chose (nChw8c on Zen 4, dnnl_layout.cc: oneDNN's AVX-512 kernels want NHWC): a jit
      // primitive that reads and writes the user's layouts saves the two reorders per launch
      // (MobileNetV2's batch-1 convolutions: the reorders cost more than the convolution).
      try {
        auto du = has_bias
                      ? dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                            src_user, wei_any, e->bias_md, dst_user, strides, dil, pad_l, pad_r)
                      : dnnl::convolution_forward::desc(
                            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                            src_user, wei_any, dst_user, strides, dil, pad_l, pad_r);
        dnnl::convolution_forward::primitive_desc pu(du, attr, engine());
        const std::string impl = pu.impl_info_str();  // not im2col + gemm, not the loops
        if (impl.rfind("gemm", 0) != 0 && impl.rfind("ref", 0) != 0) e->pd = pu;
      } catch (const dnnl::error& err) {
        if (!is_unimplemented(err)) throw;
      }
    }
    e->prim = dnnl::convolution_forward(e->pd);
    e->src = make_reorder(src_user, e->pd.src_desc());
    e->wei = make_reorder(wei_user, e->pd.weights_desc());
    e->dst = make_reorder(e->pd.dst_desc(), dst_user);
    e->src_loop = loop_reorder(e->src, src_dims, tag::nChw8c, tag::nhwc);
    e->dst_loop = loop_reorder(e->dst, dst_dims, tag::nhwc, tag::nChw8c);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

}  // namespace

namespace {

// A reorder prepared as a call: `in`/`out` are its argument indices. A weight reorder from the
// plain layout into a primitive's (16-bit elements) runs as our loop (`loop`,
// conv_weight_reorder.h) unless MYCEL_CONV_WEIGHT_LOOPS=0 when prepared: the forward's bf16
// weights into AcdB32a2b, 512x512x3x3, 0.7-1.5 ms on one thread against oneDNN's 2.5-2.8;
// ResNet-18's bf16 forward launch of it (batch 32, 4x4, two threads) 11.7 -> 9.9 ms CPU
// (bench/bench_conv_weight_loops_ab.py, medians of 30 alternated launches).
struct PreparedReorder {
  PreparedExec exec;
  int in = -1, out = -1;
  std::unique_ptr<WeightBlocking> loop;
  void prepare(const Reorder& r, bool weights = false) {
    if (!r.prim) return;
    exec = PreparedExec(*r.prim);
    in = exec.add(DNNL_ARG_FROM, r.from);
    out = exec.add(DNNL_ARG_TO, r.to);
    if (weights) loop = plain_to_blocked_loop(r);
  }
  // Runs the reorder from `from` to `to` (the caller waits on the stream).
  void run(const void* from, void* to) {
    if (loop) {
      // as oneDNN's reorder: the launch's threads, one below 64K elements (a region's wake-up)
      const int threads = loop->blocked_elems() >= (int64_t{1} << 16) ? num_threads() : 1;
      weights_to_blocked(*loop, static_cast<const uint16_t*>(from), static_cast<uint16_t*>(to),
                         threads);
      return;
    }
    exec.set(in, from);
    exec.set(out, to);
    exec.run();
  }
  // Our loop for r where it is one from plain 16-bit weights (oihw, goihw) to a layout it walks.
  static std::unique_ptr<WeightBlocking> plain_to_blocked_loop(const Reorder& r) {
    const auto dt = r.from.data_type();
    if (!conv_weight_loops_enabled() || dt != r.to.data_type() ||
        (dt != memory::data_type::bf16 && dt != memory::data_type::f16))
      return nullptr;
    const memory::dims dims = r.from.dims();
    if (r.from != memory::desc(dims, dt, dims.size() == 5 ? tag::goihw : tag::oihw)) return nullptr;
    return WeightBlocking::make(r.to, /*tiles_only=*/true);
  }
};

// A forward convolution prepared for one instruction: the cached entry and its calls (the
// reorders present only where the user layout differs from the primitive's).
struct ConvPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  bool has_bias = false, const_w = false;
  std::shared_ptr<ConvEntry> e;
  PreparedReorder src, wei, dst;
  PreparedExec conv;
  int a_src = -1, a_wei = -1, a_dst = -1, a_bias = -1;
};

std::unique_ptr<ConvPrepared> prepare_conv(std::shared_ptr<ConvEntry> e, const WindowGeom& g,
                                           bool has_bias, bool const_w) {
  auto p = std::make_unique<ConvPrepared>();
  p->threads = num_threads();
  p->g = g;
  p->has_bias = has_bias;
  p->const_w = const_w;
  p->src.prepare(e->src);
  if (!const_w) p->wei.prepare(e->wei, /*weights=*/true);
  p->dst.prepare(e->dst);
  p->conv = PreparedExec(e->prim, &e->pd);
  p->a_src = p->conv.add(DNNL_ARG_SRC, e->src.to);
  p->a_wei = p->conv.add(DNNL_ARG_WEIGHTS, e->wei.to);
  p->a_dst = p->conv.add(DNNL_ARG_DST, e->dst.from);
  if (has_bias) p->a_bias = p->conv.add(DNNL_ARG_BIAS, e->bias_md);
  p->e = std::move(e);
  return p;
}

// Runs a prepared convolution: reorders into per-thread staging buffers where needed. A residual
// (y's shape and layout) and the activation after it are applied by the output's reorder loop
// when there is one; returns whether they were (else the caller applies them).
bool run_conv(ConvPrepared& p, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
              const Tensor* residual = nullptr, WinogradAct act = WinogradAct::kNone) {
  ConvEntry& e = *p.e;
  const void* src = x.data();
  if (e.src_loop) {
    void* buf = staging_data(0, e.src.to.get_size());
    blocked8_to_nhwc(static_cast<const float*>(src), static_cast<float*>(buf), p.g.n, p.g.c,
                     p.g.h * p.g.w);
    src = buf;
  } else if (p.src.exec.defined()) {
    void* buf = staging_data(0, e.src.to.get_size());
    p.src.exec.set(p.src.in, src);
    p.src.exec.set(p.src.out, buf);
    p.src.exec.run();
    src = buf;
  }
  const void* wei = w.data();
  if (p.const_w && e.wei.prim) {
    wei = const_weights(e, w);
  } else if (p.wei.exec.defined()) {
    void* buf = staging_data(1, e.wei.to.get_size());
    p.wei.run(wei, buf);
    wei = buf;
  }
  void* dst = p.dst.exec.defined() ? staging_data(2, e.dst.from.get_size()) : y.data();
  p.conv.set(p.a_src, src);
  p.conv.set(p.a_wei, wei);
  p.conv.set(p.a_dst, dst);
  if (bias) p.conv.set(p.a_bias, bias->data());
  p.conv.run();
  if (e.dst_loop) {
    stream().wait();  // the convolution's output complete before the loop reads it
    if (residual) {
      nhwc_to_blocked8_residual(static_cast<const float*>(dst), residual->data<float>(),
                                y.data<float>(), p.g.n, p.g.oc, p.g.oh * p.g.ow, act);
      return true;
    }
    nhwc_to_blocked8(static_cast<const float*>(dst), y.data<float>(), p.g.n, p.g.oc,
                     p.g.oh * p.g.ow);
  } else if (p.dst.exec.defined()) {
    p.dst.exec.set(p.dst.in, dst);
    p.dst.exec.set(p.dst.out, y.data());
    p.dst.exec.run();
  }
  stream().wait();
  return residual == nullptr;
}

// The activation that post-ops of relu/relu6 (perhaps after a residual add, which is not one)
// come to.
WinogradAct activation_of(const KernelParams* post) {
  WinogradAct act = WinogradAct::kNone;
  if (post)
    for (const PostOp& op : post->post_ops) {  // relu then relu6 is relu6; relu6 then relu too
      if (op.kind == PostOp::Kind::kAddRow) continue;
      act = op.kind == PostOp::Kind::kRelu6 || act == WinogradAct::kRelu6 ? WinogradAct::kRelu6
                                                                          : WinogradAct::kRelu;
    }
  return act;
}

// The residual of a convolution's post-ops (fuse_post_ops.cc): a first add of a float32 tensor
// of y's shape (in y's layout), followed by activations only; else nullptr.
const Tensor* residual_of(const KernelParams* params, const Tensor& y) {
  if (!params || params->post_ops.empty() || params->post_ops[0].kind != PostOp::Kind::kAddRow)
    return nullptr;
  const Tensor& r = params->post_ops[0].operand;
  if (!r.defined() || r.dtype() != DType::float32 || y.dtype() != DType::float32 ||
      r.shape() != y.shape())
    return nullptr;
  for (size_t k = 1; k < params->post_ops.size(); ++k)
    if (params->post_ops[k].kind == PostOp::Kind::kAddRow) return nullptr;
  return &r;
}

// Winograd's prepared state: the tile chosen for the geometry and the weights transformed for
// it, redone only when the weight buffer changes (graph mode's refold makes a new one).
struct WinogradPrepared : KernelPrepared {
  WindowGeom g;
  int m = 0;
  Tensor w;  // the source weights, kept alive so their address is not reused
  WinogradWeights u;
};

void conv2d_winograd_prepared(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                              const WindowGeom& g, int m, WinogradAct act, const Tensor* residual,
                              std::unique_ptr<KernelPrepared>* slot) {
  std::unique_ptr<WinogradPrepared> local;
  WinogradPrepared& p = prepared_state<WinogradPrepared>(
      slot, local, [&](const WinogradPrepared& q) { return q.m == m && same_geom(q.g, g); },
      [&] {
        auto q = std::make_unique<WinogradPrepared>();
        q->g = g;
        q->m = m;
        return q;
      });
  if (!p.w.defined() || p.w.data() != w.data()) {
    p.u = winograd_weights(w, g, m);
    p.w = w;
  }
  conv2d_winograd(x.data<float>(), p.u, bias ? bias->data<float>() : nullptr,
                  residual ? residual->data<float>() : nullptr, y.data<float>(), g, act);
}

// The streamed convolution's prepared state: the weights repacked for it, redone only when the
// weight buffer changes (as Winograd's).
struct StreamPrepared : KernelPrepared {
  WindowGeom g;
  Tensor w;  // the source weights, kept alive so their address is not reused
  StreamWeights u;
};

void conv2d_stream_prepared(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                            const WindowGeom& g, const KernelParams* post,
                            std::unique_ptr<KernelPrepared>* slot) {
  std::unique_ptr<StreamPrepared> local;
  StreamPrepared& p = prepared_state<StreamPrepared>(
      slot, local, [&](const StreamPrepared& q) { return same_geom(q.g, g); },
      [&] {
        auto q = std::make_unique<StreamPrepared>();
        q->g = g;
        return q;
      });
  if (!p.w.defined() || p.w.data() != w.data()) {
    p.u = conv_stream_weights(w, g);
    p.w = w;
  }
  conv2d_stream(x.data<float>(), p.u, bias ? bias->data<float>() : nullptr, y.data<float>(), g,
                activation_of(post));
}

}  // namespace

void conv2d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g, KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  const KernelParams* post =
      activation_post_ops(params);  // else not ours to apply: the caller does
  const bool src_blocked = params && params->src_blocked,
             dst_blocked = params && params->dst_blocked;
  const bool const_w = params && params->const_weights;
  if (params) params->layout_taken = true;
  if (y.numel() == 0) return;
  MYCEL_CHECK((!src_blocked && !dst_blocked) || (x.numel() > 0 && w.numel() > 0), RuntimeError,
              "[conv2d] blocked layouts need non-empty inputs (backend bug)");
  if (x.numel() == 0 || w.numel() == 0) {  // no input channels: the output is the bias (or zero)
    std::memset(y.data(), 0, y.nbytes());
    if (bias) {
      const size_t isz = itemsize(y.dtype()), plane = g.oh * g.ow;
      for (int64_t n = 0; n < g.n; ++n)
        for (int64_t o = 0; o < g.oc; ++o)
          for (size_t i = 0; i < plane; ++i)
            std::memcpy(static_cast<char*>(y.data()) + ((n * g.oc + o) * plane + i) * isz,
                        static_cast<const char*>(bias->data()) + o * isz, isz);
    }
    return;
  }
  // Few channels: our kernel beats oneDNN's. It reads NCHW (which one-channel NHWC is). It
  // applies relu only: other post-ops (relu6) are left to the caller.
  if (conv2d_direct_fits(y.dtype(), g) && (!src_blocked || (g.c == 1 && channel_block() == 1))) {
    bool relu = post != nullptr;
    if (post)
      for (const PostOp& op : post->post_ops) relu = relu && op.kind == PostOp::Kind::kRelu;
    conv2d_direct(x, w, bias, y, g, relu, dst_blocked ? direct_block(g.oc) : 0);
    if (relu) params->post_applied = true;
    return;
  }
  // Few channels, narrow rows, a batch (LeNet5's conv2 in training): images in the vector lanes
  // (conv_batch_lanes.h). Relu only, as above.
  if (!src_blocked && !dst_blocked && x.dtype() == DType::float32 && w.dtype() == DType::float32 &&
      (!bias || bias->dtype() == DType::float32) && conv2d_batch_lanes_fits(y.dtype(), g)) {
    bool relu = post != nullptr;
    if (post)
      for (const PostOp& op : post->post_ops) relu = relu && op.kind == PostOp::Kind::kRelu;
    conv2d_batch_lanes(x, w, bias, y, g, relu);
    if (relu) params->post_applied = true;
    return;
  }
  // 3x3 NCHW convolutions whose weights change (training): Winograd at a batch, the weights
  // transformed at every call (conv_winograd_nchw.h).
  if (!src_blocked && !dst_blocked && !const_w && x.dtype() == DType::float32 &&
      w.dtype() == DType::float32 && (!bias || bias->dtype() == DType::float32))
    if (const int m = winograd_nchw_tile(y.dtype(), g); m != 0) {
      conv2d_winograd_nchw(x, w, bias, y, g, m, activation_of(post));
      if (post) params->post_applied = true;
      return;
    }
  // Small output planes whose weights change (training's last stage): one GEMM over the batch
  // (conv_gemm_forward.h). Post-ops are left to the caller.
  if (!src_blocked && !dst_blocked && !const_w && x.dtype() == DType::float32 &&
      w.dtype() == DType::float32 && (!bias || bias->dtype() == DType::float32) &&
      conv2d_gemm_forward_fits(y.dtype(), g))
    return conv2d_gemm_forward(x, w, bias, y, g, slot);
  // 3x3 inference convolutions with constant weights on nChw8c: Winograd where it wins
  // (conv_winograd.h), the weights transformed once per weight buffer.
  // A residual add (then relu/relu6) in the output transform (fuse_post_ops.cc).
  const Tensor* residual = residual_of(params, y);
  if (const int m = winograd_tile_for(y.dtype(), g, params, slot != nullptr);
      m != 0 && (residual || !has_residual_add(params))) {
    conv2d_winograd_prepared(x, w, bias, y, g, m, activation_of(params), residual, slot);
    if (params && !params->post_ops.empty()) params->post_applied = true;
    return;
  }
  // Batch-1 inference on small planes with constant weights on nChw8c: the weights streamed
  // once (conv_stream.h).
  if (conv_stream_for(y.dtype(), g, params, slot != nullptr)) {
    conv2d_stream_prepared(x, w, bias, y, g, post, slot);
    if (post) params->post_applied = true;
    return;
  }
  const SerialScope threads(y.numel() * (g.c / g.groups) * g.kh * g.kw);
  std::unique_ptr<ConvPrepared> local;
  ConvPrepared& p = prepared_state<ConvPrepared>(
      slot, local,
      [&](const ConvPrepared& q) {
        return q.threads == num_threads() && same_geom(q.g, g) && q.has_bias == (bias != nullptr);
      },
      [&] {
        const std::string k = key("conv2d", dtype_name(y.dtype()), g.n, g.c, g.h, g.w, g.oc, g.kh,
                                  g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pb, g.pl, g.pr, g.groups,
                                  bias != nullptr, post_ops_key(post), src_blocked, dst_blocked);
        auto e = cached<ConvEntry>(k, [&] {
          return build(y.dtype(), g, bias != nullptr, post, src_blocked, dst_blocked);
        });
        if (!e->ok) {  // nothing to prepare: the fallback below runs per launch
          auto q = std::make_unique<ConvPrepared>();
          q->threads = num_threads();
          q->g = g;
          q->has_bias = bias != nullptr;
          q->e = e;
          return q;
        }
        return prepare_conv(std::move(e), g, bias != nullptr, const_w);
      });
  if (!p.e->ok) {
    MYCEL_CHECK(!src_blocked && !dst_blocked, RuntimeError,
                "[conv2d] oneDNN has no blocked-layout convolution here (backend bug)");
    if (y.dtype() == DType::float32) return conv2d_ref<float>(x, w, bias, y, g);
    Tensor x32 = x.to(DType::float32), w32 = w.to(DType::float32);
    Tensor b32 = bias ? bias->to(DType::float32) : Tensor();
    Tensor y32 = Tensor::empty(y.shape(), DType::float32);
    conv2d_dnnl(x32, w32, bias ? &b32 : nullptr, y32, g);
    convert_elements(y32.data(), DType::float32, y.data(), y.dtype(), y.numel());
    return;
  }
  // A residual (then the activations) by the output's reorder loop where it has one, else the
  // caller's loops (post is null then: the primitive takes none of them).
  if (run_conv(p, x, w, bias, y, residual, activation_of(residual ? params : nullptr)) &&
      (post || residual))
    params->post_applied = true;
}

namespace {

// A backward convolution: two inputs (diff_dst and weights, or diff_dst and src) and one output,
// each with the reorder between its user layout and the primitive's.
struct ConvBwdEntry : Entry {
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
  Reorder dy, other, out;
};

// User and "any" descriptors and the window parameters of one convolution geometry. The user's
// activations are NCHW, or blocked (the layout step's, bf16: NHWC) where `src_blocked` (x, dx) or
// `dst_blocked` (dy) say so; a blocked one is also the primitive's, so that oneDNN picks a kernel
// that reads it as it is (its bf16 kernels take NHWC natively in all three passes).
struct ConvDescs {
  memory::desc src_user, wei_user, dst_user, src_any, wei_any, dst_any;
  memory::dims strides, dil, pad_l, pad_r;
};

ConvDescs conv_descs(DType dtype, const WindowGeom& g, bool src_blocked = false,
                     bool dst_blocked = false) {
  const auto dt = to_dnnl(dtype);
  const memory::dims src{g.n, g.c, g.h, g.w}, dst{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei = g.groups > 1
                               ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                               : memory::dims{g.oc, g.c, g.kh, g.kw};
  const memory::desc src_user = blocked_desc({g.n, g.c, g.h, g.w}, dtype, src_blocked),
                     dst_user = blocked_desc({g.n, g.oc, g.oh, g.ow}, dtype, dst_blocked);
  return {src_user,
          memory::desc(wei, dt, g.groups > 1 ? tag::goihw : tag::oihw),
          dst_user,
          src_blocked ? src_user : memory::desc(src, dt, tag::any),
          memory::desc(wei, dt, tag::any),
          dst_blocked ? dst_user : memory::desc(dst, dt, tag::any),
          {g.sh, g.sw},
          {g.dh - 1, g.dw - 1},
          {g.pt, g.pl},
          {g.pb, g.pr}};
}

// Backward data (weights == false: dx from dy and w) or backward weights (dw from dy and x).
// f32_dw: the weight gradient in float32 (a bf16/f16 conv's partial sums, added before rounding).
// Whether pd runs one of oneDNN's reference kernels ("ref:any", "gemm:ref"), many times slower.
bool is_reference_impl(const dnnl::primitive_desc& pd) {
  return std::strstr(pd.impl_info_str(), "ref") != nullptr;
}

dnnl::convolution_forward::primitive_desc forward_hint(const ConvDescs& a) {
  // the hint keeps the conv's own weight dtype (oneDNN has no bf16 x f32 forward)
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, a.src_any, a.wei_any,
                                      a.dst_any, a.strides, a.dil, a.pad_l, a.pad_r),
      default_attr(), engine());
}

dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd(const ConvDescs& a, bool f32_dw) {
  const memory::desc dw_any =
      f32_dw ? memory::desc(a.wei_any.dims(), memory::data_type::f32, tag::any) : a.wei_any;
  return dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, a.src_any,
                                               dw_any, a.dst_any, a.strides, a.dil, a.pad_l,
                                               a.pad_r),
      default_attr(), engine(), forward_hint(a));
}

dnnl::convolution_backward_data::primitive_desc bwd_data_pd(const ConvDescs& a) {
  return dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, a.src_any,
                                            a.wei_any, a.dst_any, a.strides, a.dil, a.pad_l,
                                            a.pad_r),
      default_attr(), engine(), forward_hint(a));
}

// build(native): the primitive on the blocked activations as they are; where none or only a
// reference kernel takes them (the bf16 stem's weight gradient, 3 input channels, dy NHWC: 1.9
// -> 530 ms a launch), build(free): free layouts, reordered to and from.
template <class F>
auto native_or_free(const ConvDescs& native, const ConvDescs& free, bool differ, F build) {
  decltype(build(native)) pd;
  try {
    pd = build(native);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err) || !differ) throw;
  }
  if (differ && (!pd || is_reference_impl(pd))) pd = build(free);
  return pd;
}

// A float32 weight gradient of NCHW activations on Intel AVX-512 runs oneDNN's kernel on NHWC
// copies of x and dy, not on the nChw16c ones oneDNN picks for free layouts: the reorders cost
// the same and the kernel less, for stride 1, at least 32 channels each side and planes of 8x8
// or more (Ice Lake Xeon, two threads, ResNet-18 CIFAR at batch 32, in the step: the 64-channel
// layers at 32x32 16.0 -> 11.0 ms, 128 at 16x16 15.4 -> 9.8, 256 at 8x8 15.0 -> 11.0; alone, the
// 64 -> 128 stride-2 one 8.7 -> 9.8, so not those). Zen 4's kernels were not measured so;
// MYCEL_CONV_BWD_W_NHWC=0 / 1 forces the choice (A/B; read once).
bool f32_bwd_weights_nhwc(const WindowGeom& g) {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_CONV_BWD_W_NHWC");
    if (v && *v) return std::atoi(v) != 0;
    return cpu_has_avx512() && !cpu_is_zen4();
  }();
  return on && g.groups == 1 && g.sh == 1 && g.sw == 1 && g.c >= 32 && g.oc >= 32 &&
         g.oh * g.ow >= 64;
}

std::shared_ptr<ConvBwdEntry> build_bwd(DType dtype, const WindowGeom& g, bool weights, bool f32_dw,
                                        bool src_blocked, bool dst_blocked) {
  auto e = std::make_shared<ConvBwdEntry>();
  ConvDescs d = conv_descs(dtype, g, src_blocked, dst_blocked);
  bool blocked = src_blocked || dst_blocked;
  if (weights && !blocked && dtype == DType::float32 && f32_bwd_weights_nhwc(g)) {
    d.src_any = memory::desc({g.n, g.c, g.h, g.w}, memory::data_type::f32, tag::nhwc);
    d.dst_any = memory::desc({g.n, g.oc, g.oh, g.ow}, memory::data_type::f32, tag::nhwc);
    blocked = true;  // (where NHWC finds no kernel but a reference one: free layouts)
  }
  ConvDescs free = conv_descs(dtype, g);
  free.src_user = d.src_user;
  free.dst_user = d.dst_user;
  try {
    if (weights) {
      auto pd = native_or_free(d, free, blocked,
                               [&](const ConvDescs& a) { return bwd_weights_pd(a, f32_dw); });
      e->pd = pd;
      e->prim = dnnl::convolution_backward_weights(pd);
      e->dy = make_reorder(d.dst_user, pd.diff_dst_desc());
      e->other = make_reorder(d.src_user, pd.src_desc());
      e->out = make_reorder(pd.diff_weights_desc(), d.wei_user);
    } else {
      auto pd = native_or_free(d, free, blocked, [](const ConvDescs& a) { return bwd_data_pd(a); });
      e->pd = pd;
      e->prim = dnnl::convolution_backward_data(pd);
      e->dy = make_reorder(d.dst_user, pd.diff_dst_desc());
      e->other = make_reorder(d.wei_user, pd.weights_desc());
      e->out = make_reorder(pd.diff_src_desc(), d.src_user);
    }
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

// A backward convolution prepared for one instruction (see ConvPrepared).
struct ConvBwdPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  bool src_blocked = false, dst_blocked = false;
  std::shared_ptr<ConvBwdEntry> e;
  PreparedReorder dy, other, out;
  PreparedExec exec;
  int a_dy = -1, a_other = -1, a_out = -1;
};

std::unique_ptr<ConvBwdPrepared> prepare_bwd(std::shared_ptr<ConvBwdEntry> e, const WindowGeom& g,
                                             int other_arg, int out_arg, bool src_blocked,
                                             bool dst_blocked) {
  auto p = std::make_unique<ConvBwdPrepared>();
  p->threads = num_threads();
  p->g = g;
  p->src_blocked = src_blocked;
  p->dst_blocked = dst_blocked;
  if (e->ok) {
    p->dy.prepare(e->dy);
    p->other.prepare(e->other);
    p->out.prepare(e->out);
    p->exec = PreparedExec(e->prim, &e->pd);
    p->a_dy = p->exec.add(DNNL_ARG_DIFF_DST, e->dy.to);
    p->a_other = p->exec.add(other_arg, e->other.to);
    p->a_out = p->exec.add(out_arg, e->out.from);
  }
  p->e = std::move(e);
  return p;
}

// Moves `t` into r's layout (staging buffer `slot`) when r is a reorder; returns the pointer the
// primitive reads.
const void* stage(PreparedReorder& r, const Tensor& t, size_t bytes, int slot) {
  if (!r.exec.defined()) return t.data();
  void* buf = staging_data(slot, bytes);
  r.run(t.data(), buf);
  return buf;
}

void run_bwd(ConvBwdPrepared& p, const Tensor& dy, const Tensor& other, Tensor& out) {
  const ConvBwdEntry& e = *p.e;
  p.exec.set(p.a_dy, stage(p.dy, dy, e.dy.to.get_size(), 0));
  p.exec.set(p.a_other, stage(p.other, other, e.other.to.get_size(), 1));
  void* dst = p.out.exec.defined() ? staging_data(2, e.out.from.get_size()) : out.data();
  p.exec.set(p.a_out, dst);
  p.exec.run();
  if (p.out.exec.defined()) {
    p.out.exec.set(p.out.in, dst);
    p.out.exec.set(p.out.out, out.data());
    p.out.exec.run();
  }
  stream().wait();
}

// A bf16/f16 weight gradient over T threads without oneDNN's barriers: oneDNN 2.6's
// jit_bf16:avx512_core_bf16 backward-weights kernel splits the batch across threads and joins
// them with spin barriers, which on 2 cores ran 4-6x slower on two threads than on one whenever
// a thread lost its core (ResNet-18 bf16 O2 step: 9.1 s of backward-weights against 1.3 s on
// one thread; alone, 64->128 3x3 s2 at 32x32, batch 32: 116 ms vs 18 ms), while on an idle
// machine two threads won. So each thread runs a one-thread primitive on its share of the batch
// into its own float32 partial, and the partials are added and rounded once.
struct ConvBwdSplitPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  bool src_blocked = false, dst_blocked = false;
  std::vector<std::unique_ptr<ConvBwdPrepared>> parts;  // one per thread, one shared entry
  // No parts (oneDNN has no bf16 kernel here, e.g. AVX2 only): the common path's state, kept
  // here so that the instruction's slot does not swap between the two each launch.
  std::unique_ptr<KernelPrepared> fallback;
  // The partials' layout when one pass adds them into the user's bf16 oihw (sum_blocked_to_bf16,
  // after the split's parallel region): 512x512x3x3 at batch 32 (4x4), two threads, 1.6-1.8 ms
  // per launch where the adds into the first partial and oneDNN's reorder took 2.3-2.4 (means of
  // 45 PyNative launches, 3 alternated runs, load ~2; memory bound: 19 MB of float32 read).
  // Null: they are added into the first and reordered by oneDNN (MYCEL_CONV_WEIGHT_LOOPS=0, f16,
  // a layout not walked, no AVX512-BF16).
  std::unique_ptr<WeightBlocking> tail;
};

// MYCEL_CONV_BWD_SPLIT=0 leaves the bf16/f16 weight gradient to oneDNN's own threading (A/B;
// read once per process). On two cores of a Xeon with AMX (the device machine, 2026-11-27) the
// split runs oneDNN's one-thread AMX kernel (jit:avx512_core_amx_bf16) and ResNet-18's bf16 O2
// step was bimodal, ~225 or ~450-540 ms from run to run with the split on and with it off (so
// was PyTorch's, 520-805 ms): neighbours on the host's cores, not the split, set the figure
// there, and the split stays on (docs/performance_amx.md).
bool conv_bwd_split_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_CONV_BWD_SPLIT");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// The threads the split uses: the pool, bounded by the batch, which they must share evenly.
int split_threads(const WindowGeom& g) {
  int t = std::min<int64_t>(num_threads(), g.n);
  while (t > 1 && g.n % t != 0) --t;
  return t;
}

std::unique_ptr<ConvBwdSplitPrepared> prepare_split(DType dtype, const WindowGeom& g, int t,
                                                    bool src_blocked, bool dst_blocked) {
  auto s = std::make_unique<ConvBwdSplitPrepared>();
  s->threads = num_threads();
  s->g = g;
  s->src_blocked = src_blocked;
  s->dst_blocked = dst_blocked;
  WindowGeom part = g;
  part.n = g.n / t;
  const SerialScope one(0);  // the primitives are built (and keyed) for one thread
  const std::string k = key("conv2d_bwd_w_split", dtype_name(dtype), part.n, part.c, part.h, part.w,
                            part.oc, part.kh, part.kw, part.sh, part.sw, part.dh, part.dw, part.pt,
                            part.pb, part.pl, part.pr, part.groups, src_blocked, dst_blocked);
  auto e = cached<ConvBwdEntry>(
      k, [&] { return build_bwd(dtype, part, true, true, src_blocked, dst_blocked); });
  for (int i = 0; i < t && e->ok; ++i)
    s->parts.push_back(
        prepare_bwd(e, part, DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, src_blocked, dst_blocked));
  if (e->ok && dtype == DType::bfloat16 && conv_weight_loops_enabled() &&
      sum_blocked_to_bf16_available() && e->out.prim &&
      e->out.from.data_type() == memory::data_type::f32 &&
      e->out.to == memory::desc(e->out.from.dims(), memory::data_type::bf16,
                                g.groups > 1 ? tag::goihw : tag::oihw))
    s->tail = WeightBlocking::make(e->out.from);
  return s;
}

// Moves `data` into r's layout (staging buffer `slot` of this thread) when r is a reorder.
const void* stage_ptr(PreparedReorder& r, const void* data, size_t bytes, int slot) {
  if (!r.exec.defined()) return data;
  void* buf = staging_data(slot, bytes);
  r.exec.set(r.in, data);
  r.exec.set(r.out, buf);
  r.exec.run();
  return buf;
}

void run_bwd_filter_split(ConvBwdSplitPrepared& s, const Tensor& dy, const Tensor& x, Tensor& dw) {
  const int t = static_cast<int>(s.parts.size());
  const ConvBwdEntry& e = *s.parts[0]->e;
  const size_t dy_part = dy.nbytes() / t, x_part = x.nbytes() / t;
  const size_t dw_bytes = e.out.from.get_size();  // float32, the primitive's layout
  std::vector<float*> partial(t, nullptr);
  std::vector<std::exception_ptr> failed(t);
#pragma omp parallel num_threads(t)
  {
    const int i = omp_get_thread_num();
    try {
      ConvBwdPrepared& p = *s.parts[i];
      p.exec.set(p.a_dy, stage_ptr(p.dy, static_cast<const char*>(dy.data()) + i * dy_part,
                                   e.dy.to.get_size(), 0));
      p.exec.set(p.a_other, stage_ptr(p.other, static_cast<const char*>(x.data()) + i * x_part,
                                      e.other.to.get_size(), 1));
      partial[i] = static_cast<float*>(staging_data(2, dw_bytes));
      p.exec.set(p.a_out, partial[i]);
      p.exec.run();
      stream().wait();
    } catch (...) {
      failed[i] = std::current_exception();
    }
  }
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);
  if (s.tail) {  // one pass: the partials added and rounded into dw
    sum_blocked_to_bf16(*s.tail, partial.data(), t, static_cast<uint16_t*>(dw.data()), t);
    return;
  }
  const int64_t n = static_cast<int64_t>(dw_bytes / sizeof(float));
  parallel_for(n, t, [&](int64_t b, int64_t end) {
    for (int j = 1; j < t; ++j)
      for (int64_t k = b; k < end; ++k) partial[0][k] += partial[j][k];
  });
  PreparedReorder& out = s.parts[0]->out;  // float32 partial sum -> the user's dtype and layout
  out.exec.set(out.in, partial[0]);
  out.exec.set(out.out, dw.data());
  out.exec.run();
  stream().wait();
}

// `t` in NCHW: itself, or a plain copy of it when it is in the blocked layout.
Tensor plain_copy(const Tensor& t, bool blocked) {
  if (!blocked) return t;
  Tensor p = Tensor::empty(t.shape(), t.dtype());
  reorder_blocked(t, p, false);
  return p;
}

// Shared driver of both backward kernels: empty shapes, the cache, and the float32 fallbacks.
// `params` (may be null) says which activations are blocked: dy (dst_blocked), x or dx
// (src_blocked); the fast paths below that know only NCHW step aside for them.
void conv2d_bwd_dnnl(const Tensor& dy, const Tensor& other, Tensor& out, const WindowGeom& g,
                     bool weights, KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  const bool dst_blocked = params && params->dst_blocked,
             src_blocked = params && params->src_blocked;
  if (params) params->layout_taken = true;
  const bool plain = !src_blocked && !dst_blocked;
  if (out.numel() == 0) return;
  if (dy.numel() == 0 || other.numel() == 0) {  // nothing flows back: zero gradient
    std::memset(out.data(), 0, out.nbytes());
    return;
  }
  const int64_t work = dy.numel() * (g.c / g.groups) * g.kh * g.kw;
  std::unique_ptr<ConvBwdSplitPrepared> split_local;
  if (weights && out.dtype() != DType::float32 && work >= serial_work_threshold() &&
      conv_bwd_split_enabled()) {
    // bf16/f16 weight gradient: see ConvBwdSplitPrepared (one thread: one split part)
    std::unique_ptr<ConvBwdSplitPrepared>& local = split_local;
    const int t = split_threads(g);
    ConvBwdSplitPrepared& s = prepared_state<ConvBwdSplitPrepared>(
        slot, local,
        [&](const ConvBwdSplitPrepared& q) {
          return q.threads == num_threads() && same_geom(q.g, g) &&
                 static_cast<int>(q.parts.size()) == t && q.src_blocked == src_blocked &&
                 q.dst_blocked == dst_blocked;
        },
        [&] { return prepare_split(out.dtype(), g, t, src_blocked, dst_blocked); });
    if (!s.parts.empty()) return run_bwd_filter_split(s, dy, other, out);
    slot = &s.fallback;
  }
  const SerialScope threads(work);
  // Few channels: our AVX2 loops beat oneDNN's (conv_direct.h); they read and write NCHW.
  if (plain && weights && conv2d_direct_bwd_filter_fits(out.dtype(), g)) {
    const size_t bytes = sizeof(float) * static_cast<size_t>(conv2d_direct_bwd_filter_scratch(g));
    return conv2d_direct_backprop_filter(dy, other, out, g,
                                         static_cast<float*>(staging_data(0, bytes)));
  }
  if (plain && weights && conv2d_gemm_bwd_filter_fits(out.dtype(), g))
    return conv2d_gemm_backprop_filter(dy, other, out, g, slot);
  // 3x3 stride 1 at a batch: Winograd (conv_winograd_nchw.h).
  if (plain && !weights && dy.dtype() == DType::float32 && other.dtype() == DType::float32)
    if (const int m = winograd_nchw_bwd_data_tile(out.dtype(), g); m != 0)
      return conv2d_backprop_input_winograd_nchw(dy, other, out, g, m);
  // Few channels, narrow rows, a batch: images in the vector lanes (conv_batch_lanes.h).
  if (plain && !weights && conv2d_bwd_data_batch_lanes_fits(out.dtype(), g))
    return conv2d_backprop_input_batch_lanes(dy, other, out, g);
  if (plain && !weights && conv2d_direct_bwd_data_fits(out.dtype(), g))
    return conv2d_direct_backprop_input(
        dy, other, out, g, static_cast<float*>(staging_data(0, sizeof(float) * other.numel())));
  std::unique_ptr<ConvBwdPrepared> local;
  ConvBwdPrepared& p = prepared_state<ConvBwdPrepared>(
      slot, local,
      [&](const ConvBwdPrepared& q) {
        return q.threads == num_threads() && same_geom(q.g, g) && q.src_blocked == src_blocked &&
               q.dst_blocked == dst_blocked;
      },
      [&] {
        const std::string k =
            key(weights ? "conv2d_bwd_w" : "conv2d_bwd_d", dtype_name(out.dtype()), g.n, g.c, g.h,
                g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pb, g.pl, g.pr, g.groups,
                src_blocked, dst_blocked);
        auto e = cached<ConvBwdEntry>(
            k, [&] { return build_bwd(out.dtype(), g, weights, false, src_blocked, dst_blocked); });
        return prepare_bwd(std::move(e), g, weights ? DNNL_ARG_SRC : DNNL_ARG_WEIGHTS,
                           weights ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_DIFF_SRC, src_blocked,
                           dst_blocked);
      });
  if (!p.e->ok && !plain) {  // no oneDNN kernel for these layouts: NCHW copies (a rare geometry)
    const Tensor dy_plain = plain_copy(dy, dst_blocked);
    const Tensor other_plain = plain_copy(other, weights && src_blocked);
    if (weights || !src_blocked)
      return conv2d_bwd_dnnl(dy_plain, other_plain, out, g, weights, nullptr, nullptr);
    Tensor dx = Tensor::empty(out.shape(), out.dtype());
    conv2d_bwd_dnnl(dy_plain, other_plain, dx, g, weights, nullptr, nullptr);
    return reorder_blocked(dx, out, true);
  }
  if (!p.e->ok) {
    if (out.dtype() == DType::float32)
      return weights ? conv2d_backprop_filter_ref<float>(dy, other, out, g)
                     : conv2d_backprop_input_ref<float>(dy, other, out, g);
    Tensor dy32 = dy.to(DType::float32), other32 = other.to(DType::float32);
    Tensor out32 = Tensor::empty(out.shape(), DType::float32);
    conv2d_bwd_dnnl(dy32, other32, out32, g, weights, nullptr, nullptr);
    convert_elements(out32.data(), DType::float32, out.data(), out.dtype(), out.numel());
    return;
  }
  run_bwd(p, dy, other, out);
}

}  // namespace

void conv2d_backprop_input_dnnl(const Tensor& dy, const Tensor& w, Tensor& dx, const WindowGeom& g,
                                KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  conv2d_bwd_dnnl(dy, w, dx, g, false, params, slot);
}

void conv2d_backprop_filter_dnnl(const Tensor& dy, const Tensor& x, Tensor& dw, const WindowGeom& g,
                                 KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  conv2d_bwd_dnnl(dy, x, dw, g, true, params, slot);
}

}  // namespace mycel::cpu
