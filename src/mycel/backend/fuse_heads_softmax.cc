// Attention's softmax folded into the product of its scores, and softmax's gradient into the
// product of its dy (issue 19, bf16 O2): S = Q K^T and P = softmax(S), dP = dO V^T and
// dS = P * (dP - rowsum(P * dP)) each become one launch (cpu::matmul_strided_then) in which a
// thread multiplies a block of heads (matmul_strided on the block's sub-views, one thread) and
// runs the row op on that block's rows while they are in its L2. Unfused, the (N * heads, L, L)
// scores (2 MiB in the transformer step) go out to L3 and come back for the row op. Each block's
// product is the same primitive's arithmetic on fewer batch entries and each row the same row
// kernel (softmax_bf16.h), so the result is the unfused one bit for bit. Only where the product's
// result has no other reader (P itself is still stored: the backward reads it). bf16 and, where
// fold_head_transposes.cc folds float32's products, float32 (softmax_f32.h's rows).
// Two threads, the transformer's O2 step, alternating A/B at load 1.9-2.1: the four launches
// 1.21 -> 1.12 ms of minima, 1.25 -> 1.15 of medians (on one thread a wash: the rows' work, not
// the trip to L3, is the cost). MYCEL_FUSE_HEADS_SOFTMAX=0 turns it off (A/B measurements).
#include "mycel/backend/fuse_heads_softmax.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "mycel/kernels/cpu/matmul_heads_rows.h"
#include "mycel/kernels/cpu/softmax_bf16.h"
#include "mycel/kernels/cpu/softmax_f32.h"

namespace mycel::backend::detail {
namespace {

struct RowsCtx {
  void* c;        // the product, then the row op's result, in place
  const void* y;  // the gradient's softmax output (null for the forward)
  int64_t n;      // the row length
};

void softmax_rows_bf16(void* p, int64_t r0, int64_t r1) {
  const auto& x = *static_cast<const RowsCtx*>(p);
  auto* c = static_cast<uint16_t*>(x.c);
  cpu::softmax_bf16_rows(c, c, r0, r1, x.n);
}

void softmax_grad_rows_bf16(void* p, int64_t r0, int64_t r1) {
  const auto& x = *static_cast<const RowsCtx*>(p);
  auto* c = static_cast<uint16_t*>(x.c);
  cpu::softmax_grad_bf16_rows(static_cast<const uint16_t*>(x.y), c, c, r0, r1, x.n);
}

void softmax_rows_f32(void* p, int64_t r0, int64_t r1) {
  const auto& x = *static_cast<const RowsCtx*>(p);
  auto* c = static_cast<float*>(x.c);
  cpu::softmax_f32_rows(c, c, r0, r1, x.n);
}

void softmax_grad_rows_f32(void* p, int64_t r0, int64_t r1) {
  const auto& x = *static_cast<const RowsCtx*>(p);
  auto* c = static_cast<float*>(x.c);
  cpu::softmax_grad_f32_rows(static_cast<const float*>(x.y), c, c, r0, r1, x.n);
}

std::shared_ptr<OpDef> make_op(const cpu::StridedMatmul& s, const TensorMeta& out, bool grad) {
  auto d = std::make_shared<OpDef>();
  d->name = grad ? "matmul_heads+softmax_grad" : "matmul_heads+softmax";
  d->class_name = grad ? "MatMulHeadsSoftmaxGrad" : "MatMulHeadsSoftmax";
  d->doc = grad ? "y * (x @ y' - rowsum(y * (x @ y'))) over head blocks (fuse_heads_softmax.cc)."
                : "softmax(x @ y) over head blocks (fuse_heads_softmax.cc).";
  d->inputs = {{"x"}, {"y"}};
  if (grad) d->inputs.push_back({"softmax"});
  d->dtypes = {out.dtype};
  d->grad = "none";
  d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
  const bool bf16 = out.dtype == DType::bfloat16;
  const cpu::RowEpilogue rows = bf16 ? (grad ? softmax_grad_rows_bf16 : softmax_rows_bf16)
                                     : (grad ? softmax_grad_rows_f32 : softmax_rows_f32);
  d->kernel = [s, grad, rows](const KernelContext& c) {
    Tensor& o = c.out(0);
    RowsCtx ctx{o.data(), grad ? c.in(2).data() : nullptr, s.c.dims[3]};
    if (grad)
      MYCEL_CHECK(c.in(2).numel() == o.numel() && c.in(2).dtype() == o.dtype(), RuntimeError, "[",
                  c.op.name, "] softmax has ", c.in(2).numel(), " elements of ",
                  dtype_name(c.in(2).dtype()), ", the product ", o.numel(), " of ",
                  dtype_name(o.dtype()));
    cpu::matmul_strided_then(c.in(0), c.in(1), o, s, rows, &ctx, c.prepared);
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
  const DType dt = f.regs[result].meta.dtype;  // the product's: bf16, or float32 (fold_f32)
  if (axis != static_cast<int64_t>(shape.size()) - 1 || !is_static_plain(f, out, dt) ||
      f.regs[out].meta.shape != shape)
    return false;
  if (grad && (!is_static_plain(f, row.in[0], dt) || f.regs[row.in[0]].meta.shape != shape))
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
