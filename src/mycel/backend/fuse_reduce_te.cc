// With MYCEL_TE_FUSION=1: a sum or mean of float32 whose input is computed by elementwise ops
// read nowhere else (sum(square(x - mu)) of a variance, sum(exp(x - m)) of a softmax, the bias
// gradient sum(dout * mask) of a relu layer) becomes one tensor-expression kernel that reduces
// the chain's values as it computes them: no intermediate tensor, one pass over the inputs. When
// the chain's values are read elsewhere too (softmax's e in e / sum(e)), the kernel writes them
// as well, and the reduction reads them back while in cache.
// Runs before fuse_elementwise, which fuses what is left; results equal the unfused ops to
// rounding (summation order).
#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/shape.h"
#include "mycel/te/te.h"

namespace mycel::backend::detail {
namespace {

std::shared_ptr<const OpDef> make_op(const cpu::EwProgram& prog, const std::string& what,
                                     std::vector<TensorMeta> outs, std::shared_ptr<te::Function> fn,
                                     const std::vector<bool>& broadcast,
                                     const std::vector<bool>& reduced) {
  auto d = std::make_shared<OpDef>();
  d->name = "fused_reduce[te]{" + prog.str() + "; " + what + "}";
  d->class_name = "FusedReduce";
  d->doc =
      "Elementwise chain and the sum or mean it feeds, fused by the graph backend, compiled "
      "by mycel.te.";
  d->elementwise = false;
  for (int k = 0; k < prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
  const size_t n_out = outs.size();
  d->infer = [outs](const InferContext&) { return outs; };
  d->kernel = [fn, n_out, broadcast, reduced](const KernelContext& c) {
    std::vector<void*> bufs;
    // The dims are size variables bound from the full-shape inputs (a broadcast one is a
    // one-element placeholder); a mean's divisor, the reduced element count, is one more input.
    std::vector<std::vector<int64_t>> shapes;
    float count = 1;
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      bufs.push_back(c.inputs[k].data());
      shapes.push_back(broadcast[k] ? std::vector<int64_t>{1} : c.inputs[k].shape());
      if (!broadcast[k]) {
        int64_t n = 1;
        for (size_t d = 0; d < reduced.size() && d < shapes.back().size(); ++d)
          if (reduced[d]) n *= shapes.back()[d];
        count = static_cast<float>(n);
      }
    }
    if (fn->inputs.size() == c.inputs.size() + 1) {
      bufs.push_back(&count);
      shapes.push_back({1});
    }
    for (size_t k = 0; k < n_out; ++k) bufs.push_back(c.out(k).data());
    fn->run(std::move(bufs), fn->bind(shapes, "fused_reduce[te]"));
  };
  d->dtypes = {DType::float32};
  d->grad = "none";
  return d;
}

// Whether a kept instruction in (from, to) might write x, a kernel's output: anything with a
// side effect except an assign to a weight (an optimizer's update) and kernels that update only
// function parameters in place, which cannot alias a value computed here.
bool may_write_between(const Function& f, const std::vector<char>& keep, int from, int to, int x) {
  for (int k = from + 1; k < to; ++k) {
    const Instr& in = f.code[k];
    if (!keep[k] || !has_side_effect(in)) continue;
    if (in.code == Code::kAssign && !in.in.empty() && in.in[0] != x) continue;
    if (in.code != Code::kKernel || in.op->random || in.op->effect) return true;
    for (int m : in.op->mutated_inputs)
      if (m < 0 || m >= static_cast<int>(in.in.size()) ||
          std::find(f.params.begin(), f.params.end(), in.in[m]) == f.params.end())
        return true;
  }
  return false;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const int n = static_cast<int>(f.code.size());
  std::vector<int> def(f.regs.size(), -1);  // the instruction writing each register (-2: several)
  for (int i = 0; i < n; ++i)
    for (int r : f.code[i].out)
      if (r >= 0) def[r] = def[r] == -1 ? i : -2;
  std::vector<char> keep(n, 1);
  for (int at = 0; at < n; ++at) {
    const Instr& red = f.code[at];
    if (!is_kernel1(red) || red.op->backend.reduce == ReduceFusion::kNone || red.in.size() != 1)
      continue;
    const int x = red.in[0];
    if (!is_static_f32(f, x) || !is_static_f32(f, red.out[0])) continue;
    // Read elsewhere too (the e of softmax's e / sum(e)), the chain's values are a second output
    // and the fused instruction takes the chain's place (the reduction only reads x: it may move
    // up, unless something between might write x).
    const bool keep_chain = uses[x] != 1;
    if (keep_chain && (def[x] < 0 || may_write_between(f, keep, def[x], at, x))) continue;
    const auto& shape = f.regs[x].meta.shape;
    if (numel(shape) <= 1) continue;
    // The chain: producers of full-shape values read once, by the chain or the reduction, with no
    // side effect between them and the fused instruction (their reads move down to it).
    std::vector<int> members;
    const int put = keep_chain ? def[x] : at;  // where the fused instruction goes
    std::function<void(int)> grow = [&](int r) {
      const int d = r >= 0 ? def[r] : -1;
      cpu::EwOp op;
      if (d < 0 || d >= at || !keep[d] || (uses[r] != 1 && r != x) ||
          f.regs[r].meta.shape != shape || !elementwise_chain_op(f, f.code[d], op) ||
          side_effect_between(f, keep, d, put) ||
          std::find(members.begin(), members.end(), d) != members.end())
        return;
      members.push_back(d);
      for (int q : f.code[d].in) grow(q);
    };
    grow(x);
    if (members.empty()) continue;
    std::sort(members.begin(), members.end());
    // Slots: external inputs first (in order of first use), then one per step (fuse_elementwise's
    // numbering).
    std::vector<int> produced, ext;
    for (int i : members) produced.push_back(f.code[i].out[0]);
    auto has = [](const std::vector<int>& v, int r) {
      return std::find(v.begin(), v.end(), r) != v.end();
    };
    for (int i : members)
      for (int r : f.code[i].in)
        if (!has(produced, r) && !has(ext, r)) ext.push_back(r);
    if (std::any_of(ext.begin(), ext.end(),
                    [&](int r) { return f.regs[r].meta.dtype != DType::float32; }))
      continue;
    cpu::EwProgram prog;
    prog.num_inputs = static_cast<int>(ext.size());
    std::unordered_map<int, int> slot_of;
    for (size_t k = 0; k < ext.size(); ++k) slot_of[ext[k]] = static_cast<int>(k);
    for (int i : members) {
      const Instr& in = f.code[i];
      cpu::EwOp op;
      elementwise_chain_op(f, in, op);
      prog.steps.push_back({op, slot_of.at(in.in[0]), in.in.size() > 1 ? slot_of.at(in.in[1]) : 0});
      slot_of[in.out[0]] = prog.num_inputs + static_cast<int>(prog.steps.size()) - 1;
    }
    std::vector<bool> broadcast, reduced(shape.size(), red.attrs.get_ints("axis").empty());
    for (int r : ext) broadcast.push_back(f.regs[r].meta.shape != shape);
    std::string axes;
    for (int64_t a : red.attrs.get_ints("axis"))
      reduced[static_cast<size_t>(
          normalize_axis(a, static_cast<int64_t>(shape.size()), red.op->name.c_str()))] = true;
    for (size_t d = 0; d < reduced.size(); ++d)
      if (reduced[d]) axes += (axes.empty() ? "" : ",") + std::to_string(d);
    // Sums, means, maxima and minima (the ReduceFusion traits); the generated max / min
    // propagate NaN as the reduce kernels do.
    const ReduceFusion how = red.op->backend.reduce;
    const bool keep_dims = red.attrs.get_bool("keep_dims"), mean = how == ReduceFusion::kMean;
    const te::ReduceKind kind = how == ReduceFusion::kMax   ? te::ReduceKind::max
                                : how == ReduceFusion::kMin ? te::ReduceKind::min
                                                            : te::ReduceKind::sum;
    const char* what = how == ReduceFusion::kMax   ? "max"
                       : how == ReduceFusion::kMin ? "min"
                       : mean                      ? "mean"
                                                   : "sum";
    auto fn = te::build_elementwise_reduce(prog, shape, broadcast, reduced, kind, keep_dims, mean,
                                           keep_chain);
    std::vector<TensorMeta> outs{f.regs[red.out[0]].meta};
    if (keep_chain) outs.insert(outs.begin(), f.regs[x].meta);
    p.fused_ops.push_back(
        make_op(prog, std::string(what) + "(" + axes + (keep_dims ? ", keep_dims" : "") + ")", outs,
                std::move(fn), broadcast, reduced));
    Instr fused = red;
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.in = ext;
    if (keep_chain) fused.out = {x, red.out[0]};
    for (int i : members) keep[i] = 0;
    keep[at] = 0;
    keep[put] = 1;
    f.code[put] = std::move(fused);
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_reduce_te(ProgramImpl& p) {
  if (!te_fusion()) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
