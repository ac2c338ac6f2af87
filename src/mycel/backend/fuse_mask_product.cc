// A relu's backward in bfloat16 (amp O2): dy * cast(y > 0), three launches (a bool mask, its cast
// to bf16, the product) and two temporaries, becomes one pass that reads y and dy and writes
// dx. Any `greater`/`less` of a tensor and a one-element threshold, cast to the product's dtype and
// multiplied by a tensor of the same shape, takes this form (float32 products already fuse into
// fuse_elementwise's chains). Each element is the unfused result bit for bit: the comparison in
// float (exact for bf16 and float32 operands), the product dy * 1 or dy * 0 in float, rounded to
// bf16 as the mul kernel rounds. MYCEL_FUSE_MASK_PRODUCT=0 turns it off (A/B measurements).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/mask_product_bf16.h"
#include "mycel/kernels/cpu/matmul_rows.h"

namespace mycel::backend::detail {
namespace {

using cpu::EwOp;

bool is_step(const Instr& in, EwOp op) {
  return is_kernel1(in) && in.op->backend.fuses_elementwise && in.op->backend.ew == op;
}

bool is_tensor(const Function& f, int r, DType d) {
  return r >= 0 && f.regs[r].type == RegType::kTensor && f.regs[r].meta.dtype == d &&
         !f.regs[r].blocked;
}

bool is_scalar_tensor(const Function& f, int r) {
  if (r < 0 || f.regs[r].type != RegType::kTensor || f.regs[r].blocked) return false;
  const DType d = f.regs[r].meta.dtype;
  const Shape& s = f.regs[r].meta.shape;
  return (d == DType::float32 || d == DType::bfloat16) &&
         std::find(s.begin(), s.end(), ir::kDynamic) == s.end() && numel(s) == 1;
}

float load(const void* p, DType d, int64_t i) {
  return d == DType::bfloat16 ? cpu::bf16_widen(static_cast<const uint16_t*>(p)[i])
                              : static_cast<const float*>(p)[i];
}

using Mask = cpu::MaskOperands;

Mask mask_of(const Tensor& y, const Tensor& th, bool less, bool t_left) {
  return {y.data(), y.dtype() == DType::bfloat16, load(th.data(), th.dtype(), 0), less, t_left};
}

std::shared_ptr<const OpDef> make_op(bool less, bool t_left, const std::string& cmp) {
  auto d = std::make_shared<OpDef>();
  d->name = "mask_product{mul(i0,cast(" + cmp + "))}";
  d->class_name = "MaskProduct";
  d->doc = "dy * cast(compare(y, threshold)) in bfloat16, fused by the graph backend.";
  d->inputs = {{"dy"}, {"y"}, {"threshold"}};
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->elementwise = true;  // element i reads elements i: dx may take a dying dy's or y's buffer
  d->infer = [](const InferContext& c) { return std::vector<TensorMeta>{c.in(0)}; };
  d->kernel = [less, t_left](const KernelContext& c) {
    const Tensor &dy = c.in(0), &y = c.in(1), &th = c.in(2);
    MYCEL_CHECK(y.numel() == dy.numel(), RuntimeError, "[mask_product] y has ", y.numel(),
                " elements, dy ", dy.numel());
    const Mask k = mask_of(y, th, less, t_left);
    const uint16_t* D = dy.data<uint16_t>();
    uint16_t* O = c.out(0).data<uint16_t>();
    parallel_for(dy.numel(), 1,
                 [&](int64_t b, int64_t e) { cpu::bf16_mask_product(k, D, O, b, e); });
  };
  return d;
}

// The mask product folded into the matmul that produces its dy (a dense layer's dx, a (..., M,
// K) times b (K, N)): each thread applies the mask to the rows of dx its part of the matmul has
// just written (cpu::matmul_rows_then), while they are in its cache; the same bits as the
// matmul and then the mask product.
struct RowsCtx {
  Mask k;
  uint16_t* c;
  int64_t n;
};

std::shared_ptr<const OpDef> make_matmul_op(bool less, bool t_left, const std::string& cmp,
                                            const TensorMeta& out) {
  auto d = std::make_shared<OpDef>();
  d->name = "matmul+mask_product{" + cmp + "}";
  d->class_name = "MatmulMaskProduct";
  d->doc = "(a @ b) * cast(compare(y, threshold)) in bfloat16, fused by the graph backend.";
  d->inputs = {{"a"}, {"b"}, {"y"}, {"threshold"}};
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [out](const InferContext&) { return std::vector<TensorMeta>{out}; };
  d->kernel = [less, t_left](const KernelContext& c) {
    const Tensor &a = c.in(0), &b = c.in(1), &y = c.in(2), &th = c.in(3);
    Tensor& out = c.out(0);
    MYCEL_CHECK(y.numel() == out.numel(), RuntimeError, "[matmul+mask_product] y has ", y.numel(),
                " elements, the product ", out.numel());
    RowsCtx ctx{mask_of(y, th, less, t_left), out.data<uint16_t>(), b.shape().back()};
    cpu::matmul_rows_then(
        a, b, out,
        [](void* p, int64_t r0, int64_t r1) {
          const auto& x = *static_cast<const RowsCtx*>(p);
          cpu::bf16_mask_product(x.k, x.c, x.c, r0 * x.n, r1 * x.n);
        },
        &ctx, c.prepared);
  };
  return d;
}

// dy = a @ b of a plain matmul (registry trait backend.plain_matmul) that the mask product alone
// reads: a (..., M, K) bf16, b (K, N) bf16, no transposes or post-ops, its output dy itself (no
// view), and neither operand written before the product: its producer's index, or -1.
int foldable_matmul(const Function& f, const std::vector<int>& producer,
                    const std::vector<int>& uses, int dy, int j) {
  const int mi = dy >= 0 ? producer[dy] : -1;
  if (mi < 0 || uses[dy] != 1) return -1;
  const Instr& mm = f.code[mi];
  if (!is_kernel1(mm) || !mm.op->backend.plain_matmul ||
      (mm.params && !mm.params->post_ops.empty()) || mm.in.size() != 2 || mm.out.size() != 1 ||
      mm.out[0] != dy || mm.attrs.get_bool("transpose_a") || mm.attrs.get_bool("transpose_b"))
    return -1;
  const int a = mm.in[0], b = mm.in[1];
  if (!is_tensor(f, a, DType::bfloat16) || !is_tensor(f, b, DType::bfloat16)) return -1;
  const Shape &as = f.regs[a].meta.shape, &bs = f.regs[b].meta.shape;
  if (as.size() < 2 || bs.size() != 2 || !is_static_plain(f, a, DType::bfloat16, as.size()) ||
      !is_static_plain(f, b, DType::bfloat16, 2) || as.back() != bs[0] ||
      written_between(f, a, mi, j) || written_between(f, b, mi, j))
    return -1;
  return mi;
}

bool fold_enabled() {
  const char* v = std::getenv("MYCEL_FUSE_MASK_MATMUL");
  return !v || std::strcmp(v, "0") != 0;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const bool fold = fold_enabled() && !f.recursive;
  const std::vector<int> uses = count_uses(f);
  const int n = static_cast<int>(f.code.size());
  const std::vector<int> producer = sole_producers(f);
  std::vector<char> keep(n, 1);
  for (int j = 0; j < n; ++j) {
    const Instr& mul = f.code[j];
    if (!is_step(mul, EwOp::kMul) || !is_tensor(f, mul.out[0], DType::bfloat16)) continue;
    for (int side = 0; side < 2; ++side) {
      const int m = mul.in[side], dy = mul.in[1 - side];
      const int ci = m >= 0 ? producer[m] : -1;
      if (ci < 0 || uses[m] != 1 || !keep[ci] || !is_step(f.code[ci], EwOp::kCast)) continue;
      const int b = f.code[ci].in[0];
      const int gi = b >= 0 ? producer[b] : -1;
      if (gi < 0 || uses[b] != 1 || !keep[gi] || !is_tensor(f, b, DType::bool_)) continue;
      const Instr& cmp = f.code[gi];
      const bool less = is_step(cmp, EwOp::kLess);
      if (!less && !is_step(cmp, EwOp::kGreater)) continue;
      const bool t_left = is_scalar_tensor(f, cmp.in[0]) && !is_scalar_tensor(f, cmp.in[1]);
      const int y = cmp.in[t_left ? 1 : 0], t = cmp.in[t_left ? 0 : 1];
      const TensorMeta& out = f.regs[mul.out[0]].meta;
      if (!is_tensor(f, dy, DType::bfloat16) || f.regs[dy].meta != out || !is_scalar_tensor(f, t) ||
          !(is_tensor(f, y, DType::bfloat16) || is_tensor(f, y, DType::float32)) ||
          f.regs[y].meta.shape != out.shape || f.regs[b].meta.shape != out.shape ||
          written_between(f, y, gi, j) || written_between(f, t, gi, j))
        continue;
      const int mi = fold ? foldable_matmul(f, producer, uses, dy, j) : -1;
      Instr fused = mul;
      if (mi >= 0 && keep[mi]) {
        p.fused_ops.push_back(make_matmul_op(less, t_left, less ? "less" : "greater", out));
        p.mask_matmul_ops[p.fused_ops.back().get()] = {less, t_left};
        fused.in = {f.code[mi].in[0], f.code[mi].in[1], y, t};
        keep[mi] = 0;
      } else {
        p.fused_ops.push_back(make_op(less, t_left, less ? "less" : "greater"));
        fused.in = {dy, y, t};
      }
      fused.op = p.fused_ops.back().get();
      fused.attrs = Attrs(fused.op, {});
      fused.params = nullptr;
      keep[gi] = keep[ci] = 0;
      f.code[j] = std::move(fused);
      ++p.num_fused;
      break;
    }
  }
  compact(f, keep);
}

}  // namespace

void fuse_mask_product(ProgramImpl& p) {
  const char* v = std::getenv("MYCEL_FUSE_MASK_PRODUCT");
  if (v && std::strcmp(v, "0") == 0) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
