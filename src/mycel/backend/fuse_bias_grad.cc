// A dense layer's backward computes dW = matmul(dy, x, transpose_a) and db = sum(dy) over all
// but the last axis, two launches that each read dy (2048 x 512 bf16 in the transformer's FFN:
// 2 MiB). Where both read the same dy (through reshape views) and the matmul comes first, they
// become one instruction at the matmul's place with both outputs, cpu::matmul_col_sums: where
// the matmul splits along K, each thread sums the rows of dy its part has just read, while they
// are in its cache. bfloat16 only (amp O2; the float32 weight gradients mostly fuse with their
// update instead, fuse_matmul_update.cc). MYCEL_FUSE_BIAS_GRAD=0 turns it off (A/B).
#include "mycel/backend/fuse_bias_grad.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/matmul_col_sums.h"

namespace mycel::backend::detail {
namespace {

bool enabled() {
  const char* v = std::getenv("MYCEL_FUSE_BIAS_GRAD");
  return !v || std::strcmp(v, "0") != 0;
}

bool is_static_bf16(const Function& f, int r, int rank) {
  return is_static_plain(f, r, DType::bfloat16, rank) && !f.regs[r].is_const;
}

// Found by the registry's traits (ops/registry.h), as the other passes find theirs: a plain 2-d
// matmul (backend.plain_matmul) and a reduction that sums (backend.reduce), neither with post-ops.
bool plain_kernel(const Instr& in) {
  return is_kernel1(in) && (!in.params || in.params->post_ops.empty());
}

}  // namespace

int base_of(const Function& f, const std::vector<int>& producer, int r) {
  while (r >= 0 && producer[r] >= 0 && f.code[producer[r]].code == Code::kView)
    r = f.code[producer[r]].in[0];
  return r;
}

bool is_column_sum(const Function& f, const Instr& s) {
  if (!plain_kernel(s) || s.op->backend.reduce != ReduceFusion::kSum || s.in.size() != 1 ||
      s.attrs.get_bool("keep_dims"))
    return false;
  const int x = s.in[0];
  if (x < 0 || f.regs[x].type != RegType::kTensor) return false;
  const size_t nd = f.regs[x].meta.shape.size();
  if (nd < 2 || !is_static_bf16(f, x, nd) || !is_static_bf16(f, s.out[0], 1)) return false;
  std::vector<char> reduced(nd, 0);
  for (int64_t a : s.attrs.get_ints("axis")) {
    const int64_t k = a < 0 ? a + static_cast<int64_t>(nd) : a;
    if (k < 0 || k >= static_cast<int64_t>(nd)) return false;
    reduced[k] = 1;
  }
  for (size_t k = 0; k < nd; ++k)
    if (reduced[k] != (k + 1 < nd ? 1 : 0)) return false;
  return f.regs[s.out[0]].meta.shape[0] == f.regs[x].meta.shape[nd - 1];
}

bool is_weight_gradient(const Function& f, const Instr& mm) {
  return plain_kernel(mm) && mm.op->backend.plain_matmul && mm.in.size() == 2 &&
         mm.attrs.get_bool("transpose_a") && !mm.attrs.get_bool("transpose_b") &&
         is_static_bf16(f, mm.in[0], 2) && is_static_bf16(f, mm.in[1], 2) &&
         is_static_bf16(f, mm.out[0], 2) &&
         f.regs[mm.in[0]].meta.shape[0] == f.regs[mm.in[1]].meta.shape[0];
}

namespace {

std::shared_ptr<const OpDef> make_op(const TensorMeta& dw, const TensorMeta& db) {
  auto d = std::make_shared<OpDef>();
  d->name = "matmul+sum";
  d->class_name = "MatmulColSums";
  d->doc =
      "A weight gradient's matmul a^T b with the column sums of a (its bias gradient), "
      "fused by the graph backend.";
  d->inputs = {{"a"}, {"b"}};
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [dw, db](const InferContext&) { return std::vector<TensorMeta>{dw, db}; };
  d->kernel = [](const KernelContext& c) {
    cpu::matmul_col_sums(c.in(0), c.in(1), c.out(0), c.out(1), c.prepared);
  };
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  if (f.recursive) return;
  const std::vector<int> producer = sole_producers(f);
  std::vector<char> keep(f.code.size(), 1);
  for (int j = 0; j < static_cast<int>(f.code.size()); ++j) {
    const Instr& s = f.code[j];
    if (!is_column_sum(f, s)) continue;
    const int dy = base_of(f, producer, s.in[0]);
    const int64_t M = f.regs[s.out[0]].meta.shape[0];
    for (int i = 0; i < j; ++i) {
      const Instr& mm = f.code[i];
      if (!keep[i] || !is_weight_gradient(f, mm) || f.regs[mm.in[0]].meta.shape[1] != M ||
          base_of(f, producer, mm.in[0]) != dy)
        continue;
      p.fused_ops.push_back(make_op(f.regs[mm.out[0]].meta, f.regs[s.out[0]].meta));
      Instr fused = mm;
      fused.op = p.fused_ops.back().get();
      fused.attrs = Attrs(fused.op, {});
      fused.params = nullptr;
      fused.out = {mm.out[0], s.out[0]};
      f.code[i] = std::move(fused);
      keep[j] = 0;
      ++p.num_fused;
      break;
    }
  }
  compact(f, keep);
}

}  // namespace

void fuse_bias_grad(ProgramImpl& p) {
  if (!enabled()) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
