#include "mycel/kernels/cpu/dense_grad_pair_bf16.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/bf16_round_row.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/matmul_bf16_atb.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

// dx's product on one block of m rows, for the one thread that runs it: dy (m, O) W (O, I).
struct BlockEntry : Entry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_md, b_md, c_md;
};

std::shared_ptr<BlockEntry> build_block(int64_t m, int64_t O, int64_t I) {
  auto e = std::make_shared<BlockEntry>();
  const auto dt = memory::data_type::bf16;
  e->a_md = memory::desc({m, O}, dt, {O, 1});
  e->b_md = memory::desc({O, I}, dt, {I, 1});
  e->c_md = memory::desc({m, I}, dt, {I, 1});
  try {
    const SerialScope one(0);  // built for the one thread that runs it
    e->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md),
                                         default_attr(), engine());
    e->prim = dnnl::matmul(e->pd);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

// One thread's share: rows [r0, r1) in blocks of `block` rows and a last shorter one (`tail`),
// each a prepared call (arguments dy, W, dx at args[0..2]).
struct Part {
  int64_t r0 = 0, r1 = 0;
  PreparedExec full, tail;
  int args[3] = {-1, -1, -1};
  std::shared_ptr<BlockEntry> full_e, tail_e;  // keep the primitives alive
};

struct PairPrepared : KernelPrepared {
  int threads = 0;
  int64_t block = 0;
  Shape dy_shape, w_shape;
  std::vector<Part> parts;
  std::vector<float> partial;  // threads x (O x I): each thread's float32 share of dW
  std::vector<float> sums;     // threads x O: each thread's column sums of dy
  bool ok = true;
};

// The arguments' indices are the same in every call (the scratchpad's first).
PreparedExec exec_for(const std::shared_ptr<BlockEntry>& e, int* args) {
  PreparedExec x(e->prim, &e->pd);
  args[0] = x.add(DNNL_ARG_SRC, e->a_md);
  args[1] = x.add(DNNL_ARG_WEIGHTS, e->b_md);
  args[2] = x.add(DNNL_ARG_DST, e->c_md);
  return x;
}

std::unique_ptr<PairPrepared> prepare(const Shape& dy_shape, const Shape& w_shape, int64_t R,
                                      int64_t O, int64_t I) {
  auto p = std::make_unique<PairPrepared>();
  p->threads = num_threads();
  p->block = dense_grad_pair_rows();
  p->dy_shape = dy_shape;
  p->w_shape = w_shape;
  const int T = p->threads;
  auto entry = [&](int64_t m) {
    return cached<BlockEntry>(key("dense_grad_pair_block", m, O, I),
                              [&] { return build_block(m, O, I); });
  };
  for (int t = 0; t < T; ++t) {
    Part& q = p->parts.emplace_back();
    q.r0 = R * t / T;
    q.r1 = R * (t + 1) / T;
    const int64_t n = q.r1 - q.r0, full = std::min(n, p->block), tail = n % p->block;
    if (full > 0) {
      q.full_e = entry(full);
      p->ok = p->ok && q.full_e->ok;
      if (q.full_e->ok) q.full = exec_for(q.full_e, q.args);
    }
    if (tail > 0 && n > p->block) {
      q.tail_e = entry(tail);
      p->ok = p->ok && q.tail_e->ok;
      if (q.tail_e->ok) q.tail = exec_for(q.tail_e, q.args);
    }
  }
  p->partial.resize(static_cast<size_t>(T * O * I));
  p->sums.resize(static_cast<size_t>(T * O));
  return p;
}

// dst[i] = the bf16 rounding of the sum of the T partials (numel apart) at i, i0 <= i < i1, added
// in the partials' order (as dnnl_matmul.cc's split-K sum), in blocks so the rounding vectorizes.
void sum_round(const float* q, int T, int64_t numel, int64_t i0, int64_t i1, uint16_t* dst) {
  constexpr int64_t kBlock = 512;
  alignas(64) float acc[kBlock];
  for (int64_t b = i0; b < i1; b += kBlock) {
    const int64_t n = std::min(kBlock, i1 - b);
    std::memcpy(acc, q + b, static_cast<size_t>(n) * sizeof(float));
    for (int u = 1; u < T; ++u) {
      const float* qu = q + u * numel + b;
      for (int64_t j = 0; j < n; ++j) acc[j] += qu[j];
    }
    bf16_round_row(acc, dst + b, n);
  }
}

}  // namespace

bool dense_grad_pair_available() { return matmul_bf16_atb_available(); }

int64_t dense_grad_pair_rows() {
  const char* v = std::getenv("MYCEL_DENSE_GRAD_PAIR_ROWS");
  const long n = v && *v ? std::strtol(v, nullptr, 10) : 256;
  return n >= 16 ? n : 256;
}

void dense_grad_pair_bf16(const Tensor& dy, const Tensor& w, const Tensor& x,
                          const MaskOperands* mask, Tensor& dx, Tensor& dw, Tensor* db,
                          std::unique_ptr<KernelPrepared>* slot) {
  const Shape& ws = w.shape();
  const int64_t O = ws.size() == 2 ? ws[0] : 0, I = ws.size() == 2 ? ws[1] : 0;
  MYCEL_CHECK(O > 0 && I > 0 && dy.shape().size() >= 2 && dy.shape().back() == O &&
                  dy.numel() / O * I == x.numel() && dx.numel() == x.numel() &&
                  dw.numel() == w.numel() && (!db || db->numel() == O),
              RuntimeError,
              "[dense_grad_pair] expects dy (..., O), W (O, I) and x of the same rows of I, "
              "given dy ",
              shape_str(dy.shape()), ", W ", shape_str(ws), ", x ", shape_str(x.shape()));
  for (const Tensor* t : {&dy, &w, &x, static_cast<const Tensor*>(&dx),
                          static_cast<const Tensor*>(&dw), static_cast<const Tensor*>(db)})
    MYCEL_CHECK(!t || t->dtype() == DType::bfloat16, RuntimeError,
                "[dense_grad_pair] expects bfloat16 operands, given ", dtype_name(t->dtype()));
  MYCEL_CHECK(dense_grad_pair_available(), RuntimeError,
              "[dense_grad_pair] needs AVX512-BF16 (matmul_bf16_atb)");
  const int64_t R = x.numel() / I;
  const SerialScope threads(2 * R * O * I);
  std::unique_ptr<PairPrepared> local;
  PairPrepared& p = prepared_state<PairPrepared>(
      slot, local,
      [&](const PairPrepared& q) {
        return q.threads == num_threads() && q.dy_shape == dy.shape() && q.w_shape == ws;
      },
      [&] { return prepare(dy.shape(), ws, R, O, I); });
  MYCEL_CHECK(p.ok, RuntimeError, "[dense_grad_pair] oneDNN has no bfloat16 matmul on this CPU");
  const uint16_t* D = dy.data<uint16_t>();
  const uint16_t* X = x.data<uint16_t>();
  const void* Wp = w.data();
  uint16_t* DX = dx.data<uint16_t>();
  const int T = p.threads;
  const int64_t numel = O * I;
  float* partial = p.partial.data();
  float* sums = db ? p.sums.data() : nullptr;
#pragma omp parallel num_threads(T)
  {
    const int id = omp_get_thread_num(), got = omp_get_num_threads();
    for (int t = id; t < T; t += got) {
      Part& q = p.parts[t];
      float* c = partial + t * numel;
      float* s = sums ? sums + t * O : nullptr;
      if (q.r0 == q.r1) {
        std::fill(c, c + numel, 0.0f);
        if (s) std::fill(s, s + O, 0.0f);
      }
      for (int64_t r = q.r0; r < q.r1; r += p.block) {
        const int64_t m = std::min(p.block, q.r1 - r);
        PreparedExec& e = m == p.block || !q.tail.defined() ? q.full : q.tail;
        e.set(q.args[0], D + r * O);
        e.set(q.args[1], Wp);
        e.set(q.args[2], DX + r * I);
        e.run();
        stream().wait();
        if (mask) bf16_mask_product(*mask, DX, DX, r * I, (r + m) * I);
        // dW += dy_r^T x_r (and the column sums of dy_r) while dy_r is in this core's L2.
        matmul_bf16_atb(D + r * O, O, X + r * I, I, m, O, I, c, I, s, true, r > q.r0);
      }
    }
#pragma omp barrier
    const int64_t i0 = numel * id / got, i1 = numel * (id + 1) / got;
    sum_round(partial, T, numel, i0, i1, dw.data<uint16_t>());
    if (sums && id == 0) {
      uint16_t* o = db->data<uint16_t>();
      for (int64_t j = 0; j < O; ++j) {
        float a = sums[j];
        for (int u = 1; u < T; ++u) a += sums[u * O + j];
        o[j] = bf16_round_bits(a);
      }
    }
  }
}

}  // namespace mycel::cpu
