// bfloat16 master copies (amp O2): a float32 weight that the step reads through cast(w, bf16) and
// updates with an optimizer's fused chain (fuse_elementwise: SGD's one output, or momentum's
// merged state and weight updates; written in place by assign_in_place) keeps a bf16 copy
// between steps. The chain writes it in the same pass that
// writes w (one more store per element while the block is in cache), and the casts at the start
// of the next step become checks: they recast only when w has a write version
// (core/write_version.h) other than the one the chain left (set_data, a checkpoint load, another
// program's update, a numpy view), so the copy is always what the cast would give, bit for bit.
// The gradient's cast to float32 (the forward cast's gradient) folds into the chain too, which
// widens the bf16 gradient block by block. Per weight and step that removes two launches and
// 12 bytes of memory traffic per element. MYCEL_MASTER_COPY=0 turns it off (A/B measurements).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/parallel.h"
#include "mycel/core/write_version.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

namespace mycel::backend::detail {
namespace {

bool enabled() {
  const char* v = std::getenv("MYCEL_MASTER_COPY");
  return !v || std::strcmp(v, "0") != 0;
}

// Which contents of the weight the bf16 copy holds: its buffer and write version (0: none).
struct CopyState {
  const void* data = nullptr;
  uint64_t version = 0;
};

bool is_cast(const Instr& in) {
  return is_kernel1(in) && in.op->backend.fuses_elementwise &&
         in.op->backend.ew == cpu::EwOp::kCast;
}

// The cast at the start of a step: out = its bf16 copy of w, recast only when w has changed
// since the copy was made.
std::shared_ptr<const OpDef> make_check_op(const OpDef& cast, std::shared_ptr<CopyState> st) {
  auto d = std::make_shared<OpDef>();
  d->name = "cast[master copy]";
  d->class_name = cast.class_name;
  d->doc = "cast of a float32 weight to its bfloat16 copy, kept between steps (graph backend).";
  d->inputs = {{"x"}};
  d->dtypes = {DType::float32};
  d->grad = "none";
  d->infer = [](const InferContext& c) {
    return std::vector<TensorMeta>{TensorMeta{c.in(0).shape, DType::bfloat16}};
  };
  d->kernel = [st](const KernelContext& c) {
    const Tensor& w = c.in(0);
    const uint64_t v = write_version(*w.storage());  // before reading
    if (v != 0 && v == st->version && w.data() == st->data) return;
    const float* s = w.data<float>();
    uint16_t* o = c.out(0).data<uint16_t>();
    parallel_for(w.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = cpu::bf16_round_bits(s[i]);
    });
    st->data = w.data();
    st->version = v;
  };
  return d;
}

// The optimizer's chain with bf16 ends: inputs marked in bf16_in are bf16 (a folded gradient
// cast), and a third output takes the new weight rounded to bf16. The chain's weight output is
// the weight itself (assign_in_place), whose write it notes and whose new version it records.
std::shared_ptr<const OpDef> make_update_op(const OpDef& chain, const ProgramImpl::ChainOp& ch,
                                            std::vector<char> bf16_in,
                                            std::shared_ptr<CopyState> st) {
  auto d = std::make_shared<OpDef>();
  d->name = chain.name + "+master copy";
  d->class_name = chain.class_name;
  d->doc = "An optimizer's chain that also writes its weight's bfloat16 copy (graph backend).";
  d->inputs = chain.inputs;
  d->dtypes = {DType::float32};
  d->grad = "none";
  auto infer = chain.infer;
  d->infer = [infer](const InferContext& c) {
    std::vector<TensorMeta> m = infer(c);
    m.push_back(TensorMeta{m.back().shape, DType::bfloat16});
    return m;
  };
  d->kernel = [ch, bf16_in, st](const KernelContext& c) {
    const int ni = ch.prog.num_inputs, nout = static_cast<int>(ch.out_steps.size());
    const Tensor& w = c.outputs[nout - 1];
    const int64_t n = w.numel();
    constexpr int kMax = 32;
    MYCEL_CHECK(ni <= kMax, RuntimeError, "[", c.op.name, "] ", ni, " inputs, at most ", kMax);
    const void* base[kMax];
    char full[kMax];
    for (int k = 0; k < ni; ++k) {
      base[k] = c.inputs[k].data();
      full[k] = c.inputs[k].numel() == n;
    }
    float* outs[kMax];
    for (int j = 0; j < nout; ++j) outs[j] = c.outputs[j].data<float>();
    cpu::run_fused_elementwise_bf16_ends(ch.prog, base, full, bf16_in.data(), n, nout,
                                         ch.out_steps.data(), outs,
                                         c.outputs[nout].data<uint16_t>());
    note_write(*w.storage());  // the assign this replaces would have noted it
    st->data = w.data();
    st->version = write_version(*w.storage());
  };
  return d;
}

// Registers a tensor's readers may see it through: r and the views of it (transitively).
std::vector<char> with_views(const Function& f, int r) {
  std::vector<char> s(f.regs.size(), 0);
  s[r] = 1;
  for (const Instr& in : f.code)
    if (in.code == Code::kView && s[in.in[0]]) s[in.out[0]] = 1;
  return s;
}

// Whether every reader of r (or of a view of it) is a kernel or view before instruction `end`,
// and neither is an output of the function.
bool read_only_before(const Function& f, int r, int end) {
  const std::vector<char> s = with_views(f, r);
  for (int o : f.outputs)
    if (s[o]) return false;
  for (int i = 0; i < static_cast<int>(f.code.size()); ++i) {
    const Instr& in = f.code[i];
    bool reads =
        std::any_of(in.in.begin(), in.in.end(), [&](int x) { return x >= 0 && s[x]; }) ||
        std::any_of(in.in_b.begin(), in.in_b.end(), [&](int x) { return x >= 0 && s[x]; }) ||
        (in.cond >= 0 && s[in.cond]);
    for (const Target& t : in.targets)
      reads = reads || std::any_of(t.args.begin(), t.args.end(), [&](int x) { return s[x]; });
    if (!reads) continue;
    if (i >= end || (in.code != Code::kKernel && in.code != Code::kView)) return false;
    if (in.code == Code::kKernel)
      for (int m : in.op->mutated_inputs)
        if (m < static_cast<int>(in.in.size()) && in.in[m] >= 0 && s[in.in[m]]) return false;
  }
  return true;
}

int new_reg(Function& f, const TensorMeta& m, bool is_const, const Tensor& value, int alias_of) {
  RegInfo r;
  r.type = RegType::kTensor;
  r.meta = m;
  r.is_const = is_const;
  r.value.t = value;
  r.alias_of = alias_of;
  f.regs.push_back(std::move(r));
  return static_cast<int>(f.regs.size()) - 1;
}

void rewrite(Function& f, ProgramImpl& p) {
  if (f.recursive) return;
  const int n = static_cast<int>(f.code.size());
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> producer = sole_producers(f);
  std::vector<char> keep(n, 1);
  for (int j = 0; j < n; ++j) {
    const Instr& k = f.code[j];
    if (k.code != Code::kKernel) continue;
    auto chain = p.chain_ops.find(k.op);
    if (chain == p.chain_ops.end() || k.out.size() != chain->second.out_steps.size() ||
        chain->second.out_steps.back() != static_cast<int>(chain->second.prog.steps.size()) - 1 ||
        k.in.size() != static_cast<size_t>(chain->second.prog.num_inputs))
      continue;
    const int ow = k.out.back(), w = f.regs[ow].alias_of;
    if (w < 0 || !is_static_f32(f, ow) || f.regs[w].blocked) continue;
    // The assign of w that assign_in_place emptied (w's only write in this function).
    int a = -1;
    for (int m = j + 1; m < n && a < 0; ++m)
      if (f.code[m].code == Code::kAssign && f.code[m].in.size() == 2 && f.code[m].in[0] == w &&
          f.code[m].in[1] == ow)
        a = m;
    if (a < 0 || uses[ow] != 1) continue;
    // The step's casts of w to bf16, every reader of them before the update.
    std::vector<int> casts;
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) {
      const Instr& c = f.code[i];
      if (!is_cast(c) || c.in[0] != w) continue;
      ok = i < j && keep[i] && is_static_plain(f, c.out[0], DType::bfloat16) &&
           f.regs[c.out[0]].meta.shape == f.regs[w].meta.shape && f.regs[c.out[0]].alias_of < 0 &&
           read_only_before(f, c.out[0], j);
      casts.push_back(i);
    }
    if (!ok || casts.empty()) continue;
    // Gradient inputs cast from bf16 for this chain alone: the chain reads the bf16 tensor.
    std::vector<char> bf16_in(k.in.size(), 0);
    Instr upd = k;
    for (size_t s = 0; s < k.in.size(); ++s) {
      const int g = k.in[s];
      const int i = g >= 0 ? producer[g] : -1;
      if (i < 0 || !keep[i] || uses[g] != 1 || !is_cast(f.code[i])) continue;
      const int src = f.code[i].in[0];
      if (!is_static_plain(f, src, DType::bfloat16) ||
          f.regs[src].meta.shape != f.regs[g].meta.shape || !is_static_f32(f, g) ||
          std::count(k.in.begin(), k.in.end(), g) != 1)
        continue;
      upd.in[s] = src;
      bf16_in[s] = 1;
      keep[i] = 0;
    }
    // The copy: a bf16 tensor that lives with the program, written through registers that alias
    // it (no arena buffer), like a weight written in place.
    const Tensor& wt = f.regs[w].value.t;
    const TensorMeta m16{f.regs[w].meta.shape, DType::bfloat16};
    const int copy = new_reg(f, m16, true, Tensor::empty(wt.shape(), DType::bfloat16), -1);
    auto st = std::make_shared<CopyState>();
    p.fused_ops.push_back(make_update_op(*k.op, chain->second, bf16_in, st));
    upd.op = p.fused_ops.back().get();
    upd.attrs = Attrs(upd.op, {});
    upd.out.push_back(new_reg(f, m16, false, Tensor(), copy));
    p.fused_ops.push_back(make_check_op(*f.code[casts[0]].op, st));
    const OpDef* check = p.fused_ops.back().get();
    for (int i : casts) {
      Instr& c = f.code[i];
      c.op = check;
      c.attrs = Attrs(check, {});
      f.regs[c.out[0]].alias_of = copy;
    }
    f.code[j] = std::move(upd);
    keep[a] = 0;  // the chain notes w's write itself
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void keep_master_copies(ProgramImpl& p) {
  if (!enabled()) return;
  for (Function& f : p.fns) rewrite(f, p);
}

}  // namespace mycel::backend::detail
