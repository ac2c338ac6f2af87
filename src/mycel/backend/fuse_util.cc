#include "mycel/backend/fuse_util.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "mycel/core/error.h"
#include "mycel/core/shape.h"

namespace mycel::backend::detail {

std::vector<int> sole_producers(const Function& f) {
  std::vector<int> producer(f.regs.size(), -1);
  for (int i = 0; i < static_cast<int>(f.code.size()); ++i)
    for (int r : f.code[i].out)
      if (r >= 0) producer[r] = producer[r] == -1 ? i : -2;
  return producer;
}

std::vector<int> count_uses(const Function& f) {
  std::vector<int> uses(f.regs.size(), 0);
  auto use = [&](int r) {
    if (r >= 0) ++uses[r];
  };
  for (const Instr& in : f.code) {
    for (int r : in.in) use(r);
    for (int r : in.in_b) use(r);
    use(in.cond);
    for (const Target& t : in.targets)
      for (int r : t.args) use(r);
  }
  for (int r : f.outputs) use(r);
  return uses;
}

bool has_side_effect(const Instr& in) {
  switch (in.code) {  // a whitelist: any other code (calls, print, new ones) is a barrier
    case Code::kKernel:
      return !in.op->mutated_inputs.empty() || in.op->random || in.op->effect;
    case Code::kView:
    case Code::kScalar:
    case Code::kTensorToScalar:
    case Code::kScalarToTensor:
    case Code::kDim:
    case Code::kSelect:
      return false;
    default:
      return true;
  }
}

bool is_kernel1(const Instr& in) { return in.code == Code::kKernel && in.out.size() == 1; }

std::vector<int> single_readers(const Function& f, const std::vector<int>& uses) {
  std::vector<int> reader(f.regs.size(), -1);
  for (int i = 0; i < static_cast<int>(f.code.size()); ++i)
    for (int r : f.code[i].in)
      if (r >= 0 && uses[r] == 1) reader[r] = i;
  return reader;
}

bool side_effect_between(const Function& f, const std::vector<char>& keep, int from, int to) {
  for (int k = from + 1; k < to; ++k)
    if (keep[k] && has_side_effect(f.code[k])) return true;
  return false;
}

bool is_static_plain(const Function& f, int r, DType d, int rank) {
  if (r < 0 || f.regs[r].type != RegType::kTensor || f.regs[r].blocked || f.regs[r].meta.dtype != d)
    return false;
  const Shape& s = f.regs[r].meta.shape;
  if (rank >= 0 && s.size() != static_cast<size_t>(rank)) return false;
  for (int64_t x : s)
    if (x == ir::kDynamic) return false;
  return true;
}

bool written_between(const Function& f, int r, int from, int to) {
  for (int k = from + 1; k < to; ++k) {
    const Instr& in = f.code[k];
    if (in.code == Code::kAssign && !in.in.empty() && in.in[0] == r) return true;
    if (in.code == Code::kCall) return true;
    if (in.code == Code::kKernel)
      for (int m : in.op->mutated_inputs)
        if (m < static_cast<int>(in.in.size()) && in.in[m] == r) return true;
  }
  return false;
}

bool is_static_f32(const Function& f, int r) {
  if (r < 0 || f.regs[r].type != RegType::kTensor || f.regs[r].meta.dtype != DType::float32)
    return false;
  for (int64_t d : f.regs[r].meta.shape)
    if (d == ir::kDynamic) return false;
  return true;
}

bool is_f32_static_but_batch(const Function& f, int r) {
  if (r < 0 || f.regs[r].type != RegType::kTensor || f.regs[r].meta.dtype != DType::float32)
    return false;
  const Shape& s = f.regs[r].meta.shape;
  for (size_t d = 1; d < s.size(); ++d)
    if (s[d] == ir::kDynamic) return false;
  return true;
}

int64_t numel_per_sample(const Function& f, int r) {
  int64_t n = 1;
  for (int64_t d : f.regs[r].meta.shape) n *= d == ir::kDynamic ? 1 : d;
  return n;
}

void compact(Function& f, const std::vector<char>& keep) {
  std::vector<Instr> code;
  code.reserve(f.code.size());
  for (size_t i = 0; i < f.code.size(); ++i)
    if (keep[i]) code.push_back(std::move(f.code[i]));
  f.code = std::move(code);
}

namespace {

bool is_tensor_of(const Function& f, int r, DType d) {
  return r >= 0 && f.regs[r].type == RegType::kTensor && f.regs[r].meta.dtype == d;
}

bool has_dynamic(const Shape& s) { return std::find(s.begin(), s.end(), ir::kDynamic) != s.end(); }

}  // namespace

bool elementwise_chain_op(const Function& f, const Instr& in, cpu::EwOp& op) {
  using cpu::EwOp;
  if (!is_kernel1(in) || !in.op->backend.fuses_elementwise) return false;
  op = in.op->backend.ew;
  if (static_cast<int>(in.in.size()) != cpu::ew_arity(op)) return false;
  const bool bool_out = op == EwOp::kGreater || op == EwOp::kLess, bool_in = op == EwOp::kCast;
  if (!is_tensor_of(f, in.out[0], bool_out ? DType::bool_ : DType::float32)) return false;
  // Dynamic dims (set_inputs(None, ...)) fuse too: an operand then has the output's abstract
  // shape or is a static single element, and the fused op takes its shape at run time.
  const TensorMeta& m = f.regs[in.out[0]].meta;
  for (int r : in.in) {
    if (!is_tensor_of(f, r, bool_in ? DType::bool_ : DType::float32)) return false;
    const Shape& s = f.regs[r].meta.shape;
    if (s != m.shape && (has_dynamic(s) || numel(s) != 1)) return false;
  }
  return true;
}

Shape run_shape(const Shape& abstract, const std::vector<Shape>& shapes, const std::string& name) {
  Shape s(abstract.size(), 1);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& x = shapes[k];
    MYCEL_CHECK(x.size() <= s.size(), ShapeError, "[", name, "] operand ", k, " has shape ",
                shape_str(x), ", of higher rank than the chain's ", shape_str(abstract));
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t& o = s[s.size() - x.size() + d];
      MYCEL_CHECK(x[d] == o || x[d] == 1 || o == 1, ShapeError, "[", name, "] operand ", k,
                  " of shape ", shape_str(x), " does not broadcast with ", shape_str(s));
      if (o == 1) o = x[d];
    }
  }
  return s;
}

namespace {

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

}  // namespace

const std::vector<Tensor>& chain_operands(const std::vector<Tensor>& inputs, const Shape& shape,
                                          const std::vector<bool>& broadcast, bool dynamic,
                                          std::vector<Tensor>& expanded) {
  if (!dynamic) return inputs;
  const int64_t n = numel(shape);
  auto fits = [&](size_t k) { return broadcast[k] || inputs[k].numel() == n; };
  bool all = true;
  for (size_t k = 0; k < inputs.size(); ++k) all = all && fits(k);
  if (all) return inputs;
  expanded.clear();
  for (size_t k = 0; k < inputs.size(); ++k)
    expanded.push_back(fits(k) ? inputs[k] : expand(inputs[k], shape));
  return expanded;
}

namespace {

enum class TeFusion { off, sync, async };

TeFusion te_fusion_mode() {
  const char* e = std::getenv("MYCEL_TE_FUSION");
  if (!e || !*e || std::strcmp(e, "async") == 0) return TeFusion::async;
  if (std::strcmp(e, "0") == 0 || std::strcmp(e, "off") == 0) return TeFusion::off;
  if (std::strcmp(e, "1") == 0 || std::strcmp(e, "sync") == 0) return TeFusion::sync;
  MYCEL_THROW(ValueError, "[graph fusion] MYCEL_TE_FUSION must be async (the default), 1 (sync) ",
              "or 0 (off), got '", e, "'");
}

}  // namespace

bool te_fusion() { return te_fusion_mode() != TeFusion::off; }

bool te_fusion_async() { return te_fusion_mode() == TeFusion::async; }

}  // namespace mycel::backend::detail
