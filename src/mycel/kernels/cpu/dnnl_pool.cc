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

// A pooling prepared for one instruction.
struct PoolPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  dnnl::algorithm alg{};
  std::shared_ptr<PoolEntry> e;
  PreparedExec exec;
  int a_src = -1, a_dst = -1;
};

}  // namespace

void pool2d_dnnl(const Tensor& x, Tensor& y, const WindowGeom& g, bool max, bool count_include_pad,
                 KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  const bool blocked = params && params->src_blocked;
  MYCEL_CHECK(!params || params->src_blocked == params->dst_blocked, RuntimeError,
              "[pool2d] input and output layouts must agree (backend bug)");
  if (params) params->layout_taken = true;
  if (y.numel() == 0) return;
  if (max && !blocked && max_pool_2x2_fits(y.dtype(), g))  // oneDNN is slow on plain NCHW
    return max_pool_2x2(x, y, g);
  // The reference loop's avg divisor is the window clipped to the padded input; as output sizes
  // round down, that is the whole kernel, which is what include_padding divides by.
  const auto alg = max                 ? dnnl::algorithm::pooling_max
                   : count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  const SerialScope threads(2 * y.numel() * g.kh * g.kw);  // memory-bound: ~2 MAC per read
  std::unique_ptr<PoolPrepared> local;
  PoolPrepared& p = prepared_state<PoolPrepared>(
      slot, local,
      [&](const PoolPrepared& q) {
        return q.threads == num_threads() && q.alg == alg && same_geom(q.g, g);
      },
      [&] {
        const std::string k =
            key("pool2d", dtype_name(y.dtype()), g.n, g.c, g.h, g.w, g.oh, g.ow, g.kh, g.kw, g.sh,
                g.sw, g.pt, g.pb, g.pl, g.pr, static_cast<int>(alg), blocked);
        auto q = std::make_unique<PoolPrepared>();
        q->threads = num_threads();
        q->g = g;
        q->alg = alg;
        q->e = cached<PoolEntry>(k, [&] { return build(y.dtype(), g, alg, blocked); });
        if (q->e->ok) {
          q->exec = PreparedExec(q->e->prim, &q->e->pd);
          q->a_src = q->exec.add(DNNL_ARG_SRC, q->e->src);
          q->a_dst = q->exec.add(DNNL_ARG_DST, q->e->dst);
        }
        return q;
      });
  if (!p.e->ok) {
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
  p.exec.set(p.a_src, x.data());
  p.exec.set(p.a_dst, y.data());
  p.exec.run();
  stream().wait();
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

// A backward pooling prepared for one instruction: max pooling's forward (workspace) call too.
struct PoolBwdPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  dnnl::algorithm alg{};
  std::shared_ptr<PoolBwdEntry> e;
  PreparedExec fwd, bwd;
  int f_src = -1, f_dst = -1, f_ws = -1, b_dy = -1, b_dx = -1, b_ws = -1;
};

}  // namespace

void pool2d_grad_dnnl(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g, bool max,
                      bool count_include_pad, std::unique_ptr<KernelPrepared>* slot) {
  if (dx.numel() == 0) return;
  if (max && max_pool_2x2_fits(dx.dtype(), g)) return max_pool_2x2_grad(x, dy, dx, g);
  const auto alg = max                 ? dnnl::algorithm::pooling_max
                   : count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  const SerialScope threads(2 * dy.numel() * g.kh * g.kw);
  std::unique_ptr<PoolBwdPrepared> local;
  PoolBwdPrepared& p = prepared_state<PoolBwdPrepared>(
      slot, local,
      [&](const PoolBwdPrepared& q) {
        return q.threads == num_threads() && q.alg == alg && same_geom(q.g, g);
      },
      [&] {
        const std::string k =
            key("pool2d_bwd", dtype_name(dx.dtype()), g.n, g.c, g.h, g.w, g.oh, g.ow, g.kh, g.kw,
                g.sh, g.sw, g.pt, g.pb, g.pl, g.pr, static_cast<int>(alg));
        auto q = std::make_unique<PoolBwdPrepared>();
        q->threads = num_threads();
        q->g = g;
        q->alg = alg;
        q->e = cached<PoolBwdEntry>(k, [&] { return build_bwd(dx.dtype(), g, alg); });
        const PoolBwdEntry& e = *q->e;
        if (e.ok) {
          q->bwd = PreparedExec(e.prim, &e.pd);
          q->b_dy = q->bwd.add(DNNL_ARG_DIFF_DST, e.dst);
          q->b_dx = q->bwd.add(DNNL_ARG_DIFF_SRC, e.src);
          if (max) {  // recompute where the maxima are
            q->fwd = PreparedExec(e.fwd, &e.fwd_pd);
            q->f_src = q->fwd.add(DNNL_ARG_SRC, e.src);
            q->f_dst = q->fwd.add(DNNL_ARG_DST, e.dst);
            q->f_ws = q->fwd.add(DNNL_ARG_WORKSPACE, e.fwd_pd.workspace_desc());
            q->b_ws = q->bwd.add(DNNL_ARG_WORKSPACE, e.fwd_pd.workspace_desc());
          }
        }
        return q;
      });
  if (!p.e->ok) {
    return visit_float_dtype(dx.dtype(), max ? "max_pool2d_grad" : "avg_pool2d_grad", [&](auto t) {
      using T = typename decltype(t)::type;
      if (max)
        max_pool2d_grad_ref<T>(x, dy, dx, g);
      else
        avg_pool2d_grad_ref<T>(dy, dx, g, count_include_pad);
    });
  }
  if (max) {
    void* ws = staging_data(0, p.e->fwd_pd.workspace_desc().get_size());
    p.fwd.set(p.f_src, x.data());
    p.fwd.set(p.f_dst, staging_data(1, dy.nbytes()));
    p.fwd.set(p.f_ws, ws);
    p.fwd.run();
    p.bwd.set(p.b_ws, ws);
  }
  p.bwd.set(p.b_dy, dy.data());
  p.bwd.set(p.b_dx, dx.data());
  p.bwd.run();
  stream().wait();
}

}  // namespace mycel::cpu
