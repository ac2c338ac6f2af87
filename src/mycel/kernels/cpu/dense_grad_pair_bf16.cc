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

// One thread's share of one stage: rows [r0, r1) in blocks of `block` rows and a last shorter one
// (`tail`), each a prepared call (arguments dy, W, dx at args[0..2]).
struct Part {
  PreparedExec full, tail;
  int args[3] = {-1, -1, -1};
  std::shared_ptr<BlockEntry> full_e, tail_e;  // keep the primitives alive
};

struct Stage {
  int64_t O = 0, I = 0;
  std::vector<Part> parts;     // one a thread
  std::vector<float> partial;  // threads x (O x I): each thread's float32 share of dW
  std::vector<float> sums;     // threads x O: each thread's column sums of dy
};

struct PairPrepared : KernelPrepared {
  int threads = 0;
  int64_t block = 0, rows = 0;
  std::vector<Shape> shapes;  // dy's, then each stage's W
  std::vector<int64_t> r0;    // threads + 1 row bounds
  std::vector<Stage> stages;
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

std::unique_ptr<PairPrepared> prepare(std::vector<Shape> shapes, int64_t R) {
  auto p = std::make_unique<PairPrepared>();
  p->threads = num_threads();
  p->block = dense_grad_pair_rows();
  p->rows = R;
  p->shapes = std::move(shapes);
  const int T = p->threads;
  for (int t = 0; t <= T; ++t) p->r0.push_back(R * t / T);
  for (size_t k = 1; k < p->shapes.size(); ++k) {
    Stage& st = p->stages.emplace_back();
    st.O = p->shapes[k][0];
    st.I = p->shapes[k][1];
    auto entry = [&](int64_t m) {
      return cached<BlockEntry>(key("dense_grad_pair_block", m, st.O, st.I),
                                [&] { return build_block(m, st.O, st.I); });
    };
    for (int t = 0; t < T; ++t) {
      Part& q = st.parts.emplace_back();
      const int64_t n = p->r0[t + 1] - p->r0[t], full = std::min(n, p->block), tail = n % p->block;
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
    st.partial.resize(static_cast<size_t>(T * st.O * st.I));
    st.sums.resize(static_cast<size_t>(T * st.O));
  }
  return p;
}

}  // namespace

bool dense_grad_pair_available() { return matmul_bf16_atb_available(); }

// 256 rows: dy's, x's and dx's blocks (at most 256 KiB each for 512 columns) stay in a Zen 4
// core's 1 MiB L2 beside the float32 partial. In the transformer's O2 step (alternating A/B) 512
// did the same and 128 was 10-35 us slower a FFN launch; prefetching the next block's rows of dy
// and x from the last K block of matmul_bf16_atb gained nothing (the x and dy the unfused
// launches read cold cost less than expected: a FFN pair is within ~5% of both kernels' hot speed).
int64_t dense_grad_pair_rows() {
  const char* v = std::getenv("MYCEL_DENSE_GRAD_PAIR_ROWS");
  const long n = v && *v ? std::strtol(v, nullptr, 10) : 256;
  return n >= 16 ? n : 256;
}

void dense_grad_pair_bf16(const Tensor& dy, const Tensor& w, const Tensor& x,
                          const MaskOperands* mask, Tensor& dx, Tensor& dw, Tensor* db,
                          std::unique_ptr<KernelPrepared>* slot) {
  const DenseGradStage st{&dy, &w, &x, mask, &dx, &dw, db};
  dense_grad_chain_bf16(&st, 1, slot);
}

void dense_grad_chain_bf16(const DenseGradStage* st, int n, std::unique_ptr<KernelPrepared>* slot) {
  MYCEL_CHECK(n >= 1 && st[0].dy, RuntimeError, "[dense_grad_pair] expects a first stage's dy");
  const Tensor& dy = *st[0].dy;
  std::vector<Shape> shapes = {dy.shape()};
  int64_t R = 0, work = 0;
  for (int k = 0; k < n; ++k) {
    const Tensor &w = *st[k].w, &x = *st[k].x, &dx = *st[k].dx, &dw = *st[k].dw;
    const Tensor& d = k == 0 ? dy : *st[k - 1].dx;
    const Tensor* db = st[k].db;
    const Shape& ws = w.shape();
    const int64_t O = ws.size() == 2 ? ws[0] : 0, I = ws.size() == 2 ? ws[1] : 0;
    MYCEL_CHECK(
        O > 0 && I > 0 && d.numel() % O == 0 && d.numel() / O * I == x.numel() &&
            dx.numel() == x.numel() && dw.numel() == w.numel() && (!db || db->numel() == O) &&
            (k > 0 ? st[k - 1].w->shape()[1] == O : d.shape().size() >= 2 && d.shape().back() == O),
        RuntimeError,
        "[dense_grad_pair] expects dy (..., O), W (O, I) and x of the same rows of I, "
        "given dy ",
        shape_str(d.shape()), ", W ", shape_str(ws), ", x ", shape_str(x.shape()));
    for (const Tensor* t : {&d, &w, &x, &dx, &dw, db})
      MYCEL_CHECK(!t || t->dtype() == DType::bfloat16, RuntimeError,
                  "[dense_grad_pair] expects bfloat16 operands, given ", dtype_name(t->dtype()));
    if (k == 0) R = d.numel() / O;
    work += 2 * R * O * I;
    shapes.push_back(ws);
  }
  MYCEL_CHECK(dense_grad_pair_available(), RuntimeError,
              "[dense_grad_pair] needs AVX512-BF16 (matmul_bf16_atb)");
  const SerialScope threads(work);
  std::unique_ptr<PairPrepared> local;
  PairPrepared& p = prepared_state<PairPrepared>(
      slot, local,
      [&](const PairPrepared& q) { return q.threads == num_threads() && q.shapes == shapes; },
      [&] { return prepare(shapes, R); });
  MYCEL_CHECK(p.ok, RuntimeError, "[dense_grad_pair] oneDNN has no bfloat16 matmul on this CPU");
  const int T = p.threads;
#pragma omp parallel num_threads(T)
  {
    const int id = omp_get_thread_num(), got = omp_get_num_threads();
    for (int t = id; t < T; t += got) {
      const int64_t r0 = p.r0[t], r1 = p.r0[t + 1];
      for (int k = 0; k < n; ++k)
        if (r0 == r1) {
          Stage& g = p.stages[k];
          std::fill_n(g.partial.data() + t * g.O * g.I, g.O * g.I, 0.0f);
          std::fill_n(g.sums.data() + t * g.O, g.O, 0.0f);
        }
      for (int64_t r = r0; r < r1; r += p.block) {
        const int64_t m = std::min(p.block, r1 - r);
        // Stage by stage on the same rows: a stage's dy is the previous one's dx, just written.
        for (int k = 0; k < n; ++k) {
          Stage& g = p.stages[k];
          Part& q = g.parts[t];
          const int64_t O = g.O, I = g.I;
          const uint16_t* D = (k == 0 ? *st[0].dy : *st[k - 1].dx).data<uint16_t>();
          uint16_t* DX = st[k].dx->data<uint16_t>();
          PreparedExec& e = m == p.block || !q.tail.defined() ? q.full : q.tail;
          e.set(q.args[0], D + r * O);
          e.set(q.args[1], st[k].w->data());
          e.set(q.args[2], DX + r * I);
          e.run();
          stream().wait();
          if (st[k].mask) bf16_mask_product(*st[k].mask, DX, DX, r * I, (r + m) * I);
          // dW += dy_r^T x_r (and the column sums of dy_r) while dy_r is in this core's L2.
          matmul_bf16_atb(D + r * O, O, st[k].x->data<uint16_t>() + r * I, I, m, O, I,
                          g.partial.data() + t * O * I, I,
                          st[k].db ? g.sums.data() + t * O : nullptr, true, r > r0);
        }
      }
    }
#pragma omp barrier
    for (int k = 0; k < n; ++k) {
      Stage& g = p.stages[k];
      const int64_t numel = g.O * g.I, i0 = numel * id / got, i1 = numel * (id + 1) / got;
      bf16_sum_round_partials(g.partial.data(), T, numel, i0, i1, st[k].dw->data<uint16_t>());
      if (st[k].db && id == (k % got)) {
        uint16_t* o = st[k].db->data<uint16_t>();
        const float* sums = g.sums.data();
        for (int64_t j = 0; j < g.O; ++j) {
          float a = sums[j];
          for (int u = 1; u < T; ++u) a += sums[u * g.O + j];
          o[j] = bf16_round_bits(a);
        }
      }
    }
  }
}

}  // namespace mycel::cpu
