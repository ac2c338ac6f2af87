// conv3d and 3-d pooling (and their backward) on oneDNN's primitives, float32. Convolutions pick
// their preferred (blocked) layouts, with cached reorders from and to the user's NCDHW buffers
// (on plain layouts oneDNN falls back to a slower GEMM-based convolution); pooling runs on the
// NCDHW buffers directly.
#include <optional>

#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn3d.h"

namespace mycel::cpu::detail {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

memory::dims dims3(const std::array<int64_t, 3>& a) { return {a[0], a[1], a[2]}; }
memory::dims minus1(const std::array<int64_t, 3>& a) { return {a[0] - 1, a[1] - 1, a[2] - 1}; }

// Plain (user) descriptors of one convolution geometry, and `any` ones for the primitive to
// choose its layouts.
struct ConvDescs {
  memory::desc src, wei, dst, bias, src_any, wei_any, dst_any;
};

ConvDescs conv_descs(const Window3Geom& g) {
  const auto dt = memory::data_type::f32;
  const memory::dims wei =
      g.groups > 1 ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.k[0], g.k[1], g.k[2]}
                   : memory::dims{g.oc, g.c, g.k[0], g.k[1], g.k[2]};
  const memory::dims src{g.n, g.c, g.in[0], g.in[1], g.in[2]};
  const memory::dims dst{g.n, g.oc, g.out[0], g.out[1], g.out[2]};
  return {memory::desc(src, dt, tag::ncdhw),
          memory::desc(wei, dt, g.groups > 1 ? tag::goidhw : tag::oidhw),
          memory::desc(dst, dt, tag::ncdhw),
          memory::desc({g.oc}, dt, tag::x),
          memory::desc(src, dt, tag::any),
          memory::desc(wei, dt, tag::any),
          memory::desc(dst, dt, tag::any)};
}

// A reorder between a user layout and a primitive's, present only when the two differ.
struct Reorder {
  memory::desc user, prim;
  std::optional<dnnl::reorder> r;
};

Reorder make_reorder(const memory::desc& user, const memory::desc& prim, bool into_prim) {
  Reorder o{user, prim, std::nullopt};
  if (user != prim)
    o.r = into_prim ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), prim))
                    : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), prim, engine(), user));
  return o;
}

// A convolution primitive with the reorders of its two inputs and its output.
struct ConvEntry : PrimEntry {
  Reorder a, b, out;
};

// t in r's primitive layout (a per-thread staging buffer in `slot` when it must move).
memory stage_in(const Reorder& r, const Tensor& t, Tensor& hold, int slot) {
  memory user = wrap(r.user, t);
  if (!r.r) return user;
  hold = staging_buffer(slot, r.prim.get_size());
  memory m(r.prim, engine(), hold.data());
  r.r->execute(stream(), user, m);
  return m;
}

// Runs e: inputs a and b (and an optional plain bias) to `out`, each through its reorder.
void run_conv(const ConvEntry& e, int arg_a, const Tensor& a, int arg_b, const Tensor& b,
              const Tensor* bias, const memory::desc& bias_md, int arg_out, Tensor& out) {
  Tensor hold_a, hold_b, hold_out;
  memory ma = stage_in(e.a, a, hold_a, 0), mb = stage_in(e.b, b, hold_b, 1);
  memory mo = wrap(e.out.user, out);
  if (e.out.r) {
    hold_out = staging_buffer(2, e.out.prim.get_size());
    mo = memory(e.out.prim, engine(), hold_out.data());
  }
  Tensor pad = scratchpad(e.pd);
  std::unordered_map<int, memory> args = {
      {arg_a, ma},
      {arg_b, mb},
      {arg_out, mo},
      {DNNL_ARG_SCRATCHPAD, memory(e.pd.scratchpad_desc(), engine(), pad.data())}};
  if (bias) args[DNNL_ARG_BIAS] = wrap(bias_md, *bias);
  e.prim.execute(stream(), args);
  if (e.out.r) {
    memory user = wrap(e.out.user, out);
    e.out.r->execute(stream(), mo, user);
  }
  stream().wait();
}

dnnl::convolution_forward::desc conv_fwd_desc(const ConvDescs& d, const Window3Geom& g,
                                              dnnl::prop_kind prop, bool bias) {
  const auto alg = dnnl::algorithm::convolution_direct;
  return bias ? dnnl::convolution_forward::desc(prop, alg, d.src_any, d.wei_any, d.bias, d.dst_any,
                                                dims3(g.s), minus1(g.d), dims3(g.p0), dims3(g.p1))
              : dnnl::convolution_forward::desc(prop, alg, d.src_any, d.wei_any, d.dst_any,
                                                dims3(g.s), minus1(g.d), dims3(g.p0), dims3(g.p1));
}

std::string geom_key(const char* what, const Window3Geom& g) {
  std::string k = key(what, g.n, g.c, g.oc, g.groups);
  for (const auto* a : {&g.in, &g.out, &g.k, &g.s, &g.d, &g.p0, &g.p1})
    for (int64_t v : *a) k += std::to_string(v) + ',';
  return k;
}

// Builds an entry E with `make`, marking it not ok when oneDNN has no implementation.
template <class E = PrimEntry, class Make>
std::shared_ptr<E> build(Make make) {
  auto e = std::make_shared<E>();
  try {
    make(*e);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

dnnl::algorithm pool_alg(bool max, bool include_pad) {
  return max           ? dnnl::algorithm::pooling_max
         : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                       : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_forward::desc pool_fwd_desc(const Window3Geom& g, dnnl::prop_kind prop,
                                          dnnl::algorithm alg, const memory::desc& src,
                                          const memory::desc& dst) {
  return dnnl::pooling_forward::desc(prop, alg, src, dst, dims3(g.s), dims3(g.k), dims3(g.p0),
                                     dims3(g.p1));
}

memory::desc plain(const Window3Geom& g, const std::array<int64_t, 3>& sp) {
  return memory::desc({g.n, g.c, sp[0], sp[1], sp[2]}, memory::data_type::f32, tag::ncdhw);
}

}  // namespace

bool conv3d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const Window3Geom& g) {
  const ConvDescs d = conv_descs(g);
  const SerialScope threads(y.numel() * (g.c / g.groups) * g.k_volume());
  auto e = cached<ConvEntry>(geom_key(bias ? "conv3d_b" : "conv3d", g), [&] {
    return build<ConvEntry>([&](ConvEntry& p) {
      dnnl::convolution_forward::primitive_desc pd(
          conv_fwd_desc(d, g, dnnl::prop_kind::forward_inference, bias != nullptr), default_attr(),
          engine());
      p.pd = pd;
      p.prim = dnnl::convolution_forward(pd);
      p.a = make_reorder(d.src, pd.src_desc(), true);
      p.b = make_reorder(d.wei, pd.weights_desc(), true);
      p.out = make_reorder(d.dst, pd.dst_desc(), false);
    });
  });
  if (!e->ok) return false;
  run_conv(*e, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, bias, d.bias, DNNL_ARG_DST, y);
  return true;
}

bool conv3d_bwd_dnnl(const Tensor& dy, const Tensor& other, Tensor& out, const Window3Geom& g,
                     bool weights) {
  const ConvDescs d = conv_descs(g);
  const SerialScope threads(dy.numel() * (g.c / g.groups) * g.k_volume());
  auto e = cached<ConvEntry>(geom_key(weights ? "conv3d_bwd_w" : "conv3d_bwd_d", g), [&] {
    return build<ConvEntry>([&](ConvEntry& p) {
      const auto alg = dnnl::algorithm::convolution_direct;
      dnnl::convolution_forward::primitive_desc hint(
          conv_fwd_desc(d, g, dnnl::prop_kind::forward_training, false), default_attr(), engine());
      if (weights) {
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(alg, d.src_any, d.wei_any, d.dst_any,
                                                     dims3(g.s), minus1(g.d), dims3(g.p0),
                                                     dims3(g.p1)),
            default_attr(), engine(), hint);
        p.pd = pd;
        p.prim = dnnl::convolution_backward_weights(pd);
        p.a = make_reorder(d.dst, pd.diff_dst_desc(), true);
        p.b = make_reorder(d.src, pd.src_desc(), true);
        p.out = make_reorder(d.wei, pd.diff_weights_desc(), false);
      } else {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(alg, d.src_any, d.wei_any, d.dst_any, dims3(g.s),
                                                  minus1(g.d), dims3(g.p0), dims3(g.p1)),
            default_attr(), engine(), hint);
        p.pd = pd;
        p.prim = dnnl::convolution_backward_data(pd);
        p.a = make_reorder(d.dst, pd.diff_dst_desc(), true);
        p.b = make_reorder(d.wei, pd.weights_desc(), true);
        p.out = make_reorder(d.src, pd.diff_src_desc(), false);
      }
    });
  });
  if (!e->ok) return false;
  if (weights)
    run_conv(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_SRC, other, nullptr, d.bias, DNNL_ARG_DIFF_WEIGHTS,
             out);
  else
    run_conv(*e, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_WEIGHTS, other, nullptr, d.bias, DNNL_ARG_DIFF_SRC,
             out);
  return true;
}

bool pool3d_dnnl(const Tensor& x, Tensor& y, const Window3Geom& g, bool max,
                 bool count_include_pad) {
  const memory::desc src = plain(g, g.in), dst = plain(g, g.out);
  const auto alg = pool_alg(max, count_include_pad);
  const SerialScope threads(2 * y.numel() * g.k_volume());
  auto e =
      cached<PrimEntry>(geom_key(max                 ? "max_pool3d"
                                 : count_include_pad ? "avg_pool3d_i"
                                                     : "avg_pool3d",
                                 g),
                        [&] {
                          return build([&](PrimEntry& p) {
                            dnnl::pooling_forward::primitive_desc pd(
                                pool_fwd_desc(g, dnnl::prop_kind::forward_inference, alg, src, dst),
                                default_attr(), engine());
                            p.pd = pd;
                            p.prim = dnnl::pooling_forward(pd);
                          });
                        });
  if (!e->ok) return false;
  execute(*e, {{DNNL_ARG_SRC, wrap(src, x)}, {DNNL_ARG_DST, wrap(dst, y)}});
  return true;
}

namespace {

// Backward pooling; max pooling also keeps a forward_training primitive that recomputes the
// workspace (where each maximum was).
struct PoolBwdEntry : Entry {
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc pd;
  dnnl::pooling_backward prim;
};

}  // namespace

bool pool3d_grad_dnnl(const Tensor& x, const Tensor& dy, Tensor& dx, const Window3Geom& g, bool max,
                      bool count_include_pad) {
  const memory::desc src = plain(g, g.in), dst = plain(g, g.out);
  const auto alg = pool_alg(max, count_include_pad);
  const SerialScope threads(2 * dy.numel() * g.k_volume());
  const std::string k = geom_key(max                 ? "max_pool3d_bwd"
                                 : count_include_pad ? "avg_pool3d_i_bwd"
                                                     : "avg_pool3d_bwd",
                                 g);
  auto e = cached<PoolBwdEntry>(k, [&] {
    auto p = std::make_shared<PoolBwdEntry>();
    try {
      p->fwd_pd = dnnl::pooling_forward::primitive_desc(
          pool_fwd_desc(g, dnnl::prop_kind::forward_training, alg, src, dst), default_attr(),
          engine());
      p->fwd = dnnl::pooling_forward(p->fwd_pd);
      p->pd = dnnl::pooling_backward::primitive_desc(
          dnnl::pooling_backward::desc(alg, src, dst, dims3(g.s), dims3(g.k), dims3(g.p0),
                                       dims3(g.p1)),
          default_attr(), engine(), p->fwd_pd);
      p->prim = dnnl::pooling_backward(p->pd);
    } catch (const dnnl::error& err) {
      if (!is_unimplemented(err)) throw;
      p->ok = false;
    }
    return p;
  });
  if (!e->ok) return false;
  Tensor pad_f = scratchpad(e->fwd_pd), pad_b = scratchpad(e->pd), ws_buf, y_buf;
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_DIFF_DST, wrap(dst, dy)},
      {DNNL_ARG_DIFF_SRC, wrap(src, dx)},
      {DNNL_ARG_SCRATCHPAD, memory(e->pd.scratchpad_desc(), engine(), pad_b.data())}};
  if (max) {  // recompute where the maxima are
    const memory::desc ws_md = e->fwd_pd.workspace_desc();
    ws_buf = Tensor::empty({static_cast<int64_t>(ws_md.get_size())}, DType::uint8);
    y_buf = Tensor::empty(dy.shape(), dy.dtype());
    memory ws(ws_md, engine(), ws_buf.data());
    e->fwd.execute(stream(), {{DNNL_ARG_SRC, wrap(src, x)},
                              {DNNL_ARG_DST, wrap(dst, y_buf)},
                              {DNNL_ARG_WORKSPACE, ws},
                              {DNNL_ARG_SCRATCHPAD,
                               memory(e->fwd_pd.scratchpad_desc(), engine(), pad_f.data())}});
    args[DNNL_ARG_WORKSPACE] = ws;
  }
  e->prim.execute(stream(), args);
  stream().wait();
  return true;
}

}  // namespace mycel::cpu::detail
