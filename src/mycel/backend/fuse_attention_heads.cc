// Attention's backward in one launch per layer (issue 19, bf16 O2). After fold_head_transposes
// a layer's attention backward is four strided launches: dV = P^T dO, dS = softmax_grad(P,
// dO V^T) (fuse_heads_softmax.cc), dQ = dS K and dK = dS^T Q, with P (64 heads of 128 x 128 bf16
// in the transformer's step, 2 MiB) read from L3 by two of them and dS (2 MiB) written out and
// read back by two. cpu::attention_heads_grad runs the five steps head by head on each thread,
// P and dS in its L1/L2 and dS never in memory. The transformer's O2 step, two threads,
// alternating A/B (bench/bench_step_env_ab.py --env MYCEL_FUSE_ATTENTION_HEADS, 9 runs of 300
// steps at loads 1.3-6.6): the two layers' backward attention within -6%..+4% of the four
// launches' minima (1664-1777 -> 1674-1786 us at load 1.3-2.1), medians lower in 7 runs (by
// 1-11%), and the step's launches 80-580 us less in every run (minimum of the per-step sums; the
// other launches gain too, with 2 MiB less written to L3): a small gain, since these products are
// compute bound (78-88% of the bf16 peak in cache), not bound by P's and dS's trips to L3. The
// fused launch takes the first of the four places: dO, V, K, Q and P are all there by then
// (checked), and dQ, dK, dV come earlier than they did, which nothing reads before (new registers).
// MYCEL_FUSE_ATTENTION_HEADS=0 turns it off (A/B measurements). The forward's pair (scores with
// softmax, then P.V) fuses likewise only with MYCEL_FUSE_ATTENTION_FWD=1 (slower; see below).
#include "mycel/backend/fuse_attention_heads.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "mycel/kernels/cpu/attention_heads_grad.h"
#include "mycel/kernels/cpu/matmul_heads_bf16.h"

namespace mycel::backend::detail {
namespace {

std::shared_ptr<OpDef> make_op(const cpu::AttentionGradViews& s, std::vector<TensorMeta> outs) {
  auto d = std::make_shared<OpDef>();
  d->name = "attention_heads_grad";
  d->class_name = "AttentionHeadsGrad";
  d->doc =
      "dV = P^T dO, dS = softmax_grad(P, dO V^T), dQ = dS K, dK = dS^T Q over head blocks "
      "(fuse_attention_heads.cc).";
  d->inputs = {{"dv_a"}, {"dv_b"}, {"dp_a"}, {"dp_b"}, {"softmax"}, {"dq_b"}, {"dk_b"}};
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [outs](const InferContext&) { return outs; };
  d->kernel = [s](const KernelContext& c) {
    cpu::attention_heads_grad(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.in(5), c.in(6),
                              c.out(0), c.out(1), c.out(2), s, c.prepared);
  };
  return d;
}

bool switched_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "0") == 0;
}

bool enabled() {
  return !switched_off("MYCEL_FUSE_ATTENTION_HEADS") && cpu::matmul_heads_bf16_available();
}

std::shared_ptr<OpDef> make_fwd_op(const cpu::StridedMatmul& scores, const cpu::StridedMatmul& out,
                                   std::vector<TensorMeta> outs) {
  auto d = std::make_shared<OpDef>();
  d->name = "attention_heads";
  d->class_name = "AttentionHeads";
  d->doc = "P = softmax(Q K^T), O = P V over heads (fuse_attention_heads.cc).";
  d->inputs = {{"q"}, {"kt"}, {"v"}};
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [outs](const InferContext&) { return outs; };
  d->kernel = [scores, out](const KernelContext& c) {
    cpu::attention_heads_fwd(c.in(0), c.in(1), c.in(2), c.out(0), c.out(1), scores, out,
                             c.prepared);
  };
  return d;
}

bool four_d(const cpu::StridedMatmul& m, int64_t A) {
  for (const cpu::StridedView* v : {&m.a, &m.b, &m.c})
    if (v->dims.size() != 4 || v->strides.size() != 4 || v->dims[0] != A) return false;
  return true;
}

}  // namespace

namespace {

// One pass (forward: `backward` false) over f, then compacted; `launches` re-indexed to match
// (the dropped ones removed).
void fuse_pass(Function& f, ProgramImpl& p, std::vector<StridedLaunch>& launches, bool backward) {
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> producer = sole_producers(f);
  std::vector<char> keep(f.code.size(), 1);
  // Whether r is there by instruction `first` and nothing writes it up to `last`.
  auto ready = [&](int r, int first, int last) {
    return r >= 0 && producer[r] != -2 && producer[r] < first &&
           !written_between(f, r, first, last);
  };
  // The forward: scores + softmax (P) and P.V at the scores' place.
  for (const StridedLaunch& sm : launches) {
    if (backward || !sm.softmax || sm.in.size() != 2 || !keep[sm.at]) continue;
    const int y = sm.out;
    const StridedLaunch* pv = nullptr;
    for (const StridedLaunch& l : launches)
      if (!l.softmax && !l.softmax_grad && l.in.size() == 2 && l.in[0] == y && l.in[1] != y &&
          l.at > sm.at && keep[l.at] && !pv)
        pv = &l;
    const int64_t A = sm.s.c.dims.empty() ? -1 : sm.s.c.dims[0];
    if (!pv || !four_d(sm.s, A) || !four_d(pv->s, A) || pv->s.a.strides != sm.s.c.strides ||
        pv->s.a.dims != sm.s.c.dims || written_between(f, pv->out, sm.at, pv->at) ||
        written_between(f, y, sm.at, pv->at))
      continue;
    // At the scores' place where V is there by then, else at P.V's where nothing reads P in
    // between (the step computes v's projection after the scores) and q, k stay as they were.
    int at = sm.at;
    if (!ready(pv->in[1], sm.at, pv->at)) {
      bool read = false;
      for (int k = sm.at + 1; k < pv->at && !read; ++k)
        for (int r : f.code[k].in) read = read || r == y;
      if (read || written_between(f, sm.in[0], sm.at, pv->at) ||
          written_between(f, sm.in[1], sm.at, pv->at))
        continue;
      at = pv->at;
    }
    p.fused_ops.push_back(make_fwd_op(sm.s, pv->s, {f.regs[y].meta, f.regs[pv->out].meta}));
    Instr fused = f.code[sm.at];
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.params = nullptr;
    fused.in = {sm.in[0], sm.in[1], pv->in[1]};
    fused.out = {y, pv->out};
    keep[sm.at] = keep[pv->at] = 0;
    f.code[at] = std::move(fused);
    keep[at] = 1;
    ++p.num_fused;
  }
  for (const StridedLaunch& g : launches) {
    if (!backward || !g.softmax_grad || g.in.size() != 3 || !keep[g.at]) continue;
    const int ds = g.out, dout = g.in[0], y = g.in[2];
    if (uses[ds] != 2) continue;
    const StridedLaunch *dq = nullptr, *dk = nullptr, *dv = nullptr;
    for (const StridedLaunch& l : launches) {
      if (l.softmax_grad || l.softmax || l.in.size() != 2 || !keep[l.at]) continue;
      if (l.in[0] == ds && l.in[1] != ds) (dq ? dk : dq) = &l;
      if (l.in[0] == y && l.in[1] == dout && !dv) dv = &l;
    }
    if (!dq || !dk || !dv) continue;
    const int64_t A = g.s.c.dims.empty() ? -1 : g.s.c.dims[0];
    if (!four_d(g.s, A) || !four_d(dv->s, A) || !four_d(dq->s, A) || !four_d(dk->s, A) ||
        dq->s.a.strides[0] != g.s.c.strides[0] || dk->s.a.strides[0] != g.s.c.strides[0] ||
        !is_static_plain(f, y, DType::bfloat16) || f.regs[y].meta.shape != f.regs[ds].meta.shape)
      continue;
    const int first = std::min({g.at, dq->at, dk->at, dv->at}),
              last = std::max({g.at, dq->at, dk->at, dv->at});
    const std::vector<int> ins = {dv->in[0], dv->in[1], g.in[0], g.in[1], y, dq->in[1], dk->in[1]};
    bool ok = true;
    for (int r : ins) ok = ok && ready(r, first, last);
    for (int r : {dv->out, dq->out, dk->out})
      ok = ok && r != ds && !written_between(f, r, first, last);
    if (!ok) continue;
    std::vector<TensorMeta> outs = {f.regs[dv->out].meta, f.regs[dq->out].meta,
                                    f.regs[dk->out].meta};
    p.fused_ops.push_back(make_op({dv->s, g.s, dq->s, dk->s}, std::move(outs)));
    Instr fused = f.code[first];
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.params = nullptr;
    fused.in = ins;
    fused.out = {dv->out, dq->out, dk->out};
    for (int k : {g.at, dq->at, dk->at, dv->at}) keep[k] = 0;
    f.code[first] = std::move(fused);
    keep[first] = 1;
    ++p.num_fused;
  }
  std::vector<int> moved(keep.size(), -1);
  for (size_t k = 0, j = 0; k < keep.size(); ++k)
    if (keep[k]) moved[k] = static_cast<int>(j++);
  compact(f, keep);
  std::vector<StridedLaunch> left;
  for (StridedLaunch& l : launches)
    if (keep[l.at] && f.code[moved[l.at]].out.size() == 1) {  // not dropped nor fused
      l.at = moved[l.at];
      left.push_back(std::move(l));
    }
  launches = std::move(left);
}

}  // namespace

void fuse_attention_heads(Function& f, ProgramImpl& p, std::vector<StridedLaunch> launches) {
  if (!enabled() || f.recursive) return;
  // Its kernels are bf16's (float32's strided products stay launches of their own).
  std::erase_if(launches, [&](const StridedLaunch& l) {
    return f.regs[l.out].meta.dtype != DType::bfloat16;
  });
  // The forward only on request: its launch ran 8-10% slower than the two it replaces (the
  // transformer's O2 step, two threads, alternating A/B at load 3.8-4.8: minima 960-969 ->
  // 1039-1065 us a step for the two layers; medians 1034-1208 -> 1129-1360), not understood
  // yet: q k^T in matmul_head_bf16 (b transposed, K = 32) is on par with oneDNN's brgemm on two
  // threads, and P.V read P from L3 at nearly its in-cache speed before.
  const char* fwd = std::getenv("MYCEL_FUSE_ATTENTION_FWD");
  if (fwd && std::strcmp(fwd, "1") == 0) fuse_pass(f, p, launches, false);
  fuse_pass(f, p, launches, true);
}

}  // namespace mycel::backend::detail
