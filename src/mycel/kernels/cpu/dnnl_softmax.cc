// softmax and log_softmax on oneDNN's softmax_forward / logsoftmax_forward, with x viewed as
// (outer, len[, inner]) and the softmax on axis 1.
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;
using tag = memory::format_tag;

struct SoftmaxEntry : PrimEntry {
  memory::desc md;
};

std::shared_ptr<SoftmaxEntry> build(DType dtype, int64_t outer, int64_t len, int64_t inner,
                                    bool log) {
  auto e = std::make_shared<SoftmaxEntry>();
  const auto dt = to_dnnl(dtype);
  e->md = inner == 1 ? memory::desc({outer, len}, dt, tag::ab)
                     : memory::desc({outer, len, inner}, dt, tag::abc);
  const auto prop = dnnl::prop_kind::forward_inference;
  try {
    if (log) {
      dnnl::logsoftmax_forward::primitive_desc pd({prop, e->md, 1}, default_attr(), engine());
      e->pd = pd;
      e->prim = dnnl::logsoftmax_forward(pd);
    } else {
      dnnl::softmax_forward::primitive_desc pd({prop, e->md, 1}, default_attr(), engine());
      e->pd = pd;
      e->prim = dnnl::softmax_forward(pd);
    }
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

struct SoftmaxPrepared : KernelPrepared {
  int threads = 0;
  int64_t outer = 0, len = 0, inner = 0;
  bool log = false;
  std::shared_ptr<SoftmaxEntry> e;
  PreparedExec exec;
  int a_src = -1, a_dst = -1;
};

}  // namespace

void softmax_dnnl(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner, bool log,
                  std::unique_ptr<KernelPrepared>* slot) {
  if (y.numel() == 0) return;
  const SerialScope threads(16 * y.numel());  // an exp per item: ~16 MAC
  std::unique_ptr<SoftmaxPrepared> local;
  SoftmaxPrepared& p = prepared_state<SoftmaxPrepared>(
      slot, local,
      [&](const SoftmaxPrepared& q) {
        return q.threads == num_threads() && q.outer == outer && q.len == len && q.inner == inner &&
               q.log == log;
      },
      [&] {
        const std::string k = key("softmax", dtype_name(y.dtype()), outer, len, inner, log);
        auto q = std::make_unique<SoftmaxPrepared>();
        q->threads = num_threads();
        q->outer = outer, q->len = len, q->inner = inner, q->log = log;
        q->e = cached<SoftmaxEntry>(k, [&] { return build(y.dtype(), outer, len, inner, log); });
        if (q->e->ok) {
          q->exec = PreparedExec(q->e->prim, &q->e->pd);
          q->a_src = q->exec.add(DNNL_ARG_SRC, q->e->md);
          q->a_dst = q->exec.add(DNNL_ARG_DST, q->e->md);
        }
        return q;
      });
  if (!p.e->ok) {
    return visit_float_dtype(y.dtype(), log ? "log_softmax" : "softmax", [&](auto t) {
      softmax_ref<typename decltype(t)::type>(x, y, outer, len, inner, log);
    });
  }
  p.exec.set(p.a_src, x.data());
  p.exec.set(p.a_dst, y.data());
  p.exec.run();
  stream().wait();
}

}  // namespace mycel::cpu
