// conv2d and its backward (data and weights) on oneDNN's convolution primitives. Each primitive
// picks its preferred (blocked) layouts; cached reorders move NCHW data in and out of them.
#include <cstring>
#include <mutex>
#include <optional>

#include "mycel/kernels/cpu/conv_direct.h"
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
  // Constant weights already in the primitive's layout, by their buffer (LayoutRequest::
  // const_weights); each keeps its source alive so the address cannot be reused by another.
  std::mutex const_mu;
  std::unordered_map<const void*, std::pair<Tensor, Tensor>> const_wei;
};

// w in e's weight layout, reordered once per weight buffer (bounded: cleared past 64 buffers).
memory const_weights(ConvEntry& e, const Tensor& w) {
  std::lock_guard<std::mutex> lock(e.const_mu);
  auto it = e.const_wei.find(w.data());
  if (it == e.const_wei.end()) {
    if (e.const_wei.size() >= 64) e.const_wei.clear();
    Tensor buf = Tensor::empty({static_cast<int64_t>(e.wei.to.get_size())}, DType::uint8);
    memory m(e.wei.to, engine(), buf.data());
    memory user = wrap(e.wei.from, w);
    e.wei.prim->execute(stream(), user, m);
    stream().wait();
    it = e.const_wei.emplace(w.data(), std::make_pair(w, buf)).first;
  }
  return memory(e.wei.to, engine(), it->second.second.data());
}

Reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  Reorder r{from, to, std::nullopt};
  if (from != to)
    r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  return r;
}

// `post` may only hold relu (conv2d has no row-vector post-op). `layout` says whether x and y
// are channel-blocked (graph backend) rather than NCHW.
std::shared_ptr<ConvEntry> build(DType dtype, const WindowGeom& g, bool has_bias,
                                 const PostOpRequest* post, const LayoutRequest& layout) {
  auto e = std::make_shared<ConvEntry>();
  const auto dt = to_dnnl(dtype);
  const memory::dims src_dims{g.n, g.c, g.h, g.w}, dst_dims{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei_dims =
      g.groups > 1 ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                   : memory::dims{g.oc, g.c, g.kh, g.kw};
  const memory::desc src_user = blocked_desc({g.n, g.c, g.h, g.w}, dtype, layout.src_blocked);
  const memory::desc dst_user = blocked_desc({g.n, g.oc, g.oh, g.ow}, dtype, layout.dst_blocked);
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
    e->prim = dnnl::convolution_forward(e->pd);
    e->src = make_reorder(src_user, e->pd.src_desc());
    e->wei = make_reorder(wei_user, e->pd.weights_desc());
    e->dst = make_reorder(e->pd.dst_desc(), dst_user);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

// Moves `t` into r's target layout when it differs; `hold` keeps the new buffer alive.
memory to_layout(const Reorder& r, const Tensor& t, Tensor& hold, int slot) {
  memory user = wrap(r.from, t);
  if (!r.prim) return user;
  hold = staging_buffer(slot, r.to.get_size());
  memory m(r.to, engine(), hold.data());
  r.prim->execute(stream(), user, m);
  return m;
}

}  // namespace

void conv2d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g) {
  PostOpRequest* post = take_post_ops();
  const LayoutRequest layout = take_layout();
  if (post)
    for (const PostOp& p : post->ops)
      if (p.kind != PostOp::Kind::kRelu && p.kind != PostOp::Kind::kRelu6)
        post = nullptr;  // not ours to apply: the caller does
  if (y.numel() == 0) return;
  MYCEL_CHECK((!layout.src_blocked && !layout.dst_blocked) || (x.numel() > 0 && w.numel() > 0),
              RuntimeError, "[conv2d] blocked layouts need non-empty inputs (backend bug)");
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
  // Few channels: our kernel beats oneDNN's. It reads NCHW (which one-channel NHWC is).
  if (conv2d_direct_fits(y.dtype(), g) &&
      (!layout.src_blocked || (g.c == 1 && channel_block() == 1))) {
    conv2d_direct(x, w, bias, y, g, post && !post->ops.empty(),
                  layout.dst_blocked ? direct_block(g.oc) : 0);
    if (post) post->applied = true;
    return;
  }
  const SerialScope threads(y.numel() * (g.c / g.groups) * g.kh * g.kw);
  const std::string k =
      key("conv2d", dtype_name(y.dtype()), g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh,
          g.dw, g.pt, g.pb, g.pl, g.pr, g.groups, bias != nullptr, post_ops_key(post),
          layout.src_blocked, layout.dst_blocked);
  auto e = cached<ConvEntry>(k, [&] { return build(y.dtype(), g, bias != nullptr, post, layout); });
  if (!e->ok) {
    MYCEL_CHECK(!layout.src_blocked && !layout.dst_blocked, RuntimeError,
                "[conv2d] oneDNN has no blocked-layout convolution here (backend bug)");
    if (y.dtype() == DType::float32) return conv2d_ref<float>(x, w, bias, y, g);
    Tensor x32 = x.to(DType::float32), w32 = w.to(DType::float32);
    Tensor b32 = bias ? bias->to(DType::float32) : Tensor();
    Tensor y32 = Tensor::empty(y.shape(), DType::float32);
    conv2d_dnnl(x32, w32, bias ? &b32 : nullptr, y32, g);
    convert_elements(y32.data(), DType::float32, y.data(), y.dtype(), y.numel());
    return;
  }
  Tensor src_buf, wei_buf, dst_buf;
  memory src = to_layout(e->src, x, src_buf, 0);
  memory wei =
      layout.const_weights && e->wei.prim ? const_weights(*e, w) : to_layout(e->wei, w, wei_buf, 1);
  memory dst = wrap(e->dst.to, y);
  if (e->dst.prim) {
    dst_buf = staging_buffer(2, e->dst.from.get_size());
    dst = memory(e->dst.from, engine(), dst_buf.data());
  }
  Tensor pad = scratchpad(e->pd);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DST, dst},
      {DNNL_ARG_SCRATCHPAD, memory(e->pd.scratchpad_desc(), engine(), pad.data())}};
  if (bias) args[DNNL_ARG_BIAS] = wrap(e->bias_md, *bias);
  e->prim.execute(stream(), args);
  if (e->dst.prim) {
    memory user = wrap(e->dst.to, y);
    e->dst.prim->execute(stream(), dst, user);
  }
  stream().wait();
  if (post) post->applied = true;
}

namespace {

// A backward convolution: two inputs (diff_dst and weights, or diff_dst and src) and one output,
// each with the reorder between its user layout and the primitive's.
struct ConvBwdEntry : Entry {
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
  Reorder dy, other, out;
};

// User (plain) and "any" descriptors and the window parameters of one convolution geometry.
struct ConvDescs {
  memory::desc src_user, wei_user, dst_user, src_any, wei_any, dst_any;
  memory::dims strides, dil, pad_l, pad_r;
};

ConvDescs conv_descs(DType dtype, const WindowGeom& g) {
  const auto dt = to_dnnl(dtype);
  const memory::dims src{g.n, g.c, g.h, g.w}, dst{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei = g.groups > 1
                               ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                               : memory::dims{g.oc, g.c, g.kh, g.kw};
  return {memory::desc(src, dt, tag::nchw),
          memory::desc(wei, dt, g.groups > 1 ? tag::goihw : tag::oihw),
          memory::desc(dst, dt, tag::nchw),
          memory::desc(src, dt, tag::any),
          memory::desc(wei, dt, tag::any),
          memory::desc(dst, dt, tag::any),
          {g.sh, g.sw},
          {g.dh - 1, g.dw - 1},
          {g.pt, g.pl},
          {g.pb, g.pr}};
}

// Backward data (weights == false: dx from dy and w) or backward weights (dw from dy and x).
std::shared_ptr<ConvBwdEntry> build_bwd(DType dtype, const WindowGeom& g, bool weights) {
  auto e = std::make_shared<ConvBwdEntry>();
  const ConvDescs d = conv_descs(dtype, g);
  try {
    const auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc hint(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, d.src_any,
                                        d.wei_any, d.dst_any, d.strides, d.dil, d.pad_l, d.pad_r),
        default_attr(), engine());
    if (weights) {
      dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(alg, d.src_any, d.wei_any, d.dst_any, d.strides,
                                                   d.dil, d.pad_l, d.pad_r),
          default_attr(), engine(), hint);
      e->pd = pd;
      e->prim = dnnl::convolution_backward_weights(pd);
      e->dy = make_reorder(d.dst_user, pd.diff_dst_desc());
      e->other = make_reorder(d.src_user, pd.src_desc());
      e->out = make_reorder(pd.diff_weights_desc(), d.wei_user);
    } else {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(alg, d.src_any, d.wei_any, d.dst_any, d.strides,
                                                d.dil, d.pad_l, d.pad_r),
          default_attr(), engine(), hint);
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

void run_bwd(const ConvBwdEntry& e, const Tensor& dy, int other_arg, const Tensor& other,
             int out_arg, Tensor& out) {
  Tensor dy_buf, other_buf, out_buf;
  memory mdy = to_layout(e.dy, dy, dy_buf, 0);
  memory mother = to_layout(e.other, other, other_buf, 1);
  memory mout = wrap(e.out.to, out);
  if (e.out.prim) {
    out_buf = staging_buffer(2, e.out.from.get_size());
    mout = memory(e.out.from, engine(), out_buf.data());
  }
  Tensor pad = scratchpad(e.pd);
  e.prim.execute(stream(),
                 {{DNNL_ARG_DIFF_DST, mdy},
                  {other_arg, mother},
                  {out_arg, mout},
                  {DNNL_ARG_SCRATCHPAD, memory(e.pd.scratchpad_desc(), engine(), pad.data())}});
  if (e.out.prim) {
    memory user = wrap(e.out.to, out);
    e.out.prim->execute(stream(), mout, user);
  }
  stream().wait();
}

// Shared driver of both backward kernels: empty shapes, the cache, and the float32 fallbacks.
void conv2d_bwd_dnnl(const Tensor& dy, const Tensor& other, Tensor& out, const WindowGeom& g,
                     bool weights) {
  if (out.numel() == 0) return;
  if (dy.numel() == 0 || other.numel() == 0) {  // nothing flows back: zero gradient
    std::memset(out.data(), 0, out.nbytes());
    return;
  }
  const SerialScope threads(dy.numel() * (g.c / g.groups) * g.kh * g.kw);
  const std::string k =
      key(weights ? "conv2d_bwd_w" : "conv2d_bwd_d", dtype_name(out.dtype()), g.n, g.c, g.h, g.w,
          g.oc, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pb, g.pl, g.pr, g.groups);
  auto e = cached<ConvBwdEntry>(k, [&] { return build_bwd(out.dtype(), g, weights); });
  if (!e->ok) {
    if (out.dtype() == DType::float32)
      return weights ? conv2d_backprop_filter_ref<float>(dy, other, out, g)
                     : conv2d_backprop_input_ref<float>(dy, other, out, g);
    Tensor dy32 = dy.to(DType::float32), other32 = other.to(DType::float32);
    Tensor out32 = Tensor::empty(out.shape(), DType::float32);
    conv2d_bwd_dnnl(dy32, other32, out32, g, weights);
    convert_elements(out32.data(), DType::float32, out.data(), out.dtype(), out.numel());
    return;
  }
  if (weights)
    run_bwd(*e, dy, DNNL_ARG_SRC, other, DNNL_ARG_DIFF_WEIGHTS, out);
  else
    run_bwd(*e, dy, DNNL_ARG_WEIGHTS, other, DNNL_ARG_DIFF_SRC, out);
}

}  // namespace

void conv2d_backprop_input_dnnl(const Tensor& dy, const Tensor& w, Tensor& dx,
                                const WindowGeom& g) {
  conv2d_bwd_dnnl(dy, w, dx, g, false);
}

void conv2d_backprop_filter_dnnl(const Tensor& dy, const Tensor& x, Tensor& dw,
                                 const WindowGeom& g) {
  conv2d_bwd_dnnl(dy, x, dw, g, true);
}

}  // namespace mycel::cpu
