// Chains of float32 elementwise kernels on one shape (x * a + b, relu(x + y), optimizer
// updates; dims may be dynamic, the shape then taken at run time) become one fused_elementwise
// instruction (kernels/cpu/fused_elementwise.h) that runs the chain block by block: one pass over
// memory instead of one per op, and no intermediate tensors. A chain grows through registers read
// exactly once, by the next op of the chain; operands of one element broadcast. Reads never move
// across an instruction with side effects. An optimizer's two chains (momentum: v' = m v + g,
// stored in v; p - lr v', stored in p) then become one chain with two outputs (merge_state_chains).
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/error.h"
#include "mycel/core/shape.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/te/te.h"

namespace mycel::backend::detail {
namespace {

using cpu::EwOp;

struct Group {
  std::vector<int> members;  // instruction indices, in order
  int out = -1;
};

bool has_dynamic(const Shape& s) { return std::find(s.begin(), s.end(), ir::kDynamic) != s.end(); }

// A chain over dynamic dims (set_inputs(None, ...)) takes its shape when the shape plan runs:
// the broadcast of its operands (numpy's rule, what the unfused ops give).
TensorMeta run_meta(const TensorMeta& out, const InferContext& c, const std::string& name) {
  TensorMeta m = out;
  std::vector<Shape> shapes;
  for (size_t k = 0; k < c.num_inputs(); ++k) shapes.push_back(c.in(k).shape);
  m.shape = run_shape(out.shape, shapes, name);
  return m;
}

// The generated chain on its operands, without touching the heap (a warm step allocates nothing:
// tests/cpp/backend_heap_test.cc): the kernel's arguments are the buffers, then the length.
void run_te(const te::Function& fn, const std::vector<Tensor>& inputs, Tensor& out) {
  constexpr size_t kMax = 32;
  void* stack[kMax];
  std::vector<void*> heap;
  void** bufs = stack;
  if (inputs.size() + 2 > kMax) {
    heap.resize(inputs.size() + 2);
    bufs = heap.data();
  }
  size_t k = 0;
  for (const Tensor& t : inputs) bufs[k++] = t.data();
  bufs[k++] = out.data();
  int64_t n = out.numel();
  MYCEL_CHECK(k == fn.inputs.size() + fn.outputs.size() && fn.sizes.size() == 1, ValueError,
              "[fused_elementwise] ", k, " buffers for a chain kernel of ", fn.inputs.size(),
              " inputs and ", fn.sizes.size(), " size variables");
  bufs[k] = &n;
  fn.kernel->run(bufs);
}

std::shared_ptr<const OpDef> make_fused_op(const cpu::EwProgram& prog, const TensorMeta& out,
                                           const std::vector<bool>& broadcast, bool keeps_zero) {
  auto d = std::make_shared<OpDef>();
  const bool dynamic = has_dynamic(out.shape);
  d->class_name = "FusedElementwise";
  d->elementwise = true;  // the memory planner may write the output over a dying input
  for (int k = 0; k < prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
  d->dtypes = {DType::float32};
  d->grad = "none";
  if (te_fusion() && !te_fusion_async()) {  // MYCEL_TE_FUSION=1: compiled before the first step
    auto fn = te::build_elementwise(prog, broadcast);  // one kernel for every length
    d->name = "fused_elementwise[te]{" + prog.str() + "}";
    d->doc = "Elementwise chain fused by the graph backend, compiled by mycel.te.";
    // (generated without __restrict, so the output may be a dying input)
    d->kernel = [fn, broadcast, dynamic](const KernelContext& c) {
      std::vector<Tensor> expanded;
      run_te(*fn, chain_operands(c.inputs, c.out(0).shape(), broadcast, dynamic, expanded),
             c.out(0));
    };
  } else {
    // The interpreter, and by default (MYCEL_TE_FUSION=async) the chain's TE kernel once the
    // background thread has built it: the same bits, so the listing does not tell them apart
    // (te.background_stats() counts the builds).
    d->name = "fused_elementwise{" + prog.str() + "}";
    d->doc = "Elementwise chain fused by the graph backend.";
    d->backend.keeps_zero = keeps_zero;  // every step maps zeros to zero
    std::shared_ptr<te::BackgroundBuild> bg;
    if (te_fusion_async())
      bg = te::BackgroundBuild::start(
          [prog, broadcast] { return te::build_elementwise(prog, broadcast); });
    d->kernel = [prog, bg, broadcast, dynamic](const KernelContext& c) {
      std::vector<Tensor> expanded;
      const auto& in = chain_operands(c.inputs, c.out(0).shape(), broadcast, dynamic, expanded);
      auto fn = bg ? bg->ready() : nullptr;  // (it may run in place, as the interpreter)
      if (!fn) return cpu::run_fused_elementwise(prog, in, c.out(0));
      run_te(*fn, in, c.out(0));
    };
  }
  const std::string name = d->name;
  if (dynamic)
    d->infer = [out, name](const InferContext& c) {
      return std::vector<TensorMeta>{run_meta(out, c, name)};
    };
  else
    d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
  return d;
}

// What a fused op of this pass runs (to merge two of them afterwards).
struct Chain {
  cpu::EwProgram prog;
  std::vector<bool> broadcast;
  bool keeps_zero = false;
};
using Chains = std::unordered_map<const OpDef*, Chain>;

void fuse_function(Function& f, ProgramImpl& p, Chains& chains) {
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
    const Shape& out_shape = f.regs[g.out].meta.shape;
    const bool out_one = !has_dynamic(out_shape) && numel(out_shape) == 1;
    for (int r : ext) {
      const Shape& s = f.regs[r].meta.shape;  // (a dynamic operand has the output's shape)
      broadcast.push_back(!has_dynamic(s) && numel(s) == 1 && !out_one);
    }
    const bool keeps_zero = std::all_of(g.members.begin(), g.members.end(),
                                        [&](int i) { return f.code[i].op->backend.keeps_zero; });
    p.fused_ops.push_back(make_fused_op(prog, f.regs[g.out].meta, broadcast, keeps_zero));
    chains[p.fused_ops.back().get()] = {prog, broadcast, keeps_zero};
    p.chain_ops[p.fused_ops.back().get()] = {prog, {static_cast<int>(prog.steps.size()) - 1}};
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

// A register that may hold w's memory: w, a weight sharing its storage, or a view (of anything:
// conservatively, a view may be of w).
bool may_alias(const Function& f, const std::vector<char>& is_view, int r, int w) {
  if (r == w || is_view[r]) return true;
  const RegInfo &a = f.regs[r], &b = f.regs[w];
  return a.is_const && b.is_const && a.type == RegType::kTensor && b.type == RegType::kTensor &&
         a.value.t.defined() && b.value.t.defined() &&
         a.value.t.storage().get() == b.value.t.storage().get();
}

// The op of a merged pair (merge_state_chains): `prog` runs the first chain's steps, then the
// second's, in one pass that stores step first_out (the first chain's result) and the last step.
std::shared_ptr<const OpDef> make_two_output_op(const cpu::EwProgram& prog, int first_out,
                                                std::vector<TensorMeta> outs, bool keeps_zero) {
  auto d = std::make_shared<OpDef>();
  d->class_name = "FusedElementwise";
  d->elementwise = true;
  for (int k = 0; k < prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
  d->dtypes = {DType::float32};
  d->grad = "none";
  d->name = "fused_elementwise{" + prog.str() + "; out=t" + std::to_string(first_out) + ",t" +
            std::to_string(prog.steps.size() - 1) + "}";
  d->doc = "Two elementwise chains fused by the graph backend into one pass with two outputs.";
  d->backend.keeps_zero = keeps_zero;
  const std::vector<int> out_steps = {first_out, static_cast<int>(prog.steps.size()) - 1};
  d->kernel = [prog, out_steps](const KernelContext& c) {
    cpu::run_fused_elementwise(prog, c.inputs, out_steps, c.outputs);
  };
  d->infer = [outs](const InferContext&) { return outs; };
  return d;
}

// F1; assign(v, F1's result o1); F2 reading o1 (an optimizer's state update, its store, and the
// weight update from the new state) become M; assign(v, o1), with M computing both results in
// one pass over the state and the weight. F2's other operands were all computed before F1's
// assign and none of them may be v: moving their reads above the assign changes nothing.
// assign_in_place then lets M write both results straight into v and the weight.
void merge_state_chains(Function& f, ProgramImpl& p, const Chains& chains) {
  const std::vector<int> uses = count_uses(f);
  std::vector<char> is_view(f.regs.size(), 0);
  for (const Instr& in : f.code)
    if (in.code == Code::kView)
      for (int r : in.out) is_view[r] = 1;
  std::vector<char> keep(f.code.size(), 1);
  for (size_t i = 0; i + 2 < f.code.size(); ++i) {
    const Instr &f1 = f.code[i], &a1 = f.code[i + 1], &f2 = f.code[i + 2];
    if (!keep[i] || !is_kernel1(f1) || !is_kernel1(f2) || a1.code != Code::kAssign ||
        a1.in.size() != 2)
      continue;
    auto c1 = chains.find(f1.op), c2 = chains.find(f2.op);
    if (c1 == chains.end() || c2 == chains.end()) continue;
    const int o1 = f1.out[0], o2 = f2.out[0], v = a1.in[0];
    if (a1.in[1] != o1 || uses[o1] != 2 || std::count(f2.in.begin(), f2.in.end(), o1) != 1 ||
        !is_static_f32(f, o1) || f.regs[o1].meta != f.regs[o2].meta)
      continue;
    if (std::any_of(f2.in.begin(), f2.in.end(),
                    [&](int r) { return r != o1 && may_alias(f, is_view, r, v); }))
      continue;
    // Slots: F1's inputs, then F2's others; F1's steps, then F2's.
    const cpu::EwProgram &p1 = c1->second.prog, &p2 = c2->second.prog;
    std::vector<int> ext = f1.in;
    std::vector<bool> broadcast = c1->second.broadcast;
    std::vector<int> in2(f2.in.size());  // F2's input k -> its input in ext, or -1: o1
    for (size_t k = 0; k < f2.in.size(); ++k) {
      const int r = f2.in[k];
      if (r == o1) {
        in2[k] = -1;
        continue;
      }
      auto at = std::find(ext.begin(), ext.end(), r);
      in2[k] = static_cast<int>(at - ext.begin());
      if (at == ext.end()) {
        ext.push_back(r);
        broadcast.push_back(c2->second.broadcast[k]);
      }
    }
    cpu::EwProgram prog;
    prog.num_inputs = static_cast<int>(ext.size());
    const int n1 = static_cast<int>(p1.steps.size());
    auto slot1 = [&](int s) { return s < p1.num_inputs ? s : prog.num_inputs + s - p1.num_inputs; };
    auto slot2 = [&](int s) {
      if (s >= p2.num_inputs) return prog.num_inputs + n1 + s - p2.num_inputs;
      return in2[s] < 0 ? prog.num_inputs + n1 - 1 : in2[s];
    };
    for (const cpu::EwStep& st : p1.steps) prog.steps.push_back({st.op, slot1(st.a), slot1(st.b)});
    for (const cpu::EwStep& st : p2.steps) prog.steps.push_back({st.op, slot2(st.a), slot2(st.b)});
    p.fused_ops.push_back(make_two_output_op(prog, n1 - 1, {f.regs[o1].meta, f.regs[o2].meta},
                                             c1->second.keeps_zero && c2->second.keeps_zero));
    p.chain_ops[p.fused_ops.back().get()] = {prog,
                                             {n1 - 1, static_cast<int>(prog.steps.size()) - 1}};
    Instr m = f2;
    m.op = p.fused_ops.back().get();
    m.attrs = Attrs(m.op, {});
    m.in = ext;
    m.out = {o1, o2};
    f.code[i] = std::move(m);
    keep[i + 2] = 0;
    ++i;  // past the assign (M's results are not chains of this pass)
  }
  compact(f, keep);
}

}  // namespace

void fuse_elementwise(ProgramImpl& p) {
  for (Function& f : p.fns) {
    Chains chains;
    fuse_function(f, p, chains);
    // The merged pair runs on the interpreter (one pass, two outputs), which the default async
    // mode's kernels equal bit for bit; MYCEL_TE_FUSION=1 keeps the chains' compiled kernels.
    if (!te_fusion() || te_fusion_async()) merge_state_chains(f, p, chains);
  }
}

}  // namespace mycel::backend::detail
