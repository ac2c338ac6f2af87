// The graph backend's fused elementwise chains (kernels/cpu/fused_elementwise.h) lowered to TE
// and compiled by this code generator: one generated loop per chain (backend/fuse_elementwise.cc),
// and a chain feeding a sum, mean, max or min as one reduction in ordered_reduce.h's order
// (backend/fuse_reduce_te.cc). A generated chain gives the interpreter's bits: its
// exp, tanh and sigmoid are the op kernels' own (kernels/cpu/vmath.h) and its source is compiled
// without contracting a multiply and an add into one fma (the interpreter rounds every step).
#include <algorithm>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/kernels/cpu/ordered_reduce.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

Expr f32(double v) { return constant(v, DType::float32); }

// NaN-propagating max / min, as the maximum / minimum kernels.
Expr nan_pick(Op op, const Expr& a, const Expr& b) {
  Expr pick = binary(op, a, b);
  return select(binary(Op::Ne, a, a), a, select(binary(Op::Ne, b, b), b, pick));
}

Expr step_expr(cpu::EwOp op, const Expr& a, const Expr& b) {
  using cpu::EwOp;
  switch (op) {
    case EwOp::kAdd:
      return binary(Op::Add, a, b);
    case EwOp::kSub:
      return binary(Op::Sub, a, b);
    case EwOp::kMul:
      return binary(Op::Mul, a, b);
    case EwOp::kDiv:
      return binary(Op::Div, a, b);
    case EwOp::kMaximum:
      return nan_pick(Op::Max, a, b);
    case EwOp::kMinimum:
      return nan_pick(Op::Min, a, b);
    case EwOp::kNeg:
      return unary(Op::Neg, a);
    case EwOp::kAbs:
      return unary(Op::Abs, a);
    case EwOp::kRelu:
      return select(binary(Op::Lt, a, f32(0)), f32(0), a);
    case EwOp::kSquare:
      return binary(Op::Mul, a, a);
    case EwOp::kSqrt:
      return unary(Op::Sqrt, a);
    case EwOp::kReciprocal:
      return binary(Op::Div, f32(1), a);
    case EwOp::kExp:
      return unary(Op::Exp, a);
    case EwOp::kSigmoid:
      return unary(Op::Sigmoid, a);
    case EwOp::kTanh:
      return unary(Op::Tanh, a);
    case EwOp::kErf:
      return unary(Op::Erf, a);
    // Comparisons are held in the chain as 1.0f / 0.0f; cast reads them back unchanged.
    case EwOp::kGreater:
      return select(binary(Op::Gt, a, b), f32(1), f32(0));
    case EwOp::kLess:
      return select(binary(Op::Lt, a, b), f32(1), f32(0));
    case EwOp::kCast:
      return a;
  }
  MYCEL_THROW(ValueError, "[te fusion] unknown elementwise step ", static_cast<int>(op));
}

// The chain's value at one element: inputs of `shape` are read at `index`, broadcast ones (one
// element) at 0; the placeholders are appended to ins.
Expr chain_expr(const cpu::EwProgram& p, const std::vector<int64_t>& shape,
                const std::vector<bool>& broadcast, const std::vector<Expr>& index,
                std::vector<Tensor>& ins) {
  MYCEL_CHECK(static_cast<int>(broadcast.size()) == p.num_inputs && !p.steps.empty(), ValueError,
              "[te fusion] program ", p.str(), " does not match its ", broadcast.size(), " inputs");
  std::vector<Expr> slots;
  for (int k = 0; k < p.num_inputs; ++k) {
    const std::string name = "in" + std::to_string(k);
    if (broadcast[k]) {
      ins.push_back(placeholder({1}, DType::float32, name));
      slots.push_back(load(ins.back(), {constant(0, DType::int64)}));
    } else {
      ins.push_back(placeholder(shape, DType::float32, name));
      slots.push_back(load(ins.back(), index));
    }
  }
  for (const cpu::EwStep& s : p.steps) {
    MYCEL_CHECK(s.a >= 0 && s.a < static_cast<int>(slots.size()) && s.b >= 0 &&
                    s.b < static_cast<int>(slots.size()),
                ValueError, "[te fusion] program ", p.str(), " reads a slot it has not computed");
    slots.push_back(step_expr(s.op, slots[s.a], slots[s.b]));
  }
  return slots.back();
}

// build() for a fused chain: each step rounded as the interpreter's (GCC and Clang otherwise
// contract a * b + c within the generated expression). in_place: the output may be an input's
// buffer (the memory planner reuses a dying input, as for the interpreter's chains), so no
// pointer is __restrict; the one loop reads element i of each input before it writes element i
// of the output, and its ivdep (or the outlined parallel loop's alias check) keeps it vectorized.
std::shared_ptr<Function> build_rounded(std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                                        bool in_place = false) {
  auto f = std::make_shared<Function>();
  std::string body = generate_cpp(inputs, outputs);
  if (in_place)
    for (size_t at; (at = body.find("* __restrict ")) != std::string::npos;)
      body.replace(at, 13, "* ");
  f->source =
      "#if defined(__clang__)\n#pragma STDC FP_CONTRACT OFF\n#elif defined(__GNUC__)\n"
      "#pragma GCC optimize(\"fp-contract=off\")\n#endif\n" +
      body;
  f->kernel = compile(f->source);
  f->sizes = size_vars(inputs, outputs);
  f->inputs = std::move(inputs);
  f->outputs = std::move(outputs);
  return f;
}

// The chain over a length n0 as one serial loop (a function of its own, chain_kernel), for the
// ordered reduction's blocks: build_elementwise's source without its thread pragma.
std::string chain_block_source(const cpu::EwProgram& p, const std::vector<bool>& broadcast) {
  const int64_t n = size_var("n");
  IterVar i = make_var("i", 0, n, false);
  std::vector<Tensor> ins;
  Expr body = chain_expr(p, {n}, broadcast, {var(i)}, ins);
  std::string src = generate_cpp(ins, {compute({n}, {i}, body, "fused")});
  const std::string entry = "extern \"C\" void mycel_te_kernel(void** bufs)";
  const size_t at = src.find(entry);
  MYCEL_CHECK(at != std::string::npos, RuntimeError, "[te fusion] no kernel entry in the chain");
  src.replace(at, entry.size(), "static void chain_kernel(void** bufs)");
  for (size_t q; (q = src.find("#pragma omp parallel")) != std::string::npos;)
    src.erase(q, src.find('\n', q) - q + 1);
  return src;
}

// A chain-into-reduction kernel: the chain's blocks (chain_kernel) reduced by the pasted
// ordered_reduce.h, its slices on the thread team when the work reaches parallel_for's grain.
// Buffers: the chain's inputs (then a mean's count), the outputs (the chain's values first when
// kept), then the size variables (sizes: their codes; dim d of the chain is d-th of shape).
std::string ordered_reduce_source(const cpu::EwProgram& p, const std::vector<bool>& broadcast,
                                  const std::vector<int64_t>& shape,
                                  const std::vector<bool>& reduced,
                                  const std::vector<int64_t>& sizes, int kind, bool mean,
                                  bool keep_chain) {
  const size_t ni = broadcast.size(), rank = shape.size();
  std::ostringstream os;
  os << chain_block_source(p, broadcast) << "#include <omp.h>\nnamespace mycel_or {\n"
     << cpu::ored::kOrderedReduceSource << "\n}\n"
     << "static void chain_block(void* ctx, int64_t start, int64_t len, float* dst) {\n"
     << "  const float* const* in = (const float* const*)ctx;\n  void* b[" << ni + 2 << "];\n";
  for (size_t k = 0; k < ni; ++k)
    os << "  b[" << k << "] = (void*)(in[" << k << "]" << (broadcast[k] ? "" : " + start")
       << ");\n";
  os << "  int64_t n = len;\n  b[" << ni << "] = dst;\n  b[" << ni + 1
     << "] = &n;\n  chain_kernel(b);\n}\n"
     << "extern \"C\" void mycel_te_kernel(void** bufs) {\n  const float* in[" << ni << "];\n";
  for (size_t k = 0; k < ni; ++k) os << "  in[" << k << "] = (const float*)bufs[" << k << "];\n";
  size_t slot = ni;
  const std::string divisor =
      mean ? "((const float*)bufs[" + std::to_string(slot++) + "])[0]" : std::string("0.0f");
  const std::string chain_out =
      keep_chain ? "(float*)bufs[" + std::to_string(slot++) + "]" : std::string("0");
  const size_t out_slot = slot++;
  os << "  float* chain_out = " << chain_out << ";\n  float* out = (float*)bufs[" << out_slot
     << "];\n"
     << "  const int64_t* sz = (const int64_t*)bufs[" << slot << "];\n"
     << "  int64_t dims[" << rank << "];\n  unsigned char red[" << rank << "];\n";
  for (size_t d = 0; d < rank; ++d) {
    const auto at = std::find(sizes.begin(), sizes.end(), shape[d]) - sizes.begin();
    MYCEL_CHECK(at < static_cast<std::ptrdiff_t>(sizes.size()), RuntimeError, "[te fusion] dim ", d,
                " of the chain is not a size variable of its kernel");
    os << "  dims[" << d << "] = sz[" << at << "];\n  red[" << d << "] = " << (reduced[d] ? 1 : 0)
       << ";\n";
  }
  // The thread rule of the interpreter (parallel_for over slices, a step's work per element).
  const int64_t cost = static_cast<int64_t>(p.steps.size()) + 1;
  os << "  const mycel_or::or_plan pl = mycel_or::or_make_plan(" << rank << ", dims, red);\n"
     << "  const float divisor = " << divisor << ";\n"
     << "  if (pl.lead * pl.slice == 0) return;\n"
     << "  const int nt = omp_get_max_threads();\n"
     << "  if (nt <= 1 || pl.lead * pl.slice * " << cost << " < " << kParallelGrain
     << " || omp_in_parallel()) {\n"
     << "    mycel_or::or_run(pl, " << kind
     << ", 0, pl.lead, chain_block, (void*)in, out, chain_out, divisor);\n    return;\n  }\n"
     << "#pragma omp parallel num_threads(nt)\n  {\n"
     << "    mycel_or::or_run_share(pl, " << kind
     << ", omp_get_thread_num(), omp_get_num_threads(), chain_block, (void*)in, out, chain_out, "
        "divisor);\n  }\n}\n";
  return os.str();
}

}  // namespace

std::shared_ptr<Function> build_elementwise(const cpu::EwProgram& p,
                                            const std::vector<bool>& broadcast) {
  // The length is a size variable: one kernel (and one cache entry) for every size of the chain.
  const int64_t n = size_var("n");
  IterVar i = make_var("i", 0, n, false);
  std::vector<Tensor> ins;
  Expr body = chain_expr(p, {n}, broadcast, {var(i)}, ins);
  return build_rounded(ins, {compute({n}, {i}, body, "fused")}, /*in_place=*/true);
}

std::shared_ptr<Function> build_elementwise_reduce(
    const cpu::EwProgram& p, const std::vector<int64_t>& shape, const std::vector<bool>& broadcast,
    const std::vector<bool>& reduced, ReduceKind kind, bool keep_dims, bool mean, bool keep_chain) {
  MYCEL_CHECK(reduced.size() == shape.size(), ValueError, "[te fusion] ", reduced.size(),
              " reduced flags for a rank-", shape.size(), " input");
  std::vector<Expr> index;
  std::vector<IterVar> axes, raxes;
  std::vector<int64_t> out_shape;
  // Every dim is a size variable (d0, d1, ... by position): one kernel for every batch size.
  std::vector<int64_t> sym_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d) sym_shape[d] = size_var("d" + std::to_string(d));
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::string name = std::string(reduced[d] ? "r" : "i") + std::to_string(d);
    if (reduced[d]) {
      raxes.push_back(make_var(name, 0, sym_shape[d], true));
      index.push_back(var(raxes.back()));
      if (keep_dims) {  // an axis of extent 1 that indexes nothing
        axes.push_back(make_var("k" + std::to_string(d), 0, 1, false));
        out_shape.push_back(1);
      }
    } else {
      axes.push_back(make_var(name, 0, sym_shape[d], false));
      index.push_back(var(axes.back()));
      out_shape.push_back(sym_shape[d]);
    }
  }
  MYCEL_CHECK(!raxes.empty(), ValueError, "[te fusion] a reduction over no axis");
  std::vector<Tensor> ins;
  Tensor chain;  // keep_chain: the chain's values are an output too, which the reduction reads
  if (keep_chain) {
    std::vector<IterVar> full;
    std::vector<Expr> at;
    for (size_t d = 0; d < shape.size(); ++d) {
      full.push_back(make_var("j" + std::to_string(d), 0, sym_shape[d], false));
      at.push_back(var(full.back()));
    }
    chain = compute(sym_shape, full, chain_expr(p, sym_shape, broadcast, at, ins), "fused_chain");
  }
  Expr value = chain ? load(chain, index) : chain_expr(p, sym_shape, broadcast, index, ins);
  MYCEL_CHECK(!mean || kind == ReduceKind::sum, ValueError, "[te fusion] a mean is a sum");
  Expr body = reduce(kind, value, raxes);
  if (mean) {  // divided by the reduced element count, a float32 input of its own (last)
    ins.push_back(placeholder({1}, DType::float32, "count"));
    body = binary(Op::Div, body, load(ins.back(), {constant(0, DType::int64)}));
  }
  Tensor out = compute(out_shape, axes, body, "fused_reduce");
  // The tensors above describe the function (its inputs, outputs and size variables, what bind
  // checks); its source is the chain's loop, run block by block and reduced in
  // kernels/cpu/ordered_reduce.h's order, the interpreter's.
  std::vector<Tensor> outs = chain ? std::vector<Tensor>{chain, out} : std::vector<Tensor>{out};
  auto f = std::make_shared<Function>();
  f->sizes = size_vars(ins, outs);
  const int kind_code = kind == ReduceKind::sum ? 0 : kind == ReduceKind::max ? 1 : 2;
  f->source =
      "#if defined(__clang__)\n#pragma STDC FP_CONTRACT OFF\n#elif defined(__GNUC__)\n"
      "#pragma GCC optimize(\"fp-contract=off\")\n#endif\n" +
      ordered_reduce_source(p, broadcast, sym_shape, reduced, f->sizes, kind_code, mean,
                            keep_chain);
  f->kernel = compile(f->source);
  f->inputs = std::move(ins);
  f->outputs = std::move(outs);
  return f;
}

}  // namespace mycel::te
