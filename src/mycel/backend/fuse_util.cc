#include "mycel/backend/fuse_util.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace mycel::backend::detail {

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

bool te_fusion() {
  const char* e = std::getenv("MYCEL_TE_FUSION");
  return e && *e && std::strcmp(e, "0") != 0 && std::strcmp(e, "async") != 0;
}

bool te_fusion_async() {
  const char* e = std::getenv("MYCEL_TE_FUSION");
  return e && std::strcmp(e, "async") == 0;
}

}  // namespace mycel::backend::detail
