// A bf16 dense layer's backward reads dy twice: dx = dy W (a plain matmul, or matmul+mask_product
// where a relu's mask follows) and the weight gradient dW = dy^T x (with db = sum(dy) where the
// layer has a bias), usually far apart in the step. In the transformer's amp O2 step the FFN's
// dy and x (2 MiB each) come cold from L3 or memory to each of them. Where both read the same dy
// (through reshape views), the rows are many (>= kMinRows) and the CPU has AVX512-BF16, the
// three become one instruction at dx's place with all outputs, cpu::dense_grad_pair_bf16: each
// thread computes its blocks of dx rows and then adds those rows' share of dW while dy's block is
// still in its L2. Found by registry traits (backend.plain_matmul, backend.reduce) and
// fuse_mask_product's record of its ops. Nothing is dropped from memory (dy is still written by
// its producer), and dW and db are only computed earlier, so no other reader is affected. Runs
// before fuse_bias_grad (which takes the weight gradients left over); MYCEL_FUSE_DENSE_GRAD_PAIR=0
// turns it off (read when a step compiles, so one process can A/B two compiled steps).
// Measured in the transformer's O2 step (two threads, alternating A/B, loads 3.2-7): its nine
// pairs' launches 7.83-8.37 -> 7.61-8.03 ms of minima in six of seven runs; a FFN pair 1.29-1.42
// ms against 1.38-1.47 for its two launches, about what the two kernels give on hot operands
// (oneDNN's product 93% of the bf16 peak, matmul_bf16_atb 87%); the 128x128 projections' pairs
// on par. The chain of a FFN's two pairs (below, MYCEL_FUSE_DENSE_GRAD_CHAIN=1) was not faster.
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mycel/backend/fuse_bias_grad.h"
#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dense_grad_pair_bf16.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

namespace mycel::backend::detail {
namespace {

// Below this many rows the two products are short and their operands stay in cache anyway.
constexpr int64_t kMinRows = 1024;

bool enabled() {
  const char* v = std::getenv("MYCEL_FUSE_DENSE_GRAD_PAIR");
  return !v || std::strcmp(v, "0") != 0;
}

float scalar_of(const Tensor& t) {
  return t.dtype() == DType::bfloat16 ? cpu::bf16_widen(t.data<uint16_t>()[0]) : t.data<float>()[0];
}

// One layer of a fused launch: its mask test (masked: dx = mask(dy W)) and whether it has db.
struct StageDesc {
  bool masked = false, has_db = false;
  ProgramImpl::MaskTest mask;
};

// Inputs per stage: (dy for the first,) W, x, (y, threshold where masked); outputs per stage dx,
// dW, (db). A later stage's dy is the stage before's dx.
std::shared_ptr<const OpDef> make_op(const std::vector<StageDesc>& stages,
                                     std::vector<TensorMeta> outs) {
  auto d = std::make_shared<OpDef>();
  d->name = stages.size() > 1 ? "dense_grad_chain" : "";
  for (const StageDesc& g : stages)
    d->name += std::string(stages.size() > 1 ? "{" : "") + "dense_grad_pair" +
               (g.masked ? "+mask_product" : "") + (g.has_db ? "+sum" : "") +
               (stages.size() > 1 ? "}" : "");
  d->class_name = "DenseGradPair";
  d->doc =
      "A bf16 dense layer's dx = dy W (optionally masked), dW = dy^T x (and db = sum(dy)) in one "
      "launch (several layers, each dx the next dy: a chain), fused by the graph backend.";
  d->inputs = {{"dy"}};
  for (const StageDesc& g : stages) {
    d->inputs.insert(d->inputs.end(), {{"w"}, {"x"}});
    if (g.masked) d->inputs.insert(d->inputs.end(), {{"y"}, {"threshold"}});
  }
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [outs](const InferContext&) { return outs; };
  d->kernel = [stages](const KernelContext& c) {
    constexpr int kMax = 4;
    MYCEL_CHECK(stages.size() <= kMax, RuntimeError, "[dense_grad_pair] at most ", kMax,
                " stages, given ", stages.size());
    cpu::MaskOperands masks[kMax];
    cpu::DenseGradStage st[kMax];
    size_t in = 1, out = 0;
    for (size_t k = 0; k < stages.size(); ++k) {
      const StageDesc& g = stages[k];
      st[k].dy = k == 0 ? &c.in(0) : nullptr;
      st[k].w = &c.in(in++);
      st[k].x = &c.in(in++);
      st[k].dx = &c.out(out++);
      st[k].dw = &c.out(out++);
      st[k].db = g.has_db ? &c.out(out++) : nullptr;
      if (g.masked) {
        const Tensor &y = c.in(in), &t = c.in(in + 1);
        in += 2;
        MYCEL_CHECK(y.numel() == st[k].dx->numel(), RuntimeError, "[dense_grad_pair] y has ",
                    y.numel(), " elements, dx ", st[k].dx->numel());
        masks[k] = {y.data(), y.dtype() == DType::bfloat16, scalar_of(t), g.mask.less,
                    g.mask.t_left};
        st[k].mask = &masks[k];
      }
    }
    cpu::dense_grad_chain_bf16(st, static_cast<int>(stages.size()), c.prepared);
  };
  return d;
}

bool plain(const Instr& in) {
  return is_kernel1(in) && (!in.params || in.params->post_ops.empty());
}

// dx = dy W at j: a plain matmul (no transposes) or fuse_mask_product's matmul+mask_product, dy
// (..., O) and W (O, I) static bf16. Its mask test, or null for the plain one, in `mask`.
bool is_dx(const Function& f, const ProgramImpl& p, const Instr& in,
           const ProgramImpl::MaskTest** mask) {
  if (!plain(in)) return false;
  const auto it = p.mask_matmul_ops.find(in.op);
  if (it != p.mask_matmul_ops.end()) {
    if (in.in.size() != 4) return false;
    *mask = &it->second;
  } else {
    if (!in.op->backend.plain_matmul || in.in.size() != 2 || in.attrs.get_bool("transpose_a") ||
        in.attrs.get_bool("transpose_b"))
      return false;
    *mask = nullptr;
  }
  const int a = in.in[0], w = in.in[1];
  const Shape &as = f.regs[a].meta.shape, &ws = f.regs[w].meta.shape;
  return as.size() >= 2 && is_static_plain(f, a, DType::bfloat16, -1) &&
         is_static_plain(f, w, DType::bfloat16, 2) &&
         is_static_plain(f, in.out[0], DType::bfloat16) && as.back() == ws[0];
}

// The register r, or the register it views where r is defined only after `at` (a reshape view
// placed next to its reader): the same buffer, read at `at`. -1 where neither is defined by then.
int defined_at(const Function& f, const std::vector<int>& producer, int r, int at) {
  if (producer[r] == -2) return -1;
  if (producer[r] < at) return r;  // -1: a parameter or constant
  const int b = base_of(f, producer, r);
  if (b == r || producer[b] >= at || !is_static_plain(f, b, f.regs[r].meta.dtype) ||
      numel(f.regs[b].meta.shape) != numel(f.regs[r].meta.shape))
    return -1;
  return b;
}

bool chain_enabled() {
  const char* v = std::getenv("MYCEL_FUSE_DENSE_GRAD_CHAIN");
  return v && std::strcmp(v, "1") == 0;
}

// A fused launch A at j whose dx is the dy of a later one B (a FFN's dH = mask(dOut W2) feeding
// dX = dH W1) becomes one launch at j, each block of rows through A's stages and then B's while
// the block's dx is in its core's L2: B's dy is no longer read back from memory. Only where B's
// other inputs exist at j and nothing writes them before B. Off unless
// MYCEL_FUSE_DENSE_GRAD_CHAIN=1: in the transformer's step (alternating A/B, loads 5-6) the two
// FFN launches went 11.1 -> 11.0 and 7.0 -> 8.6 ms of minima, 28% slower in a third run; the
// two float32 partials (256 KiB each) and the blocks do not fit a Zen 4 core's 1 MiB L2.
void chain(Function& f, ProgramImpl& p, std::map<const OpDef*, std::vector<StageDesc>>& made) {
  const std::vector<int> producer = sole_producers(f);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  for (int j = 0; j < n; ++j) {
    auto a = made.find(f.code[j].op);
    if (!keep[j] || a == made.end()) continue;
    const int dx = f.code[j].out[0];
    for (int k = j + 1; k < n; ++k) {
      auto b = made.find(f.code[k].op);
      if (!keep[k] || b == made.end() || base_of(f, producer, f.code[k].in[0]) != dx) continue;
      const Instr& B = f.code[k];
      if (f.regs[B.in[1]].meta.shape[0] != f.regs[dx].meta.shape.back()) break;  // rows differ
      std::vector<int> rest(B.in.begin() + 1, B.in.end());
      bool ok = !written_between(f, dx, j, k);
      for (int r : B.out) ok = ok && f.regs[r].alias_of < 0;  // written earlier now
      for (int& r : rest) {
        r = defined_at(f, producer, r, j);
        ok = ok && r >= 0 && !written_between(f, r, j, k);
      }
      if (!ok || a->second.size() + b->second.size() > 4) break;
      std::vector<StageDesc> stages = a->second;
      stages.insert(stages.end(), b->second.begin(), b->second.end());
      std::vector<TensorMeta> outs;
      Instr fused = f.code[j];
      fused.in.insert(fused.in.end(), rest.begin(), rest.end());
      fused.out.insert(fused.out.end(), B.out.begin(), B.out.end());
      for (int r : fused.out) outs.push_back(f.regs[r].meta);
      p.fused_ops.push_back(make_op(stages, outs));
      made[p.fused_ops.back().get()] = stages;
      fused.op = p.fused_ops.back().get();
      fused.attrs = Attrs(fused.op, {});
      f.code[j] = std::move(fused);
      keep[k] = 0;
      ++p.num_fused;
      break;
    }
  }
  compact(f, keep);
}

void fuse_function(Function& f, ProgramImpl& p) {
  if (f.recursive) return;
  const std::vector<int> producer = sole_producers(f);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  std::map<const OpDef*, std::vector<StageDesc>> made;  // the ops fused here, by op
  for (int j = 0; j < n; ++j) {
    const ProgramImpl::MaskTest* mask = nullptr;
    if (!keep[j] || !is_dx(f, p, f.code[j], &mask)) continue;
    const Instr& dx = f.code[j];
    const int dy = dx.in[0], w = dx.in[1], dyb = base_of(f, producer, dy);
    if (producer[dyb] == -2) continue;
    const int64_t O = f.regs[w].meta.shape[0], I = f.regs[w].meta.shape[1];
    const int64_t R = numel(f.regs[dy].meta.shape) / O;
    if (R < kMinRows) continue;
    // The weight gradient dy^T x after j: a (R, O) a view of dy, b (R, I).
    int wi = -1;
    for (int i = j + 1; i < n && wi < 0; ++i) {
      const Instr& mm = f.code[i];
      if (keep[i] && is_weight_gradient(f, mm) && base_of(f, producer, mm.in[0]) == dyb &&
          f.regs[mm.in[0]].meta.shape == Shape{R, O} && f.regs[mm.in[1]].meta.shape == Shape{R, I})
        wi = i;
    }
    if (wi < 0) continue;
    const Instr& mm = f.code[wi];
    // dW is written earlier now: not where it is a weight's memory (assign_in_place.cc), whose
    // old value may still be read before wi.
    if (f.regs[mm.out[0]].alias_of >= 0) continue;
    const int x = defined_at(f, producer, mm.in[1], j);
    if (x < 0 || written_between(f, x, j, wi) || written_between(f, dy, j, wi) ||
        written_between(f, dyb, j, wi))
      continue;
    // Its bias gradient: a column sum of dy after j.
    int si = -1;
    for (int s = j + 1; s < n && si < 0; ++s)
      if (keep[s] && is_column_sum(f, f.code[s]) && base_of(f, producer, f.code[s].in[0]) == dyb &&
          f.regs[f.code[s].out[0]].meta.shape == Shape{O} &&
          f.regs[f.code[s].out[0]].alias_of < 0 && !written_between(f, dy, j, s) &&
          !written_between(f, dyb, j, s))
        si = s;
    std::vector<TensorMeta> outs = {f.regs[dx.out[0]].meta, f.regs[mm.out[0]].meta};
    if (si >= 0) outs.push_back(f.regs[f.code[si].out[0]].meta);
    StageDesc g;
    g.masked = mask != nullptr;
    g.has_db = si >= 0;
    if (mask) g.mask = *mask;
    p.fused_ops.push_back(make_op({g}, outs));
    made[p.fused_ops.back().get()] = {g};
    Instr fused = dx;
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.params = nullptr;
    fused.in = {dy, w, x};
    if (mask) fused.in.insert(fused.in.end(), {dx.in[2], dx.in[3]});
    fused.out = {dx.out[0], mm.out[0]};
    if (si >= 0) fused.out.push_back(f.code[si].out[0]);
    f.code[j] = std::move(fused);
    keep[wi] = 0;
    if (si >= 0) keep[si] = 0;
    ++p.num_fused;
  }
  compact(f, keep);
  if (chain_enabled()) chain(f, p, made);
}

}  // namespace

void fuse_dense_grad_pair(ProgramImpl& p) {
  if (!enabled() || !cpu::dense_grad_pair_available()) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
