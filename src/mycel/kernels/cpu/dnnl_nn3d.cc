// conv3d and 3-d pooling (and their backward) on oneDNN's primitives, float32, on the user's plain
// NCDHW buffers (oneDNN picks its implementation for plain layouts; no reorders to keep).
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn3d.h"

namespace mycel::cpu::detail {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

memory::dims dims3(const std::array<int64_t, 3>& a) { return {a[0], a[1], a[2]}; }
memory::dims minus1(const std::array<int64_t, 3>& a) { return {a[0] - 1, a[1] - 1, a[2] - 1}; }

// Plain descriptors of one convolution geometry.
struct ConvDescs {
  memory::desc src, wei, dst, bias;
};

ConvDescs conv_descs(const Window3Geom& g) {
  const auto dt = memory::data_type::f32;
  const memory::dims wei =
      g.groups > 1 ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.k[0], g.k[1], g.k[2]}
                   : memory::dims{g.oc, g.c, g.k[0], g.k[1], g.k[2]};
  return {memory::desc({g.n, g.c, g.in[0], g.in[1], g.in[2]}, dt, tag::ncdhw),
          memory::desc(wei, dt, g.groups > 1 ? tag::goidhw : tag::oidhw),
          memory::desc({g.n, g.oc, g.out[0], g.out[1], g.out[2]}, dt, tag::ncdhw),
          memory::desc({g.oc}, dt, tag::x)};
}

dnnl::convolution_forward::desc conv_fwd_desc(const ConvDescs& d, const Window3Geom& g,
                                              dnnl::prop_kind prop, bool bias) {
  const auto alg = dnnl::algorithm::convolution_direct;
  return bias ? dnnl::convolution_forward::desc(prop, alg, d.src, d.wei, d.bias, d.dst, dims3(g.s),
                                                minus1(g.d), dims3(g.p0), dims3(g.p1))
              : dnnl::convolution_forward::desc(prop, alg, d.src, d.wei, d.dst, dims3(g.s),
                                                minus1(g.d), dims3(g.p0), dims3(g.p1));
}

std::string geom_key(const char* what, const Window3Geom& g) {
  std::string k = key(what, g.n, g.c, g.oc, g.groups);
  for (const auto* a : {&g.in, &g.out, &g.k, &g.s, &g.d, &g.p0, &g.p1})
    for (int64_t v : *a) k += std::to_string(v) + ',';
  return k;
}

// Builds a PrimEntry with `make`, marking it not ok when oneDNN has no implementation.
template <class Make>
std::shared_ptr<PrimEntry> build(Make make) {
  auto e = std::make_shared<PrimEntry>();
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
  auto e = cached<PrimEntry>(geom_key(bias ? "conv3d_b" : "conv3d", g), [&] {
    return build([&](PrimEntry& p) {
      dnnl::convolution_forward::primitive_desc pd(
          conv_fwd_desc(d, g, dnnl::prop_kind::forward_inference, bias != nullptr), default_attr(),
          engine());
      p.pd = pd;
      p.prim = dnnl::convolution_forward(pd);
    });
  });
  if (!e->ok) return false;
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, wrap(d.src, x)},
                                          {DNNL_ARG_WEIGHTS, wrap(d.wei, w)},
                                          {DNNL_ARG_DST, wrap(d.dst, y)}};
  if (bias) args[DNNL_ARG_BIAS] = wrap(d.bias, *bias);
  execute(*e, args);
  return true;
}

bool conv3d_bwd_dnnl(const Tensor& dy, const Tensor& other, Tensor& out, const Window3Geom& g,
                     bool weights) {
  const ConvDescs d = conv_descs(g);
  const SerialScope threads(dy.numel() * (g.c / g.groups) * g.k_volume());
  auto e = cached<PrimEntry>(geom_key(weights ? "conv3d_bwd_w" : "conv3d_bwd_d", g), [&] {
    return build([&](PrimEntry& p) {
      const auto alg = dnnl::algorithm::convolution_direct;
      dnnl::convolution_forward::primitive_desc hint(
          conv_fwd_desc(d, g, dnnl::prop_kind::forward_training, false), default_attr(), engine());
      if (weights) {
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(alg, d.src, d.wei, d.dst, dims3(g.s),
                                                     minus1(g.d), dims3(g.p0), dims3(g.p1)),
            default_attr(), engine(), hint);
        p.pd = pd;
        p.prim = dnnl::convolution_backward_weights(pd);
      } else {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(alg, d.src, d.wei, d.dst, dims3(g.s), minus1(g.d),
                                                  dims3(g.p0), dims3(g.p1)),
            default_attr(), engine(), hint);
        p.pd = pd;
        p.prim = dnnl::convolution_backward_data(pd);
      }
    });
  });
  if (!e->ok) return false;
  if (weights)
    execute(*e, {{DNNL_ARG_DIFF_DST, wrap(d.dst, dy)},
                 {DNNL_ARG_SRC, wrap(d.src, other)},
                 {DNNL_ARG_DIFF_WEIGHTS, wrap(d.wei, out)}});
  else
    execute(*e, {{DNNL_ARG_DIFF_DST, wrap(d.dst, dy)},
                 {DNNL_ARG_WEIGHTS, wrap(d.wei, other)},
                 {DNNL_ARG_DIFF_SRC, wrap(d.src, out)}});
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
