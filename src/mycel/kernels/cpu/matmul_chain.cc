#include "mycel/kernels/cpu/matmul_chain.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "mycel/core/error.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_plain_matmul.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/momentum_lanes.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

// A row tile of the product is at most this large (Zen 4's L2 is 1 MiB): the MLP's dW1
// (512 x 784) and dW2 (512 x 512) run as one tile per thread. Smaller tiles repack op(b) per
// tile: with 256 KiB tiles (8 and 4 tiles) and 128 KiB (16 and 8) the MLP step's dW1 + update
// took 5-10% longer than with one tile per thread (docs/perf_mlp.md).
constexpr int64_t kTileBytes = int64_t(1) << 20;
// Tiles narrower than this leave oneDNN's kernel too little to block on: the unfused path.
constexpr int64_t kMinTileRows = 16;
constexpr int kMaxInputs = 16, kMaxOutputs = 8;
// As in dnnl_matmul.cc: an operand whose stored rows run along the output with a row of a
// multiple of 2 KiB is copied into rows 64 bytes longer where oneDNN runs its AVX2 sgemm
// (pad_power_of_two_rows: its packing otherwise loads a panel from a few L1 sets and runs at
// 40-65% of its speed).
constexpr int64_t kConflictBytes = 2048, kPadFloats = 16;

int64_t padded_ld(int64_t rows, int64_t cols, bool along_output) {
  if (!along_output || rows < 16 || (cols * 4) % kConflictBytes != 0 || !pad_power_of_two_rows())
    return cols;
  return cols + kPadFloats;
}

struct ChainEntry : PlainMatmulEntry {
  int64_t m = 0, k = 0, n = 0, tiles = 0, rows = 0;
  int64_t lda = 0, ldb = 0;  // row strides of the operands as oneDNN reads them (padded or not)
};

std::shared_ptr<ChainEntry> build(int64_t M, int64_t K, int64_t N, bool ta, bool tb, int nt) {
  auto e = std::make_shared<ChainEntry>();
  e->m = M, e->k = K, e->n = N;
  const int64_t per = std::max<int64_t>(1, (M * N * 4 + nt * kTileBytes - 1) / (nt * kTileBytes));
  for (int64_t t = nt * per; t * kMinTileRows <= M; ++t)
    if (M % t == 0) {
      e->tiles = t;
      break;
    }
  if (e->tiles == 0) {
    e->ok = false;
    return e;
  }
  e->rows = M / e->tiles;
  const int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
  e->lda = padded_ld(ar, ac, ta);
  e->ldb = padded_ld(br, bc, !tb);
  const auto f32 = memory::data_type::f32;
  // One tile: rows [m0, m0 + rows) of op(a) (a's pointer moves per tile), all of op(b).
  e->a_md = memory::desc({e->rows, K}, f32, ta ? memory::dims{1, e->lda} : memory::dims{e->lda, 1});
  e->b_md = memory::desc({K, N}, f32, tb ? memory::dims{1, e->ldb} : memory::dims{e->ldb, 1});
  e->c_md = memory::desc({e->rows, N}, f32, memory::dims{N, 1});
  const SerialScope one(0);  // built for the one thread that runs each tile
  e->build_primitive();
  return e;
}

struct ChainPrepared : KernelPrepared {
  Shape a_shape, b_shape;
  int threads = 0;
  std::shared_ptr<ChainEntry> e;
  std::vector<PreparedExec> exec;  // one per thread: its own argument memories
  int arg_a = -1, arg_b = -1, arg_c = -1;
  MomentumLanes lanes;  // momentum's chain, matched when the launch is prepared
};

// The buffer (this thread's `which`) that operand t's rows of ld elements are copied into, or
// null when t is read in place (ld == cols). The copy itself runs in the launch's parallel
// region (copy_rows for b, copy_tile for a tile's rows of op(a)), not in a region of its own.
float* pad_buffer(int64_t rows, int64_t cols, int64_t ld, int which) {
  if (ld == cols) return nullptr;
  thread_local std::vector<float> buf[2];
  const size_t need = static_cast<size_t>(rows * ld) + 16;
  if (buf[which].size() < need) buf[which].resize(need);
  float* dst = buf[which].data();
  return dst + (16 - reinterpret_cast<uintptr_t>(dst) / 4 % 16) % 16;  // 64-byte aligned
}

// Rows [r0, r1) of t into dst with rows of ld elements.
void copy_rows(const Tensor& t, float* dst, int64_t ld, int64_t r0, int64_t r1) {
  const int64_t cols = t.shape()[1];
  const float* src = t.data<float>();
  for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + r * ld, src + r * cols, cols * 4);
}

// Rows [m0, m0 + rows) of op(t) into dst with rows of ld elements: columns of t stored
// transposed, else rows.
void copy_tile(const Tensor& t, float* dst, int64_t ld, bool trans, int64_t m0, int64_t rows) {
  if (!trans) return copy_rows(t, dst, ld, m0, m0 + rows);
  const int64_t K = t.shape()[0], cols = t.shape()[1];
  const float* src = t.data<float>();
  for (int64_t r = 0; r < K; ++r) std::memcpy(dst + r * ld + m0, src + r * cols + m0, rows * 4);
}

// The matmul into a temporary, then the chain: shapes the tiles do not fit.
void unfused(const Tensor& a, const Tensor& b, const std::vector<Tensor>& inputs,
             const MatmulChain& ch, const std::vector<Tensor>& outs, int64_t M, int64_t K,
             int64_t N) {
  MatmulGeom g;
  g.m = M, g.k = K, g.n = N, g.trans_a = ch.trans_a, g.trans_b = ch.trans_b;
  g.out_shape = {M, N};
  Tensor c = Tensor::empty({M, N}, DType::float32);
  matmul_dnnl(a, b, nullptr, c, g);
  std::vector<Tensor> ins = inputs;
  ins[ch.product_slot] = c;
  run_fused_elementwise(ch.prog, ins, ch.out_steps, outs);
}

}  // namespace

void matmul_chain(const Tensor& a, const Tensor& b, const std::vector<Tensor>& inputs,
                  const MatmulChain& ch, const std::vector<Tensor>& outs,
                  std::unique_ptr<KernelPrepared>* slot) {
  MYCEL_CHECK(a.ndim() == 2 && b.ndim() == 2, RuntimeError,
              "[matmul_chain] takes 2-d operands, got ", a.ndim(), "-d and ", b.ndim(), "-d");
  const int64_t M = ch.trans_a ? a.shape()[1] : a.shape()[0],
                K = ch.trans_a ? a.shape()[0] : a.shape()[1],
                N = ch.trans_b ? b.shape()[0] : b.shape()[1];
  const int64_t n = M * N;
  const int ni = ch.prog.num_inputs, nout = static_cast<int>(outs.size());
  bool tileable = ni <= kMaxInputs && nout <= kMaxOutputs && K > 0;
  for (int k = 0; k < ni; ++k)
    if (k != ch.product_slot && inputs[k].numel() != n && inputs[k].numel() != 1) tileable = false;
  const int nt = num_threads();
  std::unique_ptr<ChainPrepared> local;
  ChainPrepared* p = nullptr;
  if (tileable) {
    p = &prepared_state<ChainPrepared>(
        slot, local,
        [&](const ChainPrepared& q) {
          return q.threads == nt && q.a_shape == a.shape() && q.b_shape == b.shape();
        },
        [&] {
          auto q = std::make_unique<ChainPrepared>();
          q->a_shape = a.shape();
          q->b_shape = b.shape();
          q->threads = nt;
          char fl[kMaxInputs];
          for (int k = 0; k < ni; ++k) fl[k] = k == ch.product_slot || inputs[k].numel() == n;
          q->lanes = match_momentum(ch.prog, fl, nout, ch.out_steps.data());
          q->e = cached<ChainEntry>(key("matmul_chain", M, K, N, ch.trans_a, ch.trans_b, nt),
                                    [&] { return build(M, K, N, ch.trans_a, ch.trans_b, nt); });
          if (q->e->ok)
            for (int t = 0; t < nt; ++t) {
              q->exec.emplace_back(q->e->prim, &q->e->pd);
              q->arg_a = q->exec.back().add(DNNL_ARG_SRC, q->e->a_md);
              q->arg_b = q->exec.back().add(DNNL_ARG_WEIGHTS, q->e->b_md);
              q->arg_c = q->exec.back().add(DNNL_ARG_DST, q->e->c_md);
            }
          return q;
        });
  }
  if (!p || !p->e->ok) return unfused(a, b, inputs, ch, outs, M, K, N);
  ChainEntry& e = *p->e;
  float* a_pad = pad_buffer(a.shape()[0], a.shape()[1], e.lda, 0);
  float* b_pad = pad_buffer(b.shape()[0], b.shape()[1], e.ldb, 1);
  const float* pa = a_pad ? a_pad : a.data<float>();
  const float* pb = b_pad ? b_pad : b.data<float>();
  // A tile's first element of op(a): row m0 of op(a) is column m0 of a stored transposed.
  const int64_t a_step = ch.trans_a ? e.rows : e.rows * e.lda;
  // The match holds for these inputs (graph mode's launch keeps its shapes; checked anyway).
  const MomentumLanes& mk = p->lanes;
  const bool lanes = mk.ok && inputs[mk.m].numel() == 1 && inputs[mk.lr].numel() == 1 &&
                     (mk.v == ch.product_slot || inputs[mk.v].numel() == n) &&
                     (mk.w == ch.product_slot || inputs[mk.w].numel() == n) &&
                     (mk.g == ch.product_slot || inputs[mk.g].numel() == n);
  float* outp[kMaxOutputs];
  for (int j = 0; j < nout; ++j) outp[j] = outs[j].data<float>();
#pragma omp parallel num_threads(nt)
  {
    const int id = omp_get_thread_num(), got = omp_get_num_threads();
    if (b_pad) {  // each thread copies its share of b's rows, then all read all of them
      const int64_t rows = b.shape()[0];
      copy_rows(b, b_pad, e.ldb, rows * id / got, rows * (id + 1) / got);
#pragma omp barrier
    }
    thread_local std::vector<float> tile;
    if (tile.size() < static_cast<size_t>(e.rows * N)) tile.resize(static_cast<size_t>(e.rows * N));
    PreparedExec& x = p->exec[id];
    x.set(p->arg_b, pb);
    x.set(p->arg_c, tile.data());
    const float* base[kMaxInputs];
    char full[kMaxInputs];
    float* dst[kMaxOutputs];
    for (int64_t t = id; t < e.tiles; t += got) {
      const int64_t start = t * e.rows * N;
      // A tile reads only its own rows of op(a): the thread copies them (no barrier), and a dy
      // whose bias-gradient pass split its columns alike (ordered_reduce.h) is in this core's
      // cache.
      if (a_pad) copy_tile(a, a_pad, e.lda, ch.trans_a, t * e.rows, e.rows);
      x.set(p->arg_a, pa + t * a_step);
      x.run();
      stream().wait();
      for (int k = 0; k < ni; ++k) {
        full[k] = k == ch.product_slot || inputs[k].numel() == n;
        base[k] = k == ch.product_slot ? tile.data()
                  : full[k]            ? inputs[k].data<float>() + start
                                       : inputs[k].data<float>();
      }
      for (int j = 0; j < nout; ++j) dst[j] = outp[j] + start;
      // Momentum's update (nn.Momentum's chain) as one register loop, 1.6-1.8x faster than the
      // interpreter's block passes here at low load (docs/perf_mlp.md, perf39); others interpreted.
      if (lanes)
        run_momentum_lanes(p->lanes, base, e.rows * N, dst);
      else
        run_fused_elementwise_ptrs(ch.prog, base, full, e.rows * N, nout, ch.out_steps.data(), dst);
    }
  }
}

}  // namespace mycel::cpu
