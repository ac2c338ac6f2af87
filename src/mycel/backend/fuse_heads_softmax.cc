// Attention's softmax folded into the product of its scores, and softmax's gradient into the
// product of its dy (issue 19, bf16 O2): S = Q K^T and P = softmax(S), dP = dO V^T and
// dS = P * (dP - rowsum(P * dP)) each become one launch (cpu::matmul_strided_then) in which a
// thread multiplies a block of heads (matmul_strided on the block's sub-views, one thread) and
// runs the row op on that block's rows while they are in its L2. Unfused, the (N * heads, L, L)
// scores (2 MiB in the transformer step) go out to L3 and come back for the row op. Each block's
// product is the same primitive's arithmetic on fewer batch entries and each row the same row
// kernel (softmax_bf16.h), so the result is the unfused one bit for bit. Only where the product's
// result has no other reader (P itself is still stored: the backward reads it).
// Two threads, the transformer's O2 step, alternating A/B at load 1.9-2.1: the four launches
// 1.21 -> 1.12 ms of minima, 1.25 -> 1.15 of medians (on one thread a wash: the rows' work, not
// the trip to L3, is the cost). MYCEL_FUSE_HEADS_SOFTMAX=0 turns it off (A/B measurements).
#include "mycel/backend/fuse_heads_softmax.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "mycel/kernels/cpu/matmul_heads_rows.h"
#include "mycel/kernels/cpu/softmax_bf16.h"

namespace mycel::backend::detail {
namespace {

struct RowsCtx {
  uint16_t* c;        // the product, then the row op's result, in place
  const uint16_t* y;  // the gradient's softmax output (null for the forward)
  int64_t n;          // the row length
};

void softmax_rows(void* p, int64_t r0, int64_t r1) {
  const auto& x = *static_cast<const RowsCtx*>(p);
  cpu::softmax_bf16_rows(x.c, x.c, r0, r1, x.n);
}

void softmax_grad_rows(void* p, int64_t r0, int64_t r1) {
  const auto& x = *static_cast<const RowsCtx*>(p);
  cpu::softmax_grad_bf16_rows(x.y, x.c, x.c, r0, r1, x.n);
}

std::shared_ptr<OpDef> make_op(const cpu::StridedMatmul& s, const TensorMeta& out, bool grad) {
  auto d = std::make_shared<OpDef>();
  d->name = grad ? "matmul_heads+softmax_grad" : "matmul_heads+softmax";
  d->class_name = grad ? "MatMulHeadsSoftmaxGrad" : "MatMulHeadsSoftmax";
  d->doc = grad ? "y * (x @ y' - rowsum(y * (x @ y'))) over head blocks (fuse_heads_softmax.cc)."
                : "softmax(x @ y) over head blocks (fuse_heads_softmax.cc).";
  d->inputs = {{"x"}, {"y"}};
  if (grad) d->inputs.push_back({"softmax"});
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
  d->kernel = [s, grad](const KernelContext& c) {
    Tensor& o = c.out(0);
    RowsCtx ctx{o.data<uint16_t>(), grad ? c.in(2).data<uint16_t>() : nullptr, s.c.dims[3]};
    if (grad)
      MYCEL_CHECK(c.in(2).numel() == o.numel(), RuntimeError, "[", c.op.name, "] softmax has ",
                  c.in(2).numel(), " elements, the product ", o.numel());
    cpu::matmul_strided_then(c.in(0), c.in(1), o, s, grad ? softmax_grad_rows : softmax_rows, &ctx,
                             c.prepared);
  };
  return d;
}

bool enabled() {
  const char* v = std::getenv("MYCEL_FUSE_HEADS_SOFTMAX");
  return !v || std::strcmp(v, "0") != 0;
}

}  // namespace

bool match_heads_softmax(const Function& f, const std::vector<int>& uses,
                         const std::vector<int>& reader, int k, int result,
                         const std::vector<int>& operands, const cpu::StridedMatmul& s,
                         HeadsSoftmax& r) {
  if (!enabled() || f.recursive || uses[result] != 1 || s.c.dims.size() != 4) return false;
  const int j = reader[result];
  if (j <= k || !is_kernel1(f.code[j])) return false;
  const Instr& row = f.code[j];
  const SoftmaxRows kind = row.op->backend.softmax_rows;
  const bool grad = kind == SoftmaxRows::kGrad;
  if (kind == SoftmaxRows::kNone || row.in.size() != (grad ? 2u : 1u) ||
      row.in[grad ? 1 : 0] != result || (grad && row.in[0] == result))
    return false;
  const Shape& shape = f.regs[result].meta.shape;
  const int out = row.out[0];
  int64_t axis = row.attrs.get_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  if (axis != static_cast<int64_t>(shape.size()) - 1 || !is_static_plain(f, out, DType::bfloat16) ||
      f.regs[out].meta.shape != shape)
    return false;
  if (grad &&
      (!is_static_plain(f, row.in[0], DType::bfloat16) || f.regs[row.in[0]].meta.shape != shape))
    return false;
  for (int x : operands)
    if (written_between(f, x, k, j)) return false;
  r.at = j;
  r.op = make_op(s, f.regs[out].meta, grad);
  r.in = operands;
  if (grad) r.in.push_back(row.in[0]);
  r.out = out;
  return true;
}

}  // namespace mycel::backend::detail
