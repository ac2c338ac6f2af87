// Chains of float32 elementwise kernels on one static shape (x * a + b, relu(x + y), optimizer
// updates) become one fused_elementwise instruction (kernels/cpu/fused_elementwise.h) that runs
// the chain block by block: one pass over memory instead of one per op, and no intermediate
// tensors. A chain grows through registers read exactly once, by the next op of the chain;
// operands of one element broadcast. Reads never move across an instruction with side effects.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/te/te.h"

namespace mycel::backend::detail {
namespace {

using cpu::EwOp;

struct Group {
  std::vector<int> members;  // instruction indices, in order
  int out = -1;
};

std::shared_ptr<const OpDef> make_fused_op(const cpu::EwProgram& prog, const TensorMeta& out,
                                           const std::vector<bool>& broadcast, bool keeps_zero) {
  auto d = std::make_shared<OpDef>();
  if (te_fusion()) {  // chains compiled by mycel.te instead of run by the block interpreter
    auto fn = te::build_elementwise(prog, broadcast);  // one kernel for every length
    d->name = "fused_elementwise[te]{" + prog.str() + "}";
    d->class_name = "FusedElementwise";
    d->doc = "Elementwise chain fused by the graph backend, compiled by mycel.te.";
    d->elementwise = true;  // generated without __restrict: the output may be a dying input
    for (int k = 0; k < prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
    d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
    d->kernel = [fn](const KernelContext& c) {
      std::vector<void*> bufs;
      for (const Tensor& t : c.inputs) bufs.push_back(t.data());
      bufs.push_back(c.out(0).data());
      fn->run(std::move(bufs), {c.out(0).numel()});
    };
    d->dtypes = {DType::float32};
    d->grad = "none";
    return d;
  }
  d->name = "fused_elementwise{" + prog.str() + "}";
  d->class_name = "FusedElementwise";
  d->doc = "Elementwise chain fused by the graph backend.";
  d->elementwise = true;               // the memory planner may write the output over a dying input
  d->backend.keeps_zero = keeps_zero;  // every step maps zeros to zero
  for (int k = 0; k < prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
  d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
  d->kernel = [prog](const KernelContext& c) {
    cpu::run_fused_elementwise(prog, c.inputs, c.out(0));
  };
  if (te_fusion_async()) {  // the interpreter until the TE kernel is compiled in the background
    d->name = "fused_elementwise[te async]{" + prog.str() + "}";
    auto bg = te::BackgroundBuild::start(
        [prog, broadcast] { return te::build_elementwise(prog, broadcast); });
    d->kernel = [prog, bg](const KernelContext& c) {
      auto fn = bg->ready();  // (it may run in place, as the interpreter)
      if (!fn) return cpu::run_fused_elementwise(prog, c.inputs, c.out(0));
      std::vector<void*> bufs;
      for (const Tensor& t : c.inputs) bufs.push_back(t.data());
      bufs.push_back(c.out(0).data());
      fn->run(std::move(bufs), {c.out(0).numel()});
    };
  }
  d->dtypes = {DType::float32};
  d->grad = "none";
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const int n = static_cast<int>(f.code.size());
  std::vector<Group> groups;
  std::unordered_map<int, int> open;  // output register of an open group -> the group
  std::vector<EwOp> ops(n);
  for (int i = 0; i < n; ++i) {
    const Instr& in = f.code[i];
    if (!elementwise_chain_op(f, in, ops[i])) {
      if (has_side_effect(in)) open.clear();  // later reads must not move above it
      continue;
    }
    int g = -1;
    for (int r : in.in) {
      auto it = open.find(r);
      if (it != open.end() && uses[r] == 1 &&
          f.regs[r].meta.shape == f.regs[in.out[0]].meta.shape) {
        g = it->second;
        open.erase(it);
        break;
      }
    }
    if (g < 0) {
      g = static_cast<int>(groups.size());
      groups.push_back({});
    }
    groups[g].members.push_back(i);
    groups[g].out = in.out[0];
    open[in.out[0]] = g;
  }
  std::vector<char> keep(n, 1);
  for (const Group& g : groups) {
    if (g.members.size() < 2 || f.regs[g.out].meta.dtype != DType::float32) continue;
    // Slots: external inputs first (in order of first use), then one per step.
    cpu::EwProgram prog;
    std::vector<int> produced, ext;
    for (int i : g.members) produced.push_back(f.code[i].out[0]);
    auto has = [](const std::vector<int>& v, int r) {
      return std::find(v.begin(), v.end(), r) != v.end();
    };
    for (int i : g.members)
      for (int r : f.code[i].in)
        if (!has(produced, r) && !has(ext, r)) ext.push_back(r);
    // Bool tensors hold one byte per element: a chain only makes and reads them inside.
    if (std::any_of(ext.begin(), ext.end(),
                    [&](int r) { return f.regs[r].meta.dtype != DType::float32; }))
      continue;
    std::unordered_map<int, int> slot_of_step_out;
    prog.num_inputs = static_cast<int>(ext.size());
    auto slot = [&](int r) {
      auto it = slot_of_step_out.find(r);
      if (it != slot_of_step_out.end()) return it->second;
      return static_cast<int>(std::find(ext.begin(), ext.end(), r) - ext.begin());
    };
    for (int i : g.members) {
      const Instr& in = f.code[i];
      cpu::EwStep s{ops[i], slot(in.in[0]), in.in.size() > 1 ? slot(in.in[1]) : 0};
      slot_of_step_out[in.out[0]] = prog.num_inputs + static_cast<int>(prog.steps.size());
      prog.steps.push_back(s);
    }
    std::vector<bool> broadcast;
    const int64_t n_out = numel(f.regs[g.out].meta.shape);
    for (int r : ext) broadcast.push_back(numel(f.regs[r].meta.shape) == 1 && n_out != 1);
    const bool keeps_zero = std::all_of(g.members.begin(), g.members.end(),
                                        [&](int i) { return f.code[i].op->backend.keeps_zero; });
    p.fused_ops.push_back(make_fused_op(prog, f.regs[g.out].meta, broadcast, keeps_zero));
    const int last = g.members.back();
    Instr fused = f.code[last];
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.in = ext;
    fused.out = {g.out};
    for (int i : g.members) keep[i] = 0;
    f.code[last] = std::move(fused);
    keep[last] = 1;
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_elementwise(ProgramImpl& p) {
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
