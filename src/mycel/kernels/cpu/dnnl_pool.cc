// max_pool2d and avg_pool2d (and their backward) on oneDNN's pooling primitives, on the user's
// NCHW buffers. Asymmetric ("same") padding maps to padding_l / padding_r.
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn_grad_ref.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/kernels/cpu/pool_direct.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

struct PoolEntry : PrimEntry {
  memory::desc src, dst;
};

// `blocked`: x and y are channel-blocked (graph backend) rather than NCHW.
std::shared_ptr<PoolEntry> build(DType dtype, const WindowGeom& g, dnnl::algorithm alg,
                                 bool blocked) {
  auto e = std::make_shared<PoolEntry>();
  e->src = blocked_desc({g.n, g.c, g.h, g.w}, dtype, blocked);
  e->dst = blocked_desc({g.n, g.c, g.oh, g.ow}, dtype, blocked);
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
  const LayoutRequest layout = take_layout();
  const bool blocked = layout.src_blocked;
  MYCEL_CHECK(layout.src_blocked == layout.dst_blocked, RuntimeError,
              "[pool2d] input and output layouts must agree (backend bug)");
  if (y.numel() == 0) return;
  if (max && !blocked && max_pool_2x2_fits(y.dtype(), g))  // oneDNN is slow on plain NCHW
    return max_pool_2x2(x, y, g);
  // The reference loop's avg divisor is the window clipped to the padded input; as output sizes
  // round down, that is the whole kernel, which is what include_padding divides by.
  const auto alg = max                 ? dnnl::algorithm::pooling_max
                   : count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  const SerialScope threads(2 * y.numel() * g.kh * g.kw);  // memory-bound: ~2 MAC per read
  const std::string k =
      key("pool2d", dtype_name(y.dtype()), g.n, g.c, g.h, g.w, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw,
          g.pt, g.pb, g.pl, g.pr, static_cast<int>(alg), blocked);
  auto e = cached<PoolEntry>(k, [&] { return build(y.dtype(), g, alg, blocked); });
  if (!e->ok) {
    MYCEL_CHECK(!blocked, RuntimeError,
                "[pool2d] oneDNN has no blocked pooling here (backend bug)");
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

namespace {

// Backward pooling: max pooling needs the forward's workspace (where each maximum was), so the
// entry also holds a forward_training primitive that recomputes it.
struct PoolBwdEntry : Entry {
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc pd;
  dnnl::pooling_backward prim;
  memory::desc src, dst;
};

std::shared_ptr<PoolBwdEntry> build_bwd(DType dtype, const WindowGeom& g, dnnl::algorithm alg) {
  auto e = std::make_shared<PoolBwdEntry>();
  const auto dt = to_dnnl(dtype);
  e->src = memory::desc({g.n, g.c, g.h, g.w}, dt, tag::nchw);
  e->dst = memory::desc({g.n, g.c, g.oh, g.ow}, dt, tag::nchw);
  const memory::dims strides{g.sh, g.sw}, kernel{g.kh, g.kw}, pad_l{g.pt, g.pl}, pad_r{g.pb, g.pr};
  try {
    e->fwd_pd = dnnl::pooling_forward::primitive_desc(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, e->src, e->dst, strides,
                                    kernel, pad_l, pad_r),
        default_attr(), engine());
    e->fwd = dnnl::pooling_forward(e->fwd_pd);
    e->pd = dnnl::pooling_backward::primitive_desc(
        dnnl::pooling_backward::desc(alg, e->src, e->dst, strides, kernel, pad_l, pad_r),
        default_attr(), engine(), e->fwd_pd);
    e->prim = dnnl::pooling_backward(e->pd);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

memory scratch(const dnnl::primitive_desc_base& pd, Tensor& hold) {
  hold = scratchpad(pd);
  return memory(pd.scratchpad_desc(), engine(), hold.data());
}

}  // namespace

void pool2d_grad_dnnl(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g, bool max,
                      bool count_include_pad) {
  if (dx.numel() == 0) return;
  if (max && max_pool_2x2_fits(dx.dtype(), g)) return max_pool_2x2_grad(x, dy, dx, g);
  const auto alg = max                 ? dnnl::algorithm::pooling_max
                   : count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  const SerialScope threads(2 * dy.numel() * g.kh * g.kw);
  const std::string k = key("pool2d_bwd", dtype_name(dx.dtype()), g.n, g.c, g.h, g.w, g.oh, g.ow,
                            g.kh, g.kw, g.sh, g.sw, g.pt, g.pb, g.pl, g.pr, static_cast<int>(alg));
  auto e = cached<PoolBwdEntry>(k, [&] { return build_bwd(dx.dtype(), g, alg); });
  if (!e->ok) {
    return visit_float_dtype(dx.dtype(), max ? "max_pool2d_grad" : "avg_pool2d_grad", [&](auto t) {
      using T = typename decltype(t)::type;
      if (max)
        max_pool2d_grad_ref<T>(x, dy, dx, g);
      else
        avg_pool2d_grad_ref<T>(dy, dx, g, count_include_pad);
    });
  }
  Tensor pad_f, pad_b, ws_buf, y_buf;
  std::unordered_map<int, memory> bwd_args = {{DNNL_ARG_DIFF_DST, wrap(e->dst, dy)},
                                              {DNNL_ARG_DIFF_SRC, wrap(e->src, dx)},
                                              {DNNL_ARG_SCRATCHPAD, scratch(e->pd, pad_b)}};
  if (max) {  // recompute where the maxima are
    const memory::desc ws_md = e->fwd_pd.workspace_desc();
    ws_buf = staging_buffer(0, ws_md.get_size());
    y_buf = Tensor(staging_buffer(1, dy.nbytes()).storage(), 0, dy.shape(), dy.dtype());
    memory ws(ws_md, engine(), ws_buf.data());
    e->fwd.execute(stream(), {{DNNL_ARG_SRC, wrap(e->src, x)},
                              {DNNL_ARG_DST, wrap(e->dst, y_buf)},
                              {DNNL_ARG_WORKSPACE, ws},
                              {DNNL_ARG_SCRATCHPAD, scratch(e->fwd_pd, pad_f)}});
    bwd_args[DNNL_ARG_WORKSPACE] = ws;
  }
  e->prim.execute(stream(), bwd_args);
  stream().wait();
}

}  // namespace mycel::cpu
