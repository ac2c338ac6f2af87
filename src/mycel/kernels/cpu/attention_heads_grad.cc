// attention_heads_grad: the backward of attention's heads as one launch. Unfused it is four
// (dV = P^T dO; dP = dO V^T with softmax's gradient, matmul_heads_rows.h; dQ = dS K; dK = dS^T Q)
// and P (2 MiB bf16 in the transformer's step, 64 heads of 128 x 128) comes from L3 for dV and
// again for dS, and dS goes out to L3 and comes back twice. Where the four products suit
// matmul_head_bf16 (AVX512-BF16, heads up to 256), each thread takes a range of heads and runs a
// head's five steps back to back (by_heads), dS in a 32 KiB buffer of its own; dP's b is V^T,
// which as a launch of its own stays on oneDNN (faster there), so its sums are our kernel's:
// both sum K in order in float32 and the tests found the unfused bits, but only bf16 rounding is
// promised for dS. Elsewhere (larger heads) the first dim is cut into blocks of whole entries,
// each block's products matmul_strided on one thread (oneDNN's bits exactly) with dS in a
// per-thread buffer: a primitive call per block and product, which in the transformer's step
// (16 blocks of 4 heads) ran slower than the four launches. attention_heads_fwd is the forward's
// pair (scores, softmax, P.V) per head the same way.
#include "mycel/kernels/cpu/attention_heads_grad.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/head_blocks.h"
#include "mycel/kernels/cpu/matmul_heads_bf16.h"
#include "mycel/kernels/cpu/matmul_heads_rows.h"
#include "mycel/kernels/cpu/softmax_bf16.h"

namespace mycel::cpu {
namespace {

// P's and dS's bytes a block (both): the transformer's 256 KiB (one batch entry) leaves L2 room
// for the block's dO, V, K, Q and outputs (7 x 32 KiB).
constexpr int64_t kBlockBytes = 256 * 1024;

struct GradPrepared : KernelPrepared {
  int threads = 0;
  bool own = false;  // each head by matmul_head_bf16 (all four products fit it)
  int64_t per = 0;   // first-dim entries a block
  std::vector<std::unique_ptr<KernelPrepared>> slots;  // 4 a block: each product's state
};

bool four_d(const StridedMatmul& m, int64_t A) {
  for (const StridedView* v : {&m.a, &m.b, &m.c})
    if (v->dims.size() != 4 || v->strides.size() != 4 || v->dims[0] != A) return false;
  return true;
}

// A head's operand in view v: head (i, j)'s first element and its row or column stride.
HeadOperand operand(const Tensor& t, const StridedView& v, int64_t i, int64_t j) {
  const bool rows = v.strides[3] == 1 || v.dims[3] == 1;
  return {t.data<uint16_t>() + i * v.strides[0] + j * v.strides[1],
          rows ? v.strides[2] : v.strides[3], rows};
}

// The own path: each thread a range of the A * C heads and, per head, the five steps with dS in
// a buffer of its own (L x L: 32 KiB in the transformer, in L1/L2 between its writer and its
// two readers), no oneDNN call and no per-block set-up.
void by_heads(const Tensor& dv_a, const Tensor& dv_b, const Tensor& dp_a, const Tensor& dp_b,
              const Tensor& y, const Tensor& dq_b, const Tensor& dk_b, Tensor& dv, Tensor& dq,
              Tensor& dk, const AttentionGradViews& s) {
  const std::vector<int64_t>& d = s.dp.c.dims;
  const int64_t C = d[1], L = d[2], S = d[3], D = s.dv.c.dims[3], Kd = s.dp.a.dims[3];
  const int64_t Dq = s.dq.c.dims[3];
  const int64_t work = L * S * (2 * D + Kd) + S * Dq * L;  // the head's multiply-adds, about
  parallel_for(d[0] * C, work, [&](int64_t h0, int64_t h1) {
    thread_local std::vector<uint16_t> ds;  // only grows: warm launches allocate nothing
    if (ds.size() < static_cast<size_t>(L * S)) ds.resize(static_cast<size_t>(L * S));
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t i = h / C, j = h % C;
      auto out = [&](Tensor& t, const StridedView& v) {
        return t.data<uint16_t>() + i * v.strides[0] + j * v.strides[1];
      };
      matmul_head_bf16(operand(dp_a, s.dp.a, i, j), operand(dp_b, s.dp.b, i, j), ds.data(), S, L, S,
                       Kd);
      const uint16_t* p = y.data<uint16_t>() + i * s.dp.c.strides[0] + j * s.dp.c.strides[1];
      softmax_grad_bf16_rows(p, ds.data(), ds.data(), 0, L, S);
      // dV after the rows: its pack of P^T then reads P from L1/L2, not L3 (the transformer's
      // O2 step, two threads, alternating A/B at load 3.7-5.7: 920-967 -> 882-952 us minima).
      matmul_head_bf16(operand(dv_a, s.dv.a, i, j), operand(dv_b, s.dv.b, i, j), out(dv, s.dv.c),
                       s.dv.c.strides[2], s.dv.c.dims[2], D, s.dv.a.dims[3]);
      for (const StridedMatmul* m : {&s.dq, &s.dk}) {
        const bool rows = m->a.strides[3] == 1 || m->a.dims[3] == 1;
        const HeadOperand a{ds.data(), rows ? m->a.strides[2] : m->a.strides[3], rows};
        Tensor& c = m == &s.dq ? dq : dk;
        matmul_head_bf16(a, operand(m == &s.dq ? dq_b : dk_b, m->b, i, j), out(c, m->c),
                         m->c.strides[2], m->c.dims[2], m->c.dims[3], m->a.dims[3]);
      }
    }
  });
}

}  // namespace

void attention_heads_grad(const Tensor& dv_a, const Tensor& dv_b, const Tensor& dp_a,
                          const Tensor& dp_b, const Tensor& y, const Tensor& dq_b,
                          const Tensor& dk_b, Tensor& dv, Tensor& dq, Tensor& dk,
                          const AttentionGradViews& s, std::unique_ptr<KernelPrepared>* slot) {
  const std::vector<int64_t>& d = s.dp.c.dims;
  const int64_t A = d.empty() ? 0 : d[0];
  MYCEL_CHECK(d.size() == 4 && four_d(s.dv, A) && four_d(s.dp, A) && four_d(s.dq, A) &&
                  four_d(s.dk, A) && s.dp.c.strides[3] == 1 && s.dp.c.strides[2] == d[3] &&
                  s.dp.c.strides[1] == d[2] * d[3] && s.dp.c.strides[0] == d[1] * d[2] * d[3] &&
                  y.numel() == A * s.dp.c.strides[0] && y.dtype() == DType::bfloat16 &&
                  s.dq.a.strides[0] == s.dp.c.strides[0] && s.dk.a.strides[0] == s.dp.c.strides[0],
              RuntimeError,
              "[attention_heads_grad] expects 4-d views of one first dim, dS plain and P of its "
              "shape");
  if (A == 0) return;
  const int64_t per_entry = s.dp.c.strides[0];  // dS's (and P's) elements a first-dim entry
  const int64_t rows_per = d[1] * d[2], len = d[3];
  std::unique_ptr<GradPrepared> local;
  GradPrepared& p = prepared_state<GradPrepared>(
      slot, local, [&](const GradPrepared& q) { return q.threads == num_threads(); },
      [&] {
        auto q = std::make_unique<GradPrepared>();
        q->threads = num_threads();
        q->own = y.dtype() == DType::bfloat16 && matmul_heads_bf16_available();
        for (const StridedMatmul* m : {&s.dv, &s.dp, &s.dq, &s.dk})
          q->own = q->own && matmul_heads_bf16_fits(*m, true);
        const char* kb = std::getenv("MYCEL_ATTENTION_BLOCK_KB");  // block size experiments
        const int64_t bytes = kb ? std::atoll(kb) * 1024 : kBlockBytes;
        const int64_t share = (A + q->threads - 1) / q->threads;
        q->per =
            std::clamp<int64_t>(std::min(share, bytes / std::max<int64_t>(4 * per_entry, 1)), 1, A);
        q->slots.resize(static_cast<size_t>(4 * ((A + q->per - 1) / q->per)));
        return q;
      });
  if (p.own) return by_heads(dv_a, dv_b, dp_a, dp_b, y, dq_b, dk_b, dv, dq, dk, s);
  // Else (heads past matmul_heads_bf16's sizes): blocks of whole entries, matmul_strided each.
  const int64_t per = p.per, blocks = static_cast<int64_t>(p.slots.size()) / 4;
  auto block = [&](int64_t i) {
    const int64_t i0 = i * per, n = std::min(per, A - i0);
    // This thread's dS: it only grows, so warm launches allocate nothing.
    thread_local Tensor ds;
    if (!ds.defined() || ds.numel() < per * per_entry)
      ds = Tensor::empty(Shape{per * per_entry}, DType::bfloat16);
    std::unique_ptr<KernelPrepared>* sl = &p.slots[static_cast<size_t>(4 * i)];
    auto sub = [&](const StridedMatmul& m) {
      return StridedMatmul{sub_dims(m.a, n), sub_dims(m.b, n), sub_dims(m.c, n)};
    };
    const StridedMatmul v = sub(s.dv), pp = sub(s.dp), q = sub(s.dq), k = sub(s.dk);
    {
      Tensor c = sub_tensor(dv, s.dv.c, i0, n);
      matmul_strided(sub_tensor(dv_a, s.dv.a, i0, n), sub_tensor(dv_b, s.dv.b, i0, n), c, v, sl);
    }
    matmul_strided(sub_tensor(dp_a, s.dp.a, i0, n), sub_tensor(dp_b, s.dp.b, i0, n), ds, pp,
                   sl + 1);
    uint16_t* g = ds.data<uint16_t>();
    softmax_grad_bf16_rows(y.data<uint16_t>() + i0 * per_entry, g, g, 0, n * rows_per, len);
    {
      Tensor c = sub_tensor(dq, s.dq.c, i0, n);
      matmul_strided(ds, sub_tensor(dq_b, s.dq.b, i0, n), c, q, sl + 2);
    }
    Tensor c = sub_tensor(dk, s.dk.c, i0, n);
    matmul_strided(ds, sub_tensor(dk_b, s.dk.b, i0, n), c, k, sl + 3);
  };
  blocks_on_threads(blocks, block);
}

namespace {

struct FwdPrepared : KernelPrepared {
  int threads = 0;
  bool own = false;
  std::unique_ptr<KernelPrepared> scores, out;  // the unfused kernels' states
};

struct SoftmaxCtx {
  uint16_t* c;
  int64_t n;
};

void softmax_rows(void* x, int64_t r0, int64_t r1) {
  const auto& c = *static_cast<const SoftmaxCtx*>(x);
  softmax_bf16_rows(c.c, c.c, r0, r1, c.n);
}

}  // namespace

void attention_heads_fwd(const Tensor& q, const Tensor& kt, const Tensor& v, Tensor& p, Tensor& o,
                         const StridedMatmul& scores, const StridedMatmul& out,
                         std::unique_ptr<KernelPrepared>* slot) {
  const std::vector<int64_t>& d = scores.c.dims;
  const int64_t A = d.empty() ? 0 : d[0];
  MYCEL_CHECK(d.size() == 4 && four_d(scores, A) && four_d(out, A) && scores.c.strides[3] == 1 &&
                  scores.c.strides[2] == d[3] && scores.c.strides[1] == d[2] * d[3] &&
                  scores.c.strides[0] == d[1] * d[2] * d[3] && p.numel() == A * scores.c.strides[0],
              RuntimeError, "[attention_heads_fwd] expects 4-d views of one first dim, P plain");
  if (A == 0) return;
  std::unique_ptr<FwdPrepared> local;
  FwdPrepared& st = prepared_state<FwdPrepared>(
      slot, local, [&](const FwdPrepared& x) { return x.threads == num_threads(); },
      [&] {
        auto x = std::make_unique<FwdPrepared>();
        x->threads = num_threads();
        x->own = p.dtype() == DType::bfloat16 && matmul_heads_bf16_available() &&
                 matmul_heads_bf16_fits(scores, true) && matmul_heads_bf16_fits(out, true);
        return x;
      });
  const int64_t C = d[1], L = d[2], S = d[3], Dh = scores.a.dims[3], Dv = out.c.dims[3];
  if (!st.own) {
    SoftmaxCtx ctx{p.data<uint16_t>(), S};
    matmul_strided_then(q, kt, p, scores, softmax_rows, &ctx, &st.scores);
    matmul_strided(p, v, o, out, &st.out);
    return;
  }
  parallel_for(A * C, L * S * (Dh + Dv), [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t i = h / C, j = h % C;
      uint16_t* ph = p.data<uint16_t>() + i * scores.c.strides[0] + j * scores.c.strides[1];
      matmul_head_bf16(operand(q, scores.a, i, j), operand(kt, scores.b, i, j), ph, S, L, S, Dh);
      softmax_bf16_rows(ph, ph, 0, L, S);
      matmul_head_bf16(operand(p, out.a, i, j), operand(v, out.b, i, j),
                       o.data<uint16_t>() + i * out.c.strides[0] + j * out.c.strides[1],
                       out.c.strides[2], out.c.dims[2], Dv, out.a.dims[3]);
    }
  });
}

}  // namespace mycel::cpu
