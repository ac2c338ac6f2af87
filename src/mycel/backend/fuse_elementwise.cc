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
// the broadcast of its operands (numpy's rule, what the unfused ops give). A ShapeError naming
// the chain when they do not broadcast.
TensorMeta run_meta(const TensorMeta& out, const InferContext& c, const std::string& name) {
  TensorMeta m = out;
  Shape s(out.shape.size(), 1);
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    const Shape& x = c.in(k).shape;
    MYCEL_CHECK(x.size() <= s.size(), ShapeError, "[", name, "] operand ", k, " has shape ",
                shape_str(x), ", of higher rank than the chain's ", shape_str(out.shape));
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t& o = s[s.size() - x.size() + d];
      MYCEL_CHECK(x[d] == o || x[d] == 1 || o == 1, ShapeError, "[", name, "] operand ", k,
                  " of shape ", shape_str(x), " does not broadcast with ", shape_str(s));
      if (o == 1) o = x[d];
    }
  }
  m.shape = s;
  return m;
}

// x (float32) repeated along its dims of one element (right-aligned) to `shape`.
Tensor expand(const Tensor& x, const Shape& shape) {
  Tensor r = Tensor::empty(shape, DType::float32);
  const size_t rank = shape.size(), off = rank - x.shape().size();
  std::vector<int64_t> stride(rank, 0);  // x's stride along each output dim, 0 where repeated
  for (int64_t d = static_cast<int64_t>(rank) - 1, st = 1; d >= static_cast<int64_t>(off); --d) {
    const int64_t xd = x.shape()[static_cast<size_t>(d) - off];
    stride[static_cast<size_t>(d)] = xd == 1 ? 0 : st;
    st *= xd;
  }
  const float* src = x.data<float>();
  float* dst = r.data<float>();
  std::vector<int64_t> idx(rank, 0);
  int64_t at = 0;  // src offset of idx
  for (int64_t i = 0, n = r.numel(); i < n; ++i) {
    dst[i] = src[at];
    for (size_t d = rank; d-- > 0;) {  // next index, last dim fastest
      at += stride[d];
      if (++idx[d] < shape[d]) break;
      at -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
  return r;
}

// The operands of a fused chain's launch: the inputs, except that in a chain over dynamic dims
// an operand that is neither the output's size nor one element at run time (a dim of 1 against
// the batch) is expanded to the output's shape, since the fused loop indexes every operand alike.
// (A broadcast operand is a static single element; the generated loop reads any other at every
// index, so it must have the output's size even where it has one element.)
const std::vector<Tensor>& operands(const KernelContext& c, const std::vector<bool>& broadcast,
                                    bool dynamic, std::vector<Tensor>& expanded) {
  if (!dynamic) return c.inputs;
  const Tensor& out = c.out(0);
  auto fits = [&](size_t k) { return broadcast[k] || c.inputs[k].numel() == out.numel(); };
  bool all = true;
  for (size_t k = 0; k < c.inputs.size(); ++k) all = all && fits(k);
  if (all) return c.inputs;
  expanded.clear();
  for (size_t k = 0; k < c.inputs.size(); ++k)
    expanded.push_back(fits(k) ? c.inputs[k] : expand(c.inputs[k], out.shape()));
  return expanded;
}

void run_te(const te::Function& fn, const std::vector<Tensor>& inputs, Tensor& out) {
  std::vector<void*> bufs;
  for (const Tensor& t : inputs) bufs.push_back(t.data());
  bufs.push_back(out.data());
  fn.run(std::move(bufs), {out.numel()});
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
  if (te_fusion()) {  // chains compiled by mycel.te instead of run by the block interpreter
    auto fn = te::build_elementwise(prog, broadcast);  // one kernel for every length
    d->name = "fused_elementwise[te]{" + prog.str() + "}";
    d->doc = "Elementwise chain fused by the graph backend, compiled by mycel.te.";
    // (generated without __restrict, so the output may be a dying input)
    d->kernel = [fn, broadcast, dynamic](const KernelContext& c) {
      std::vector<Tensor> expanded;
      run_te(*fn, operands(c, broadcast, dynamic, expanded), c.out(0));
    };
  } else {
    d->name = "fused_elementwise{" + prog.str() + "}";
    d->doc = "Elementwise chain fused by the graph backend.";
    d->backend.keeps_zero = keeps_zero;  // every step maps zeros to zero
    d->kernel = [prog, broadcast, dynamic](const KernelContext& c) {
      std::vector<Tensor> expanded;
      cpu::run_fused_elementwise(prog, operands(c, broadcast, dynamic, expanded), c.out(0));
    };
    if (te_fusion_async()) {  // the interpreter until the TE kernel is compiled in the background
      d->name = "fused_elementwise[te async]{" + prog.str() + "}";
      auto bg = te::BackgroundBuild::start(
          [prog, broadcast] { return te::build_elementwise(prog, broadcast); });
      d->kernel = [prog, bg, broadcast, dynamic](const KernelContext& c) {
        std::vector<Tensor> expanded;
        const auto& in = operands(c, broadcast, dynamic, expanded);
        auto fn = bg->ready();  // (it may run in place, as the interpreter)
        if (!fn) return cpu::run_fused_elementwise(prog, in, c.out(0));
        run_te(*fn, in, c.out(0));
      };
    }
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
    if (!te_fusion() && !te_fusion_async()) merge_state_chains(f, p, chains);
  }
}

}  // namespace mycel::backend::detail
