// A weight gradient's matmul (dW = dy^T x) whose only reader is an optimizer's two-output chain
// (fuse_elementwise's merge of momentum's `v = m*v + dW` and `w = w - lr*v`, written in place by
// assign_in_place) becomes one launch, cpu::matmul_chain: each thread computes a row tile of dW
// into a buffer its L2 cache holds and updates that tile of v and w at once. dW no longer goes to
// memory and back (1.6 MB each way for the MLP's W1), and each core's memory-bound update runs
// between its own compute-bound tiles (docs/perf_mlp.md). Runs after assign_in_place, whose
// in-place outputs it keeps. MYCEL_FUSE_MATMUL_UPDATE=0 turns it off (A/B measurements).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/matmul_chain.h"

namespace mycel::backend::detail {
namespace {

constexpr int64_t kMinDim = 64;

bool enabled() {
  const char* v = std::getenv("MYCEL_FUSE_MATMUL_UPDATE");
  return !v || std::strcmp(v, "0") != 0;
}

bool is_plain_2d(const Function& f, int r) {
  return r >= 0 && is_static_f32(f, r) && f.regs[r].meta.shape.size() == 2 && !f.regs[r].blocked &&
         !f.regs[r].is_const && f.regs[r].alias_of < 0;
}

// The matmul instruction producing `g` that may move down to `at` and join it, or -1.
int fusable_matmul(const Function& f, const std::vector<int>& producer,
                   const std::vector<int>& uses, int g, int at) {
  const int i = g >= 0 ? producer[g] : -1;
  if (i < 0 || i >= at || uses[g] != 1 || !is_plain_2d(f, g)) return -1;
  const Instr& mm = f.code[i];
  if (!is_kernel1(mm) || !mm.op->backend.plain_matmul || mm.in.size() != 2 ||
      (mm.params && !mm.params->post_ops.empty()))
    return -1;
  for (int r : mm.in)
    if (!is_plain_2d(f, r)) return -1;
  // Between the two, nothing may write the matmul's operands (they are SSA temporaries, never
  // assign targets; mutating kernels and calls are refused outright).
  for (int m = i + 1; m < at; ++m) {
    const Instr& in = f.code[m];
    if (in.code != Code::kKernel && in.code != Code::kView && in.code != Code::kScalar &&
        in.code != Code::kAssign)
      return -1;
    if (in.code == Code::kAssign && std::find(mm.in.begin(), mm.in.end(), in.in[0]) != mm.in.end())
      return -1;
    if (in.code == Code::kKernel && (!in.op->mutated_inputs.empty() || in.op->effect)) return -1;
  }
  return i;
}

std::shared_ptr<const OpDef> make_op(const OpDef& chain_op, const cpu::MatmulChain& ch) {
  auto d = std::make_shared<OpDef>();
  d->name = "matmul+" + chain_op.name;
  d->class_name = "MatmulChain";
  d->doc = "A matmul fused by the graph backend with the two-output chain reading it.";
  d->inputs = {{"a"}, {"b"}};
  for (int k = 0; k + 1 < ch.prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
  d->dtypes = {DType::float32};
  d->grad = "none";
  d->infer = chain_op.infer;  // the chain's two output metas
  d->kernel = [ch](const KernelContext& c) {
    thread_local std::vector<Tensor> ins;  // reused: a warm launch allocates nothing
    ins.assign(ch.prog.num_inputs, Tensor());
    for (int k = 0, from = 2; k < ch.prog.num_inputs; ++k)
      if (k != ch.product_slot) ins[k] = c.inputs[from++];
    cpu::matmul_chain(c.in(0), c.in(1), ins, ch, c.outputs, c.prepared);
  };
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  if (f.recursive) return;
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> producer = sole_producers(f);
  std::vector<char> keep(f.code.size(), 1);
  for (int j = 0; j < static_cast<int>(f.code.size()); ++j) {
    Instr& m = f.code[j];
    if (m.code != Code::kKernel) continue;
    auto chain = p.chain_ops.find(m.op);
    if (chain == p.chain_ops.end() || m.out.size() != 2) continue;
    for (size_t s = 0; s < m.in.size(); ++s) {
      const int g = m.in[s];
      if (std::count(m.in.begin(), m.in.end(), g) != 1) continue;
      const int i = fusable_matmul(f, producer, uses, g, j);
      if (i < 0 || !keep[i]) continue;
      const Instr& mm = f.code[i];
      // Small products (the classifier's 10 x 512 gradient, on matmul_skinny's loops) gain
      // nothing from tiles.
      const Shape& gs = f.regs[g].meta.shape;
      if (f.regs[m.out[0]].meta.shape != gs || gs[0] < kMinDim || gs[1] < kMinDim) continue;
      cpu::MatmulChain ch;
      ch.prog = chain->second.prog;
      ch.out_steps = chain->second.out_steps;
      ch.product_slot = static_cast<int>(s);
      ch.trans_a = mm.attrs.get_bool("transpose_a");
      ch.trans_b = mm.attrs.get_bool("transpose_b");
      p.fused_ops.push_back(make_op(*m.op, ch));
      Instr fused = m;
      fused.op = p.fused_ops.back().get();
      fused.attrs = Attrs(fused.op, {});
      fused.in = mm.in;
      for (size_t k = 0; k < m.in.size(); ++k)
        if (k != s) fused.in.push_back(m.in[k]);
      keep[i] = 0;
      f.code[j] = std::move(fused);
      ++p.num_fused;
      break;
    }
  }
  compact(f, keep);
}

}  // namespace

void fuse_matmul_update(ProgramImpl& p) {
  if (!enabled()) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
