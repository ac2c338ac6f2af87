// matmul and dense on oneDNN's matmul primitive: strides express the transposes, size-1 batch dims
// broadcast, and the bias is a (1, ..., N) tensor.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "mycel/kernels/cpu/bf16_round_row.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_post_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/matmul_bf16_atb.h"
#include "mycel/kernels/cpu/matmul_col_sums.h"
#include "mycel/kernels/cpu/matmul_skinny.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

// oneDNN 2.6's AVX2 sgemm reads an operand whose stored rows run along the output (b not
// transposed: rows of N; a transposed: rows of M) down its columns when it packs it. With a row
// of a multiple of 2 KiB, all loads of one packed panel fall into the same few L1 sets and the
// matmul runs at 40-65% of its speed: 128x512x512 at 57 GFLOP/s on one core against 87 for
// N=520 (bench/bench_matmul_ld.py). Such an operand is copied first (a few % of the matmul's
// time) into a buffer whose rows are 64 bytes longer; what oneDNN sees is only another stride.
constexpr int64_t kConflictBytes = 2048, kPadBytes = 64;
// Larger operands are read in place: the copy's buffer stays with the thread.
constexpr int64_t kMaxPaddedBytes = int64_t(64) << 20;
// A transposed `a` with a long reduction (a weight gradient x^T dy over many rows, no bias or
// post-ops) is split along K: each thread runs a one-thread primitive on its share of the rows
// into its own partial product, and the partials are summed. oneDNN 2.6's own two-thread split
// of these shapes is slower (two cores: 512x2048x128 2.72 -> 2.36 ms, 128x2048x512 2.05 -> 1.79,
// 128x2048x128 0.55 -> 0.43). bfloat16 (amp O2's weight gradients) splits the same way, each
// part into a float32 partial (oneDNN accumulates in float32 too), summed and rounded once.
// Splitting the product's rows (or columns) among the threads instead, each over the whole K,
// ran faster alone (bf16, two threads, hot operands: 512x2048x128 0.88 -> 0.72 ms) but slower in
// the transformer's O2 step (its four FFN weight gradients 0.79-0.84 -> 0.81-0.91 ms, minima):
// there each thread reads the rows of x and dy that it wrote itself, from its own cache.
constexpr int64_t kSplitMinK = 1024;
// A float32 2-d matmul with b not transposed whose `a` fits a core's L2 next to a share of b
// (the MLP's dx = dy W, 128 x 512 x 512) is split along N: each thread runs a one-thread
// primitive on its columns of b and c (a bias and add-row operands sliced alike, where oneDNN has
// a non-reference kernel for that) and reads all of a. In the MLP step dx2 took 1-65 us less at
// the minimum and 15-160 less at the median than on oneDNN's own two-thread split
// (docs/perf_mlp.md, perf27). With b transposed (a Dense layer's forward, W stored out x in) the
// same split was 15-195 us slower than oneDNN's: not taken. MYCEL_MATMUL_SPLIT_N=0 turns it off.
constexpr int64_t kSplitNMaxABytes = int64_t(512) << 10;
constexpr int64_t kSplitNMinCols = 128, kSplitNMinK = 256, kSplitNMinRows = 32;
// ... and at least this many multiply-adds (~70 us on two cores): below, the extra calls'
// preparation in eager mode (a launch without prepared state) is no longer small against it.
constexpr int64_t kSplitNMinWork = int64_t(1) << 23;

// Read when a launch is first prepared (a cache key names it), so that one process can A/B
// two compiled steps (bench/bench_step_env_ab.py).
bool split_n_enabled() {
  const char* v = std::getenv("MYCEL_MATMUL_SPLIT_N");
  return !v || std::strcmp(v, "0") != 0;
}

// The bf16 split's sum of the partials in vector lanes (bf16_sum_round_partials); off
// (MYCEL_MATMUL_SPLIT_SUM=scalar): the one-loop form, for A/B.
bool vector_split_sum() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_MATMUL_SPLIT_SUM");
    return !v || std::strcmp(v, "scalar") != 0;
  }();
  return on;
}

// The row stride (elements) an operand of `cols` elements per row gets, or 0: it is used as is.
int64_t padded_row(int64_t rows, int64_t cols, bool along_output, size_t isz) {
  const int64_t bytes = cols * static_cast<int64_t>(isz);
  if (!along_output || rows < 16 || bytes % kConflictBytes != 0 || !pad_power_of_two_rows())
    return 0;
  return cols + kPadBytes / static_cast<int64_t>(isz);
}

// An operand as oneDNN reads it: its stored rows and columns (a transposed: K rows of M) and the
// row stride of its padded copy (0: none).
struct OperandPad {
  int64_t rows = 0, cols = 0, ld = 0, count = 0;  // count: matrices (its batch)
  size_t elements() const { return static_cast<size_t>(count * rows * ld); }
};

struct MatmulEntry : Entry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_md, b_md, bias_md, c_md, row_md;  // row_md: (1, ..., N), for add-row post-ops
  OperandPad pad_a, pad_b;                         // ld 0: the operand is read in place
  // Split along K (kSplitMinK): a one-thread primitive over K / parts rows, and the strides
  // (elements) between the parts' a and b.
  int parts = 0;
  dnnl::matmul::primitive_desc part_pd;
  dnnl::matmul part_prim;
  memory::desc part_a_md, part_b_md, part_c_md;  // part_c_md: float32 (bf16: every part)
  int64_t part_a_step = 0, part_b_step = 0;
  bool bf16_parts = false;  // bf16 operands: every part writes a float32 partial
  // bf16 parts with b not transposed: each part runs matmul_bf16_atb (own AVX512-BF16 kernel)
  // on its rows, not the one-thread primitive; lda, ldb: the operands' row strides.
  bool atb = false, atb_prefetch = false;
  int64_t atb_lda = 0, atb_ldb = 0;
  // Split along N (kSplitNMaxABytes): a one-thread primitive over N / cols columns; the strides
  // (elements) between the parts' b and c (bias and add-row operands: col_c_step too).
  int cols = 0;
  dnnl::matmul::primitive_desc col_pd;
  dnnl::matmul col_prim;
  memory::desc col_b_md, col_c_md, col_row_md;
  int64_t col_b_step = 0, col_c_step = 0;
};

// Row-major strides of `batch` with matrices of `mat` elements, then the matrix's own strides.
memory::dims strides_for(const Shape& batch, int64_t mat, int64_t s_row, int64_t s_col) {
  memory::dims s(batch.size() + 2);
  int64_t acc = mat;
  for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= batch[d];
  }
  s[batch.size()] = s_row;
  s[batch.size() + 1] = s_col;
  return s;
}

memory::dims dims_of(const Shape& batch, int64_t rows, int64_t cols) {
  memory::dims d(batch.begin(), batch.end());
  d.push_back(rows);
  d.push_back(cols);
  return d;
}

std::shared_ptr<MatmulEntry> build(DType dtype, const MatmulGeom& g, bool has_bias,
                                   const KernelParams* post) {
  auto e = std::make_shared<MatmulEntry>();
  const auto dt = to_dnnl(dtype);
  const size_t isz = itemsize(dtype);
  const int64_t M = g.m, K = g.k, N = g.n;
  // Stored (rows, cols) of a: (K, M) transposed, else (M, K); of b: (N, K) transposed, else (K, N).
  const int64_t ar = g.trans_a ? K : M, ac = g.trans_a ? M : K;
  const int64_t br = g.trans_b ? N : K, bc = g.trans_b ? K : N;
  e->pad_a = {ar, ac, padded_row(ar, ac, g.trans_a, isz), numel(g.a_batch)};
  e->pad_b = {br, bc, padded_row(br, bc, !g.trans_b, isz), numel(g.b_batch)};
  for (OperandPad* o : {&e->pad_a, &e->pad_b})
    if (static_cast<int64_t>(o->elements() * isz) > kMaxPaddedBytes) o->ld = 0;
  const int64_t lda = e->pad_a.ld ? e->pad_a.ld : ac, ldb = e->pad_b.ld ? e->pad_b.ld : bc;
  e->a_md =
      memory::desc(dims_of(g.a_batch, M, K), dt,
                   strides_for(g.a_batch, ar * lda, g.trans_a ? 1 : lda, g.trans_a ? lda : 1));
  e->b_md =
      memory::desc(dims_of(g.b_batch, K, N), dt,
                   strides_for(g.b_batch, br * ldb, g.trans_b ? 1 : ldb, g.trans_b ? ldb : 1));
  e->c_md = memory::desc(dims_of(g.batch, M, N), dt, strides_for(g.batch, M * N, N, 1));
  Shape ones(g.batch.size(), 1);
  e->row_md = memory::desc(dims_of(ones, 1, N), dt, strides_for(ones, N, N, 1));
  if (has_bias) e->bias_md = e->row_md;
  try {
    dnnl::primitive_attr attr = default_attr();
    append_post_ops(attr, post, e->row_md);
    dnnl::matmul::desc d = has_bias ? dnnl::matmul::desc(e->a_md, e->b_md, e->bias_md, e->c_md)
                                    : dnnl::matmul::desc(e->a_md, e->b_md, e->c_md);
    e->pd = dnnl::matmul::primitive_desc(d, attr, engine());
    e->prim = dnnl::matmul(e->pd);
    const int nt = num_threads();
    if (g.trans_a && K >= kSplitMinK && nt > 1 && K % nt == 0 && !has_bias &&
        (!post || post->post_ops.empty()) && g.batch.empty() && g.a_batch.empty() &&
        g.b_batch.empty() && (dtype == DType::float32 || dtype == DType::bfloat16)) {
      const int64_t Kp = K / nt;
      e->part_a_md = memory::desc({M, Kp}, dt, {1, lda});
      e->part_b_md =
          g.trans_b ? memory::desc({Kp, N}, dt, {1, ldb}) : memory::desc({Kp, N}, dt, {ldb, 1});
      e->part_a_step = Kp * lda;
      e->part_b_step = g.trans_b ? Kp : Kp * ldb;
      e->bf16_parts = dtype == DType::bfloat16;
      // Taken where it was faster: in the transformer's O2 step (two threads, alternating A/B,
      // launch minima) the eight 128x128 (K 2048) went 1693-1708 -> 1533-1553 us (medians
      // 4111-4196 -> 3871-3889), the two 512x128 780-816 -> 726-776; one core, hot operands
      // (bench/bench_matmul_atb.cc, K 1024): 128x128 158-166 against oneDNN's 162 us, 512x128
      // 649-650 against 639, 128x512 657-660 against 621: not taken where N > M (in the step
      // within the A/B's noise there).
      e->atb = e->bf16_parts && !g.trans_b && N <= M && matmul_bf16_atb_available();
      e->atb_prefetch = matmul_bf16_atb_prefetch();
      e->atb_lda = lda;
      e->atb_ldb = ldb;
      e->part_c_md = memory::desc({M, N}, memory::data_type::f32, {N, 1});
      const SerialScope one(0);  // built for the one thread that runs it
      e->part_pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(e->part_a_md, e->part_b_md, e->part_c_md), default_attr(), engine());
      e->part_prim = dnnl::matmul(e->part_pd);
      e->parts = nt;
    }
    const int64_t Np = N / std::max(nt, 1);
    if (!e->parts && !g.trans_b && split_n_enabled() && dtype == DType::float32 && nt > 1 &&
        g.batch.empty() && g.a_batch.empty() && g.b_batch.empty() && N % nt == 0 && Np % 16 == 0 &&
        Np >= kSplitNMinCols && K >= kSplitNMinK && M >= kSplitNMinRows &&
        M * K * static_cast<int64_t>(isz) <= kSplitNMaxABytes && M * K * N >= kSplitNMinWork) {
      e->col_b_md = memory::desc({K, Np}, dt, {ldb, 1});
      e->col_c_md = memory::desc({M, Np}, dt, {N, 1});
      e->col_row_md = memory::desc({1, Np}, dt, {Np, 1});
      e->col_b_step = Np;
      e->col_c_step = Np;
      dnnl::primitive_attr cattr = default_attr();
      append_post_ops(cattr, post, e->col_row_md);
      const SerialScope one(0);  // built for the one thread that runs it
      dnnl::matmul::desc d =
          has_bias ? dnnl::matmul::desc(e->a_md, e->col_b_md, e->col_row_md, e->col_c_md)
                   : dnnl::matmul::desc(e->a_md, e->col_b_md, e->col_c_md);
      e->col_pd = dnnl::matmul::primitive_desc(d, cattr, engine());
      // oneDNN 2.6 runs a row add into a strided dst only on its reference kernel (100x slower
      // than the unsplit primitive's): keep oneDNN's own split there.
      if (std::strstr(e->col_pd.impl_info_str(), "ref") == nullptr) {
        e->col_prim = dnnl::matmul(e->col_pd);
        e->cols = nt;
      }
    }
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

// Runs in float32 and rounds into c: bfloat16 where oneDNN has no bf16 kernel.
void matmul_via_f32(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                    const MatmulGeom& g, bool use_dnnl) {
  Tensor a32 = a.to(DType::float32), b32 = b.to(DType::float32),
         c32 = Tensor::empty(c.shape(), DType::float32);
  Tensor bias32 = bias ? bias->to(DType::float32) : Tensor();
  if (use_dnnl)
    matmul_dnnl(a32, b32, bias ? &bias32 : nullptr, c32, g);
  else
    matmul_ref<float>(a32, b32, bias ? &bias32 : nullptr, c32, g);
  convert_elements(c32.data(), DType::float32, c.data(), c.dtype(), c.numel());
}

// A matmul prepared for one instruction: the entry, its call, and which arguments take the
// add-row post-ops' operands.
struct MatmulPrepared : KernelPrepared {
  // matmul_skinny's launch (no oneDNN entry: e is null): its geometry, kept so that a warm
  // launch computes nothing.
  bool skinny = false;
  MatmulGeom g;
  int threads = 0;
  int64_t work = 0;  // for the SerialScope of a warm launch
  Shape a_shape, b_shape;
  bool has_bias = false;
  std::shared_ptr<MatmulEntry> e;
  PreparedExec exec;
  int a_a = -1, a_b = -1, a_c = -1, a_bias = -1;
  std::vector<std::pair<int, int>> rows;  // (post-op index, argument index)
  // Split along K: one call per thread (its arguments a, b, c at part_args) and the partial
  // products of threads 1.. (thread 0 writes c).
  std::vector<PreparedExec> parts;
  int part_args[3] = {-1, -1, -1};
  std::vector<float> partial;
  std::vector<float> col_partial;  // matmul_col_sums: each part's float column sums of a
  // Split along N: one call per thread (a, b, c, bias at col_args; add-row operands as `rows`).
  std::vector<PreparedExec> cols;
  int col_args[4] = {-1, -1, -1, -1};
  std::vector<std::pair<int, int>> col_rows;
};

// matmul_col_sums' second output: the column sums of a (K rows of M, row stride lda), written
// into `out` (M elements of a's dtype).
struct ColSums {
  const void* a = nullptr;
  int64_t lda = 0;
  Tensor* out = nullptr;
};

// acc[j] += a[i, j] over the rows i0 <= i < i1 of a (row stride lda, M columns), in float.
template <typename T>
void add_rows(const T* a, int64_t lda, int64_t i0, int64_t i1, int64_t M, float* acc) {
  for (int64_t i = i0; i < i1; ++i) {
    const T* row = a + i * lda;
    for (int64_t j = 0; j < M; ++j) {
      if constexpr (std::is_same_v<T, float>)
        acc[j] += row[j];
      else
        acc[j] += bf16_widen(row[j]);
    }
  }
}

void add_rows(const void* a, bool bf16, int64_t lda, int64_t i0, int64_t i1, int64_t M,
              float* acc) {
  if (bf16)
    add_rows(static_cast<const uint16_t*>(a), lda, i0, i1, M, acc);
  else
    add_rows(static_cast<const float*>(a), lda, i0, i1, M, acc);
}

// out[j] = the sum of the parts' column sums at j, rounded once to `dt` (bf16 or float32).
void store_sums(const float* parts, int count, int64_t M, DType dt, void* out) {
  for (int64_t j = 0; j < M; ++j) {
    float s = parts[j];
    for (int t = 1; t < count; ++t) s += parts[t * M + j];
    if (dt == DType::bfloat16)
      static_cast<uint16_t*>(out)[j] = bf16_round_bits(s);
    else
      static_cast<float*>(out)[j] = s;
  }
}

std::unique_ptr<MatmulPrepared> prepare(std::shared_ptr<MatmulEntry> e, const Tensor& a,
                                        const Tensor& b, bool has_bias, int64_t work,
                                        const KernelParams* post) {
  auto p = std::make_unique<MatmulPrepared>();
  p->threads = num_threads();
  p->work = work;
  p->a_shape = a.shape();
  p->b_shape = b.shape();
  p->has_bias = has_bias;
  if (e->ok) {
    p->exec = PreparedExec(e->prim, &e->pd);
    p->a_a = p->exec.add(DNNL_ARG_SRC, e->a_md);
    p->a_b = p->exec.add(DNNL_ARG_WEIGHTS, e->b_md);
    p->a_c = p->exec.add(DNNL_ARG_DST, e->c_md);
    if (has_bias) p->a_bias = p->exec.add(DNNL_ARG_BIAS, e->bias_md);
    if (post)
      for (size_t i = 0; i < post->post_ops.size(); ++i)
        if (post->post_ops[i].kind == PostOp::Kind::kAddRow)
          p->rows.push_back(
              {static_cast<int>(i),
               p->exec.add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                           e->row_md)});
    for (int t = 0; t < e->parts; ++t) {
      p->parts.emplace_back(e->part_prim, &e->part_pd);
      p->part_args[0] = p->parts.back().add(DNNL_ARG_SRC, e->part_a_md);
      p->part_args[1] = p->parts.back().add(DNNL_ARG_WEIGHTS, e->part_b_md);
      p->part_args[2] = p->parts.back().add(DNNL_ARG_DST, e->part_c_md);
    }
    for (int t = 0; t < e->cols; ++t) {
      PreparedExec& x = p->cols.emplace_back(e->col_prim, &e->col_pd);
      p->col_args[0] = x.add(DNNL_ARG_SRC, e->a_md);
      p->col_args[1] = x.add(DNNL_ARG_WEIGHTS, e->col_b_md);
      p->col_args[2] = x.add(DNNL_ARG_DST, e->col_c_md);
      if (has_bias) p->col_args[3] = x.add(DNNL_ARG_BIAS, e->col_row_md);
      p->col_rows.clear();
      for (const auto& [i, arg] : p->rows)
        p->col_rows.push_back(
            {i, x.add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, e->col_row_md)});
    }
    if (e->parts > 1)
      p->partial.resize(static_cast<size_t>(e->parts - (e->bf16_parts ? 0 : 1)) *
                        e->part_c_md.get_size() / sizeof(float));
  }
  p->e = std::move(e);
  return p;
}

// The padded copy of an operand (OperandPad) in this thread's buffer `which` (0: a, 1: b): the
// buffers only grow, so warm launches allocate nothing.
const void* padded(const Tensor& t, const OperandPad& pad, int which) {
  if (!pad.ld) return t.data();
  thread_local std::vector<char> buf[2];
  const size_t isz = itemsize(t.dtype()), row = static_cast<size_t>(pad.cols) * isz,
               ld = static_cast<size_t>(pad.ld) * isz;
  if (buf[which].size() < pad.elements() * isz + 64) buf[which].resize(pad.elements() * isz + 64);
  char* dst = buf[which].data();
  dst += (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64;
  const char* src = static_cast<const char*>(t.data());
  const int64_t rows = pad.count * pad.rows;
  parallel_for(rows, pad.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + r * ld, src + r * row, row);
  });
  return dst;
}

// c = sum over the K parts of a_part^T b_part, one part per thread (MatmulEntry::parts); a
// smaller team than asked for runs several parts per thread. float32: part 0 writes c, the others
// their partials; bf16: every part writes a float32 partial, and c is their sum rounded once.
// With `sums` (matmul_col_sums), each part also sums its rows of a into its float column sums,
// while they are still in its cache, and thread 0 adds and rounds them after the barrier.
void run_split_k(MatmulPrepared& p, const void* a, const void* b, void* c, int64_t numel,
                 const ColSums* sums = nullptr) {
  const int T = p.e->parts;
  const bool bf16 = p.e->bf16_parts;
  const size_t isz = bf16 ? 2 : 4;
  // The descriptors' own dims: memory::desc::dims() returns a new vector (a heap allocation).
  const int64_t M = p.e->part_c_md.data.dims[0], Kp = p.e->part_a_md.data.dims[1];
  if (sums) p.col_partial.resize(static_cast<size_t>(T * M));
#pragma omp parallel num_threads(T)
  {
    const int id = omp_get_thread_num(), got = omp_get_num_threads();
    for (int t = id; t < T; t += got) {
      if (p.e->atb) {  // the kernel sums its rows of a while it packs them
        const int64_t N = numel / M;
        matmul_bf16_atb(static_cast<const uint16_t*>(a) + t * p.e->part_a_step, p.e->atb_lda,
                        static_cast<const uint16_t*>(b) + t * p.e->part_b_step, p.e->atb_ldb, Kp, M,
                        N, p.partial.data() + t * numel, N,
                        sums ? p.col_partial.data() + t * M : nullptr, p.e->atb_prefetch);
        continue;
      }
      PreparedExec& x = p.parts[t];
      x.set(p.part_args[0], static_cast<const char*>(a) + t * p.e->part_a_step * isz);
      x.set(p.part_args[1], static_cast<const char*>(b) + t * p.e->part_b_step * isz);
      x.set(p.part_args[2], bf16     ? p.partial.data() + t * numel
                            : t == 0 ? c
                                     : p.partial.data() + (t - 1) * numel);
      x.run();
      stream().wait();
      if (sums) {
        float* acc = p.col_partial.data() + t * M;
        std::fill(acc, acc + M, 0.0f);
        add_rows(sums->a, bf16, sums->lda, t * Kp, (t + 1) * Kp, M, acc);
      }
    }
#pragma omp barrier
    if (sums && id == 0)
      store_sums(p.col_partial.data(), T, M, sums->out->dtype(), sums->out->data());
    const int64_t i0 = numel * id / got, i1 = numel * (id + 1) / got;
    if (bf16 && vector_split_sum()) {
      bf16_sum_round_partials(p.partial.data(), T, numel, i0, i1, static_cast<uint16_t*>(c));
    } else if (bf16) {
      uint16_t* o = static_cast<uint16_t*>(c);
      const float* q0 = p.partial.data();
      for (int64_t i = i0; i < i1; ++i) {
        float sum = q0[i];
        for (int u = 1; u < T; ++u) sum += q0[u * numel + i];
        o[i] = bf16_round_bits(sum);
      }
    } else {
      float* o = static_cast<float*>(c);
      for (int u = 1; u < T; ++u) {
        const float* q = p.partial.data() + (u - 1) * numel;
        for (int64_t i = i0; i < i1; ++i) o[i] += q[i];
      }
    }
  }
}

// c's column blocks, one per thread (MatmulEntry::cols), each a one-thread call reading all of a
// and its columns of b, bias and the add-row operands; a smaller team runs several per thread.
void run_split_n(MatmulPrepared& p, const float* a, const float* b, float* c, const Tensor* bias,
                 const KernelParams* post) {
  const int T = p.e->cols;
  const int64_t bs = p.e->col_b_step, cs = p.e->col_c_step;
#pragma omp parallel num_threads(T)
  {
    const int id = omp_get_thread_num(), got = omp_get_num_threads();
    for (int t = id; t < T; t += got) {
      PreparedExec& x = p.cols[t];
      x.set(p.col_args[0], a);
      x.set(p.col_args[1], b + t * bs);
      x.set(p.col_args[2], c + t * cs);
      if (bias) x.set(p.col_args[3], bias->data<float>() + t * cs);
      for (const auto& [i, arg] : p.col_rows)
        x.set(arg, post->post_ops[i].operand.data<float>() + t * cs);
      x.run();
      stream().wait();
    }
  }
}

void run(MatmulPrepared& p, const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
         const KernelParams* post) {
  if (p.e->parts > 1 && num_threads() == p.e->parts && !omp_in_parallel()) {
    run_split_k(p, padded(a, p.e->pad_a, 0), padded(b, p.e->pad_b, 1), c.data(), c.numel());
    return;
  }
  if (p.e->cols > 1 && num_threads() == p.e->cols && !omp_in_parallel()) {
    run_split_n(p, static_cast<const float*>(padded(a, p.e->pad_a, 0)),
                static_cast<const float*>(padded(b, p.e->pad_b, 1)), c.data<float>(), bias, post);
    return;
  }
  p.exec.set(p.a_a, padded(a, p.e->pad_a, 0));
  p.exec.set(p.a_b, padded(b, p.e->pad_b, 1));
  p.exec.set(p.a_c, c.data());
  if (bias) p.exec.set(p.a_bias, bias->data());
  for (const auto& [i, arg] : p.rows) p.exec.set(arg, post->post_ops[i].operand.data());
  p.exec.run();
  stream().wait();
}

// The skinny loops, then the post-ops as plain loops over their result (the same float32
// operations as the unfused ops: fused and unfused graphs give the same bits).
void run_skinny(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                const MatmulGeom& g, KernelParams* params) {
  matmul_skinny(a, b, bias, c, g);
  if (const KernelParams* post = post_ops_of(params)) {
    apply_post_ops(post->post_ops, c);
    params->post_applied = true;
  }
}

bool takes_skinny(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& c,
                  const MatmulGeom& g) {
  // MYCEL_NN_BACKEND=dnnl (set_nn_backend): oneDNN wherever it can express the op.
  return nn_backend() != NnBackend::kDnnl && c.dtype() == DType::float32 &&
         a.dtype() == DType::float32 && b.dtype() == DType::float32 &&
         (!bias || bias->dtype() == DType::float32) && matmul_skinny_fits(g);
}

}  // namespace

// With AVX-512 (Zen 4), oneDNN's kernels read these rows in place as fast as the padded copy:
// one core, 128x512x512 with b in place 603 us against 612 padded, 512x128x512 (a transposed)
// 601 against 602 (bench/bench_matmul_ld.py); in the MLP step on two cores the copy (1 MiB of
// W2, a parallel region of its own) made dx2 20-25 us slower and the dW launches 5-16.
bool pad_power_of_two_rows() {
  static const bool pad = [] {
    if (const char* v = std::getenv("MYCEL_MATMUL_PAD"); v && *v) return std::strcmp(v, "0") != 0;
    const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    const unsigned avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
    return (isa & avx512) != avx512;
  }();
  return pad;
}

bool matmul_dnnl_warm(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                      KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  if (!slot) return false;
  auto* p = dynamic_cast<MatmulPrepared*>(slot->get());
  if (!p || p->has_bias != (bias != nullptr) || p->a_shape != a.shape() || p->b_shape != b.shape())
    return false;
  if (p->skinny) {
    run_skinny(a, b, bias, c, p->g, params);
    return true;
  }
  if (!p->e->ok) return false;
  const SerialScope threads(p->work);
  if (p->threads != num_threads()) return false;
  const KernelParams* post = post_ops_of(params);
  if (!p->rows.empty() && !post) return false;
  run(*p, a, b, bias, c, post);
  if (post) params->post_applied = true;
  return true;
}

void matmul_dnnl(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                 const MatmulGeom& g, KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  const KernelParams* post = post_ops_of(params);
  if (c.numel() == 0) return;
  if (g.k == 0) {  // an empty sum: zeros (plus bias)
    std::memset(c.data(), 0, c.nbytes());
    if (bias) {  // c[..., j] = bias[j], in c's own dtype
      const size_t isz = itemsize(c.dtype());
      for (int64_t r = 0; r < c.numel() / g.n; ++r)
        std::memcpy(static_cast<char*>(c.data()) + r * g.n * isz, bias->data(), g.n * isz);
    }
    return;
  }
  // One dimension of at most 16 (the MLP's classifier: 128x10x512, 10x128x512, 128x512x10):
  // plain loops (matmul_skinny.h). In the MLP step 10x128x512 took 25 us against oneDNN's 51-56
  // on two threads (the others on par there, faster alone). Their prepared state is only the
  // geometry, for the warm path.
  if (takes_skinny(a, b, bias, c, g)) {
    std::unique_ptr<MatmulPrepared> local;
    const MatmulPrepared& p = prepared_state<MatmulPrepared>(
        slot, local,
        [&](const MatmulPrepared& q) {
          return q.skinny && q.has_bias == (bias != nullptr) && q.a_shape == a.shape() &&
                 q.b_shape == b.shape();
        },
        [&] {
          auto q = std::make_unique<MatmulPrepared>();
          q->skinny = true;
          q->g = g;
          q->a_shape = a.shape();
          q->b_shape = b.shape();
          q->has_bias = bias != nullptr;
          return q;
        });
    return run_skinny(a, b, bias, c, p.g, params);
  }
  // The SerialScope sees the multiply-adds only, with no rule for small dimensions: inside the
  // MLP's training step its 128x10x512, 10x128x512 and 128x512x10 took 36, 33 and 28 us on one
  // thread against 20, 19 and 18 on both cores (profiler minima, docs/perf_mlp.md).
  const int64_t work = c.numel() * g.k;
  const SerialScope threads(work);
  std::unique_ptr<MatmulPrepared> local;
  MatmulPrepared& p = prepared_state<MatmulPrepared>(
      slot, local,
      [&](const MatmulPrepared& q) {
        return q.threads == num_threads() && q.has_bias == (bias != nullptr) &&
               q.a_shape == a.shape() && q.b_shape == b.shape();
      },
      [&] {
        const std::string k =
            key("matmul", dtype_name(c.dtype()), shape_str(g.a_batch), shape_str(g.b_batch), g.m,
                g.k, g.n, g.trans_a, g.trans_b, bias != nullptr, post_ops_key(post),
                split_n_enabled(), matmul_bf16_atb_available(), matmul_bf16_atb_prefetch());
        auto e = cached<MatmulEntry>(k, [&] { return build(c.dtype(), g, bias != nullptr, post); });
        return prepare(std::move(e), a, b, bias != nullptr, work, post);
      });
  if (!p.e->ok) {
    if (c.dtype() == DType::float32) return matmul_ref<float>(a, b, bias, c, g);
    return matmul_via_f32(a, b, bias, c, g, true);
  }
  run(p, a, b, bias, c, post);
  if (post) params->post_applied = true;
}

void matmul_col_sums(const Tensor& a, const Tensor& b, Tensor& c, Tensor& sums,
                     std::unique_ptr<KernelPrepared>* slot) {
  const int64_t K = a.shape()[0], M = a.shape()[1], N = b.shape()[1];
  MatmulGeom g;
  g.m = M;
  g.k = K;
  g.n = N;
  g.trans_a = true;  // g.out_shape is set only where a primitive is built: a heap allocation
  const bool bf16 = a.dtype() == DType::bfloat16;
  if (K > 0 && M * N > 0 && !takes_skinny(a, b, nullptr, c, g)) {
    const SerialScope threads(c.numel() * K);
    std::unique_ptr<MatmulPrepared> local;
    MatmulPrepared& p = prepared_state<MatmulPrepared>(
        slot, local,
        [&](const MatmulPrepared& q) {
          return !q.skinny && q.threads == num_threads() && !q.has_bias && q.a_shape == a.shape() &&
                 q.b_shape == b.shape();
        },
        [&] {
          g.out_shape = {M, N};
          const std::string k =
              key("matmul", dtype_name(c.dtype()), shape_str(g.a_batch), shape_str(g.b_batch), M, K,
                  N, true, false, false, post_ops_key(nullptr), split_n_enabled(),
                  matmul_bf16_atb_available(), matmul_bf16_atb_prefetch());
          auto e = cached<MatmulEntry>(k, [&] { return build(c.dtype(), g, false, nullptr); });
          return prepare(std::move(e), a, b, false, c.numel() * K, nullptr);
        });
    if (p.e->ok && p.e->parts > 1 && num_threads() == p.e->parts && !omp_in_parallel()) {
      const void* pa = padded(a, p.e->pad_a, 0);
      const ColSums cs{pa, p.e->pad_a.ld ? p.e->pad_a.ld : M, &sums};
      run_split_k(p, pa, padded(b, p.e->pad_b, 1), c.data(), c.numel(), &cs);
      return;
    }
  }
  // No split (one thread, a short K): the matmul, then the sums by blocks of columns.
  g.out_shape = {M, N};
  matmul_dnnl(a, b, nullptr, c, g, nullptr, slot);
  parallel_for(M, K, [&](int64_t j0, int64_t j1) {
    std::vector<float> acc(static_cast<size_t>(j1 - j0), 0.0f);
    const size_t isz = itemsize(a.dtype());
    add_rows(static_cast<const char*>(a.data()) + j0 * isz, bf16, M, 0, K, j1 - j0, acc.data());
    store_sums(acc.data(), 1, j1 - j0, sums.dtype(),
               static_cast<char*>(sums.data()) + j0 * itemsize(sums.dtype()));
  });
}

}  // namespace mycel::cpu
