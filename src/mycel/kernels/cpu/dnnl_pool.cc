// max_pool2d and avg_pool2d on oneDNN's pooling primitive, on the user's NCHW buffers. Asymmetric
// ("same") padding maps to padding_l / padding_r.
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

struct PoolEntry : PrimEntry {
  memory::desc src, dst;
};

std::shared_ptr<PoolEntry> build(DType dtype, const WindowGeom& g, dnnl::algorithm alg) {
  auto e = std::make_shared<PoolEntry>();
  const auto dt = to_dnnl(dtype);
  e->src = memory::desc({g.n, g.c, g.h, g.w}, dt, tag::nchw);
  e->dst = memory::desc({g.n, g.c, g.oh, g.ow}, dt, tag::nchw);
  try {
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, e->src, e->dst,
                                  {g.sh, g.sw}, {g.kh, g.kw}, {g.pt, g.pl}, {g.pb, g.pr});
    dnnl::pooling_forward::primitive_desc pd(d, default_attr(), engine());
    e->pd = pd;
    e->prim = dnnl::pooling_forward(pd);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

}  // namespace

void pool2d_dnnl(const Tensor& x, Tensor& y, const WindowGeom& g, bool max,
                 bool count_include_pad) {
  if (y.numel() == 0) return;
  // The reference loop's avg divisor is the window clipped to the padded input; as output sizes
  // round down, that is the whole kernel, which is what include_padding divides by.
  const auto alg = max                 ? dnnl::algorithm::pooling_max
                   : count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  const std::string k = key("pool2d", dtype_name(y.dtype()), g.n, g.c, g.h, g.w, g.oh, g.ow, g.kh,
                            g.kw, g.sh, g.sw, g.pt, g.pb, g.pl, g.pr, static_cast<int>(alg));
  auto e = cached<PoolEntry>(k, [&] { return build(y.dtype(), g, alg); });
  if (!e->ok) {
    return visit_float_dtype(y.dtype(), max ? "max_pool2d" : "avg_pool2d", [&](auto t) {
      using T = typename decltype(t)::type;
      if (max)
        max_pool2d_ref<T>(x, y, g);
      else
        avg_pool2d_ref<T>(x, y, g, count_include_pad);
    });
  }
  execute(*e, {{DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_DST, wrap(e->dst, y)}});
}

}  // namespace mycel::cpu
