// A bf16 dense layer's backward reads dy twice: dx = dy W (a plain matmul, or matmul+mask_product
// where a relu's mask follows) and the weight gradient dW = dy^T x (with db = sum(dy) where the
// layer has a bias), usually far apart in the step. In the transformer's amp O2 step the FFN's
// dy and x (2 MiB each) come cold from L3 or memory to each of them. Where both read the same dy
// (through reshape views), the rows are many (>= kMinRows) and the CPU has AVX512-BF16, the
// three become one instruction at dx's place with all outputs, cpu::dense_grad_pair_bf16: each
// thread computes its blocks of dx rows and then adds those rows' share of dW while dy's block is
// still in its L2. Found by registry traits (backend.plain_matmul, backend.reduce) and
// fuse_mask_product's record of its ops. Nothing is dropped from memory (dy is still written by
// its producer), and dW and db are only computed earlier, so no other reader is affected. Runs
// before fuse_bias_grad (which takes the weight gradients left over); MYCEL_FUSE_DENSE_GRAD_PAIR=0
// turns it off (read when a step compiles, so one process can A/B two compiled steps).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "mycel/backend/fuse_bias_grad.h"
#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dense_grad_pair_bf16.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

namespace mycel::backend::detail {
namespace {

// Below this many rows the two products are short and their operands stay in cache anyway.
constexpr int64_t kMinRows = 1024;

bool enabled() {
  const char* v = std::getenv("MYCEL_FUSE_DENSE_GRAD_PAIR");
  return !v || std::strcmp(v, "0") != 0;
}

float scalar_of(const Tensor& t) {
  return t.dtype() == DType::bfloat16 ? cpu::bf16_widen(t.data<uint16_t>()[0])
                                      : t.data<float>()[0];
}

// inputs dy, W, x (then y, threshold where masked); outputs dx, dW (then db).
std::shared_ptr<const OpDef> make_op(const ProgramImpl::MaskTest* mask,
                                     std::vector<TensorMeta> outs) {
  auto d = std::make_shared<OpDef>();
  const bool has_db = outs.size() == 3;
  d->name = std::string("dense_grad_pair") + (mask ? "+mask_product" : "") + (has_db ? "+sum" : "");
  d->class_name = "DenseGradPair";
  d->doc =
      "A bf16 dense layer's dx = dy W (optionally masked), dW = dy^T x (and db = sum(dy)) in one "
      "launch, fused by the graph backend.";
  d->inputs = {{"dy"}, {"w"}, {"x"}};
  if (mask) d->inputs.insert(d->inputs.end(), {{"y"}, {"threshold"}});
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [outs](const InferContext&) { return outs; };
  const ProgramImpl::MaskTest m = mask ? *mask : ProgramImpl::MaskTest{};
  const bool masked = mask != nullptr;
  d->kernel = [m, masked, has_db](const KernelContext& c) {
    cpu::MaskOperands k;
    if (masked) {
      const Tensor &y = c.in(3), &t = c.in(4);
      MYCEL_CHECK(y.numel() == c.out(0).numel(), RuntimeError, "[dense_grad_pair] y has ",
                  y.numel(), " elements, dx ", c.out(0).numel());
      k = {y.data(), y.dtype() == DType::bfloat16, scalar_of(t), m.less, m.t_left};
    }
    cpu::dense_grad_pair_bf16(c.in(0), c.in(1), c.in(2), masked ? &k : nullptr, c.out(0),
                              c.out(1), has_db ? &c.out(2) : nullptr, c.prepared);
  };
  return d;
}

bool plain(const Instr& in) { return is_kernel1(in) && (!in.params || in.params->post_ops.empty()); }

// dx = dy W at j: a plain matmul (no transposes) or fuse_mask_product's matmul+mask_product, dy
// (..., O) and W (O, I) static bf16. Its mask test, or null for the plain one, in `mask`.
bool is_dx(const Function& f, const ProgramImpl& p, const Instr& in,
           const ProgramImpl::MaskTest** mask) {
  if (!plain(in)) return false;
  const auto it = p.mask_matmul_ops.find(in.op);
  if (it != p.mask_matmul_ops.end()) {
    if (in.in.size() != 4) return false;
    *mask = &it->second;
  } else {
    if (!in.op->backend.plain_matmul || in.in.size() != 2 || in.attrs.get_bool("transpose_a") ||
        in.attrs.get_bool("transpose_b"))
      return false;
    *mask = nullptr;
  }
  const int a = in.in[0], w = in.in[1];
  const Shape &as = f.regs[a].meta.shape, &ws = f.regs[w].meta.shape;
  return as.size() >= 2 && is_static_plain(f, a, DType::bfloat16, -1) &&
         is_static_plain(f, w, DType::bfloat16, 2) && is_static_plain(f, in.out[0], DType::bfloat16) &&
         as.back() == ws[0];
}

// The register r, or the register it views where r is defined only after `at` (a reshape view
// placed next to its reader): the same buffer, read at `at`. -1 where neither is defined by then.
int defined_at(const Function& f, const std::vector<int>& producer, int r, int at) {
  if (producer[r] == -2) return -1;
  if (producer[r] < at) return r;  // -1: a parameter or constant
  const int b = base_of(f, producer, r);
  if (b == r || producer[b] >= at || !is_static_plain(f, b, f.regs[r].meta.dtype) ||
      numel(f.regs[b].meta.shape) != numel(f.regs[r].meta.shape))
    return -1;
  return b;
}

void fuse_function(Function& f, ProgramImpl& p) {
  if (f.recursive) return;
  const std::vector<int> producer = sole_producers(f);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  for (int j = 0; j < n; ++j) {
    const ProgramImpl::MaskTest* mask = nullptr;
    if (!keep[j] || !is_dx(f, p, f.code[j], &mask)) continue;
    const Instr& dx = f.code[j];
    const int dy = dx.in[0], w = dx.in[1], dyb = base_of(f, producer, dy);
    if (producer[dyb] == -2) continue;
    const int64_t O = f.regs[w].meta.shape[0], I = f.regs[w].meta.shape[1];
    const int64_t R = numel(f.regs[dy].meta.shape) / O;
    if (R < kMinRows) continue;
    // The weight gradient dy^T x after j: a (R, O) a view of dy, b (R, I).
    int wi = -1;
    for (int i = j + 1; i < n && wi < 0; ++i) {
      const Instr& mm = f.code[i];
      if (keep[i] && is_weight_gradient(f, mm) && base_of(f, producer, mm.in[0]) == dyb &&
          f.regs[mm.in[0]].meta.shape == Shape{R, O} && f.regs[mm.in[1]].meta.shape == Shape{R, I})
        wi = i;
    }
    if (wi < 0) continue;
    const Instr& mm = f.code[wi];
    const int x = defined_at(f, producer, mm.in[1], j);
    if (x < 0 || written_between(f, x, j, wi) || written_between(f, dy, j, wi) ||
        written_between(f, dyb, j, wi))
      continue;
    // Its bias gradient: a column sum of dy after j.
    int si = -1;
    for (int s = j + 1; s < n && si < 0; ++s)
      if (keep[s] && is_column_sum(f, f.code[s]) && base_of(f, producer, f.code[s].in[0]) == dyb &&
          f.regs[f.code[s].out[0]].meta.shape == Shape{O} && !written_between(f, dy, j, s) &&
          !written_between(f, dyb, j, s))
        si = s;
    std::vector<TensorMeta> outs = {f.regs[dx.out[0]].meta, f.regs[mm.out[0]].meta};
    if (si >= 0) outs.push_back(f.regs[f.code[si].out[0]].meta);
    p.fused_ops.push_back(make_op(mask, outs));
    Instr fused = dx;
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.params = nullptr;
    fused.in = {dy, w, x};
    if (mask) fused.in.insert(fused.in.end(), {dx.in[2], dx.in[3]});
    fused.out = {dx.out[0], mm.out[0]};
    if (si >= 0) fused.out.push_back(f.code[si].out[0]);
    f.code[j] = std::move(fused);
    keep[wi] = 0;
    if (si >= 0) keep[si] = 0;
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_dense_grad_pair(ProgramImpl& p) {
  if (!enabled() || !cpu::dense_grad_pair_available()) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
