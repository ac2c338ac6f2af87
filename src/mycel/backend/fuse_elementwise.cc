// Chains of float32 elementwise kernels on one shape (x * a + b, relu(x + y), optimizer
// updates; dims may be dynamic, the shape then taken at run time) become one fused_elementwise
// instruction (kernels/cpu/fused_elementwise.h) that runs the chain block by block: one pass over
// memory instead of one per op, and no intermediate tensors. A chain grows through registers read
// exactly once, by the next op of the chain; operands of one element broadcast. Reads never move
// across an instruction with side effects.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/error.h"
#include "mycel/core/shape.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
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
    const Shape& out_shape = f.regs[g.out].meta.shape;
    const bool out_one = !has_dynamic(out_shape) && numel(out_shape) == 1;
    for (int r : ext) {
      const Shape& s = f.regs[r].meta.shape;  // (a dynamic operand has the output's shape)
      broadcast.push_back(!has_dynamic(s) && numel(s) == 1 && !out_one);
    }
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
