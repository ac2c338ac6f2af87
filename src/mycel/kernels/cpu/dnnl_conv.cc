// conv2d on oneDNN's convolution primitive. The primitive picks its preferred (blocked) layouts;
// cached reorders move NCHW data in and out of them.
#include <cstring>
#include <optional>

#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
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
};

Reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  Reorder r{from, to, std::nullopt};
  if (from != to)
    r.prim = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  return r;
}

std::shared_ptr<ConvEntry> build(DType dtype, const WindowGeom& g, bool has_bias) {
  auto e = std::make_shared<ConvEntry>();
  const auto dt = to_dnnl(dtype);
  const memory::dims src_dims{g.n, g.c, g.h, g.w}, dst_dims{g.n, g.oc, g.oh, g.ow};
  const memory::dims wei_dims =
      g.groups > 1 ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                   : memory::dims{g.oc, g.c, g.kh, g.kw};
  const memory::desc src_user(src_dims, dt, tag::nchw), dst_user(dst_dims, dt, tag::nchw);
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
    e->pd = dnnl::convolution_forward::primitive_desc(d, default_attr(), engine());
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
memory to_layout(const Reorder& r, const Tensor& t, Tensor& hold) {
  memory user = wrap(r.from, t);
  if (!r.prim) return user;
  hold = Tensor::empty({static_cast<int64_t>(r.to.get_size())}, DType::uint8);
  memory m(r.to, engine(), hold.data());
  r.prim->execute(stream(), user, m);
  return m;
}

}  // namespace

void conv2d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g) {
  if (y.numel() == 0) return;
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
  const std::string k =
      key("conv2d", dtype_name(y.dtype()), g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh,
          g.dw, g.pt, g.pb, g.pl, g.pr, g.groups, bias != nullptr);
  auto e = cached<ConvEntry>(k, [&] { return build(y.dtype(), g, bias != nullptr); });
  if (!e->ok) {
    if (y.dtype() == DType::float32) return conv2d_ref<float>(x, w, bias, y, g);
    Tensor x32 = x.to(DType::float32), w32 = w.to(DType::float32);
    Tensor b32 = bias ? bias->to(DType::float32) : Tensor();
    Tensor y32 = Tensor::empty(y.shape(), DType::float32);
    conv2d_dnnl(x32, w32, bias ? &b32 : nullptr, y32, g);
    convert_elements(y32.data(), DType::float32, y.data(), y.dtype(), y.numel());
    return;
  }
  Tensor src_buf, wei_buf, dst_buf;
  memory src = to_layout(e->src, x, src_buf);
  memory wei = to_layout(e->wei, w, wei_buf);
  memory dst = wrap(e->dst.to, y);
  if (e->dst.prim) {
    dst_buf = Tensor::empty({static_cast<int64_t>(e->dst.from.get_size())}, DType::uint8);
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
}

}  // namespace mycel::cpu
