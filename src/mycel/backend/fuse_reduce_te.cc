// A sum, mean, max or min of float32 whose input is computed by elementwise
// ops read nowhere else (sum(square(x - mu)) of a variance, sum(exp(x - m)) of a softmax, the bias
// gradient sum(dout * mask) of a relu layer) becomes one tensor-expression kernel that reduces
// the chain's values as it computes them: no intermediate tensor, one pass over the inputs. When
// the chain's values are read elsewhere too (softmax's e in e / sum(e)), the kernel writes them
// as well, and the reduction reads them back while in cache.
// Runs before fuse_elementwise, which fuses what is left; results equal the unfused ops to
// rounding (summation order: kernels/cpu/ordered_reduce.h's, the same for the interpreter, which
// runs by default until the kernel is built in the background, and for the kernel).
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <unordered_map>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/core/shape.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/kernels/cpu/ordered_reduce.h"
#include "mycel/te/te.h"

namespace mycel::backend::detail {
namespace {

bool has_dynamic(const Shape& s) { return std::find(s.begin(), s.end(), ir::kDynamic) != s.end(); }

// Whether the ordered reduction would run this chain on one thread where the unfused ops run on
// the thread team: one slice (the first axis of extent > 1 is reduced: a bias gradient's sum over
// the batch, a sum of everything), since each output's order gives it to one thread, and work
// (elements times steps, a dynamic dim counted as 1) from parallel_for's grain on. Those stay
// unfused: on the 2-core machine a relu layer's bias gradient (2048 x 512) fused took 575-660 us
// a launch (minima), the chain and the sum unfused 280 + 210 us, and splitting the fused one's
// rows (by lanes, the same order) or columns across the threads made it slower still (docs/te.md,
// bench/te_reduce_split.cc).
//
// MYCEL_TE_ONE_THREAD_WORK overrides the limit (read when a step compiles; 0: none fuses): the
// warm cache (mycel.te.warm) compiles its small steps with 0 too, so that both forms of each
// such reduction are in the cache, whatever batch size decides between them later.
int64_t one_thread_work_limit() {
  const char* v = std::getenv("MYCEL_TE_ONE_THREAD_WORK");
  if (!v || !*v) return kParallelGrain;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  MYCEL_CHECK(end && *end == 0 && n >= 0, ValueError,
              "[graph fusion] MYCEL_TE_ONE_THREAD_WORK must be an integer >= 0 (work: elements "
              "times steps; default ",
              kParallelGrain, "), got '", v, "'");
  return static_cast<int64_t>(n);
}

bool one_thread_too_long(const Shape& shape, const std::vector<bool>& reduced, size_t steps,
                         int64_t limit) {
  int64_t n = 1;
  int lead = -1;  // the first axis of extent > 1
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (lead < 0) lead = static_cast<int>(d);
    if (shape[d] != ir::kDynamic) n *= shape[d];
  }
  return lead >= 0 && reduced[lead] && n * static_cast<int64_t>(steps + 1) >= limit;
}

// What a fused chain-into-reduction instruction needs at run time.
struct FusedReduce {
  cpu::EwProgram prog;
  Shape shape;  // the chain's (dims may be dynamic)
  std::vector<bool> broadcast, reduced;
  bool keep_dims = false, keep_chain = false, dynamic = false;
  int kind = 0;  // ordered_reduce.h's: 0 sum, 1 max, 2 min
  bool mean = false;
  std::vector<int64_t> dim_codes;           // the generated kernel's size variable for each dim
  std::shared_ptr<te::Function> fn;         // MYCEL_TE_FUSION=1: built before the first step
  std::shared_ptr<te::BackgroundBuild> bg;  // the default: built off the critical path
  const OpDef* reduce = nullptr;  // the reduction's own op and attributes: an empty chain's
  Attrs attrs;
};

// The generated kernel on the chain's operands, without touching the heap (a warm step allocates
// nothing: tests/cpp/backend_heap_test.cc): its buffers are the chain's inputs (a broadcast one
// has one element), a mean's divisor (the reduced element count, one more input), the outputs,
// then the values of its size variables, the chain's dims (dim_codes say which is which).
void run_generated(const FusedReduce& r, const te::Function& fn, const std::vector<Tensor>& in,
                   const Shape& chain_shape, const KernelContext& c, size_t n_out) {
  constexpr size_t kMax = 40;
  void* stack[kMax];
  std::vector<void*> heap;
  const size_t nbuf = fn.inputs.size() + fn.outputs.size() + 1;
  void** bufs = stack;
  if (nbuf > kMax) {
    heap.resize(nbuf);
    bufs = heap.data();
  }
  MYCEL_CHECK(fn.outputs.size() == n_out && fn.sizes.size() <= 32 &&
                  (fn.inputs.size() == in.size() || fn.inputs.size() == in.size() + 1),
              RuntimeError, "[fused_reduce] a kernel of ", fn.inputs.size(), " inputs and ",
              fn.outputs.size(), " outputs for ", in.size(), " operands and ", n_out, " results");
  size_t k = 0;
  for (const Tensor& t : in) bufs[k++] = t.data();
  float count = 1;
  for (size_t d = 0; d < r.reduced.size(); ++d)
    if (r.reduced[d]) count *= static_cast<float>(chain_shape[d]);
  if (fn.inputs.size() == in.size() + 1) bufs[k++] = &count;
  for (size_t j = 0; j < n_out; ++j) bufs[k++] = c.out(j).data();
  int64_t values[32];
  for (size_t q = 0; q < fn.sizes.size(); ++q) {
    const auto d = std::find(r.dim_codes.begin(), r.dim_codes.end(), fn.sizes[q]);
    MYCEL_CHECK(d != r.dim_codes.end(), RuntimeError, "[fused_reduce] the kernel's size variable ",
                q, " is no dim of the chain");
    values[q] = chain_shape[static_cast<size_t>(d - r.dim_codes.begin())];
  }
  bufs[k] = values;
  fn.kernel->run(bufs);
}

// The interpreter: the chain's EwProgram block by block, reduced in ordered_reduce.h's order,
// the generated kernel's (the same bits, so the default may switch to the kernel mid-run).
struct InterpCtx {
  const cpu::EwProgram* prog;
  const float* const* base;
  const char* full;
};

void interp_block(void* ctx, int64_t start, int64_t len, float* dst) {
  const auto* c = static_cast<const InterpCtx*>(ctx);
  cpu::run_fused_elementwise_block(*c->prog, c->base, c->full, start, len, dst);
}

void run_interpreter(const FusedReduce& r, const std::vector<Tensor>& in, const Shape& chain_shape,
                     const KernelContext& c, size_t n_out) {
  constexpr size_t kStack = 16;  // a warm launch allocates nothing
  const float* base_stack[kStack];
  char full_stack[kStack];
  std::vector<const float*> base_heap;
  std::vector<char> full_heap;
  if (in.size() > kStack) base_heap.resize(in.size()), full_heap.resize(in.size());
  const float** base = in.size() > kStack ? base_heap.data() : base_stack;
  char* full = in.size() > kStack ? full_heap.data() : full_stack;
  const int64_t n = numel(chain_shape);
  for (size_t k = 0; k < in.size(); ++k) {
    base[k] = in[k].data<float>();
    full[k] = in[k].numel() == n;
  }
  int64_t dims[32];
  unsigned char red[32];
  const int rank = static_cast<int>(chain_shape.size());
  MYCEL_CHECK(rank <= 32, ValueError, "[fused_reduce] a rank-", rank, " chain (at most 32)");
  float count = 1;
  for (int d = 0; d < rank; ++d) {
    dims[d] = chain_shape[d];
    red[d] = r.reduced[d] ? 1 : 0;
    if (r.reduced[d]) count *= static_cast<float>(chain_shape[d]);
  }
  const cpu::ored::or_plan plan = cpu::ored::or_make_plan(rank, dims, red);
  InterpCtx ctx{&r.prog, base, full};
  float* chain_out = r.keep_chain ? c.out(0).data<float>() : nullptr;
  float* out = c.out(n_out - 1).data<float>();
  const float divisor = r.mean ? count : 0.0f;
  const int64_t cost = static_cast<int64_t>(r.prog.steps.size()) + 1;
  // The generated kernel's thread rule (te/elementwise.cc): serial below the grain, else each
  // thread its share of the slices or of the columns (ordered_reduce.h's or_run_share).
  const int nt = num_threads();
  if (nt <= 1 || plan.lead * plan.slice * cost < kParallelGrain || omp_in_parallel()) {
    cpu::ored::or_run(plan, r.kind, 0, plan.lead, interp_block, &ctx, out, chain_out, divisor);
    return;
  }
#pragma omp parallel num_threads(nt)
  cpu::ored::or_run_share(plan, r.kind, omp_get_thread_num(), omp_get_num_threads(), interp_block,
                          &ctx, out, chain_out, divisor);
}

std::shared_ptr<const OpDef> make_op(std::shared_ptr<const FusedReduce> r, const std::string& what,
                                     std::vector<TensorMeta> outs) {
  auto d = std::make_shared<OpDef>();
  // The default's listing names it as the interpreter's, whichever of the two runs it.
  d->name = std::string(r->fn ? "fused_reduce[te]{" : "fused_reduce{") + r->prog.str() + "; " +
            what + "}";
  d->class_name = "FusedReduce";
  d->doc =
      "Elementwise chain and the sum, mean, max or min it feeds, fused by the graph backend, "
      "compiled by mycel.te.";
  d->elementwise = false;
  for (int k = 0; k < r->prog.num_inputs; ++k) d->inputs.push_back({"i" + std::to_string(k)});
  const size_t n_out = outs.size();
  const std::string name = d->name;
  // The chain's shape at run time: the broadcast of its operands (dims may be dynamic).
  auto chain_shape = [r, name](const std::vector<Shape>& in) {
    return r->dynamic ? run_shape(r->shape, in, name) : r->shape;
  };
  if (r->dynamic)
    d->infer = [r, outs, chain_shape](const InferContext& c) {
      std::vector<Shape> in;
      for (size_t k = 0; k < c.num_inputs(); ++k) in.push_back(c.in(k).shape);
      const Shape s = chain_shape(in);
      std::vector<TensorMeta> m = outs;
      Shape red;
      for (size_t a = 0; a < s.size(); ++a)
        if (!r->reduced[a])
          red.push_back(s[a]);
        else if (r->keep_dims)
          red.push_back(1);
      m.back().shape = red;
      if (r->keep_chain) m.front().shape = s;
      return m;
    };
  else
    d->infer = [outs](const InferContext&) { return outs; };
  d->kernel = [r, n_out, chain_shape](const KernelContext& c) {
    // (static dims: no copy, so a warm launch allocates nothing; tests/cpp/backend_heap_test.cc)
    Shape dyn;
    if (r->dynamic) {
      std::vector<Shape> in_shapes;
      for (const Tensor& t : c.inputs) in_shapes.push_back(t.shape());
      dyn = chain_shape(in_shapes);
    }
    const Shape& s = r->dynamic ? dyn : r->shape;
    std::vector<Tensor> expanded;
    const auto& in = chain_operands(c.inputs, s, r->broadcast, r->dynamic, expanded);
    if (numel(s) > 0) {
      auto fn = r->fn ? r->fn : r->bg ? r->bg->ready() : nullptr;
      if (fn) return run_generated(*r, *fn, in, s, c, n_out);
      return run_interpreter(*r, in, s, c, n_out);
    }
    // An empty chain: the reduction's own kernel says what the reduction of nothing is (zeros,
    // NaN for a mean, a max's error), after the interpreter's (empty) chain.
    Tensor chain = r->keep_chain ? c.out(0) : Tensor::empty(s, DType::float32);
    cpu::run_fused_elementwise(r->prog, in, chain);
    std::vector<Tensor> red_in{chain}, red_out{c.out(n_out - 1)};
    r->reduce->kernel(KernelContext{*r->reduce, red_in, red_out, r->attrs});
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
  const int64_t one_thread_limit = one_thread_work_limit();
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
    // Dims may be dynamic (set_inputs(None, ...)): the kernel's dims are size variables anyway.
    auto f32 = [&](int r) {
      return r >= 0 && f.regs[r].type == RegType::kTensor && f.regs[r].meta.dtype == DType::float32;
    };
    if (!f32(x) || !f32(red.out[0])) continue;
    // Read elsewhere too (the e of softmax's e / sum(e)), the chain's values are a second output
    // and the fused instruction takes the chain's place (the reduction only reads x: it may move
    // up, unless something between might write x).
    const bool keep_chain = uses[x] != 1;
    if (keep_chain && (def[x] < 0 || may_write_between(f, keep, def[x], at, x))) continue;
    const auto& shape = f.regs[x].meta.shape;
    const bool dynamic = has_dynamic(shape);
    if (!dynamic && numel(shape) <= 1) continue;
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
    if (one_thread_too_long(shape, reduced, prog.steps.size(), one_thread_limit)) continue;
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
    auto r = std::make_shared<FusedReduce>();
    r->prog = prog;
    r->shape = shape;
    r->broadcast = broadcast;
    r->reduced = reduced;
    r->keep_dims = keep_dims;
    r->keep_chain = keep_chain;
    r->dynamic = dynamic;
    r->reduce = red.op;
    r->attrs = red.attrs;
    r->kind = kind == te::ReduceKind::sum ? 0 : kind == te::ReduceKind::max ? 1 : 2;
    r->mean = mean;
    for (size_t d = 0; d < shape.size(); ++d)  // (build_elementwise_reduce's names)
      r->dim_codes.push_back(te::size_var("d" + std::to_string(d)));
    auto build = [prog, shape, broadcast, reduced, kind, keep_dims, mean, keep_chain] {
      return te::build_elementwise_reduce(prog, shape, broadcast, reduced, kind, keep_dims, mean,
                                          keep_chain);
    };
    if (te_fusion_async())
      r->bg = te::BackgroundBuild::start(build);
    else
      r->fn = build();
    std::vector<TensorMeta> outs{f.regs[red.out[0]].meta};
    if (keep_chain) outs.insert(outs.begin(), f.regs[x].meta);
    p.fused_ops.push_back(
        make_op(std::move(r),
                std::string(what) + "(" + axes + (keep_dims ? ", keep_dims" : "") + ")", outs));
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

// With MYCEL_TE_FUSION=1 the kernel runs from the first step; by default (async) the interpreter
// runs until the kernel is built in the background. Both reduce in ordered_reduce.h's order, so
// the switch changes no bit.
void fuse_reduce_te(ProgramImpl& p) {
  if (!te_fusion()) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
