// matmul_heads_bf16: attention's per-head products in our own AVX512-BF16 kernel. oneDNN's
// brgemm (brg:avx512_core_bf16; a transposed a is copied inside the primitive, no reorder of
// its own) ran the backward's dV = P^T dO, dQ = dS K and dK = dS^T Q (64 heads of 128x128 @
// 128x32 a launch, b and c head-split strided views) at 48-60% of the bf16 peak on two Zen 4
// cores, the forward P.V at 72-75%. Here each thread takes a range of heads and, per head, packs
// b in K-pairs (vdpbf16ps multiplies pairs) once, packs a only where it is transposed (P^T, dS^T:
// rows k and k + 1 interleaved), else broadcasts a's pairs straight from its rows, sums in
// float32 over all of K in a 12 x 32 register tile and rounds once to bf16 into c's view. With a
// in cache (tests/cpp/matmul_heads_bf16_test.cc's bench, alternating with oneDNN, a loaded host):
// one core 310 us against oneDNN's 310 (a's rows) and 357 against 398 (transposed); two threads
// 164 against 242 and 191 against 434. Each sum runs over K in order, as brgemm's do (the tests'
// gradients came out with oneDNN's bits), but only bf16 rounding is promised.
// MYCEL_MATMUL_HEADS_BF16=0 runs oneDNN's primitive instead (A/B).
#include "mycel/kernels/cpu/matmul_heads_bf16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>  // here, at the baseline: each intrinsic carries its own target
#endif

#if MYCEL_AVX512_KERNELS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "mycel/kernels/cpu/bf16_pairs512.h"  // inside the target region, as it asks
namespace mycel::cpu {
namespace {

// A register tile is kMr rows of c by kNr columns (kMr x 2 of the 32 registers accumulate).
constexpr int kMr = 12, kNr = 32;

using bf16_pairs512::interleave;
using bf16_pairs512::mask32;
using bf16_pairs512::Pairs;

// b (K, N), row stride ldb, as pairs in panels of kNr columns: bp[(j * pairs + p) * kNr + n] =
// (b[2p, j * kNr + n], b[2p + 1, j * kNr + n]), 0 past K and past N; pairs = (K + 1) / 2.
void pack_b(const uint16_t* b, int64_t ldb, int64_t K, int64_t N, uint32_t* bp) {
  for (int64_t n = 0; n < N; n += kNr) {
    const __mmask32 mk = mask32(N - n);
    for (int64_t k = 0; k < K; k += 2, bp += kNr) {
      const uint16_t* r0 = b + k * ldb + n;
      const __m512i v0 = _mm512_maskz_loadu_epi16(mk, r0);
      const __m512i v1 =
          k + 1 < K ? _mm512_maskz_loadu_epi16(mk, r0 + ldb) : _mm512_setzero_si512();
      const Pairs q = interleave(v0, v1);
      _mm512_storeu_si512(bp, q.lo);
      _mm512_storeu_si512(bp + 16, q.hi);
    }
  }
}

// r[0..16) as the rows of a 16 x 16 matrix of 32-bit elements, transposed in place: three
// stages of shuffles (pairs, quads, 128-bit lanes twice), 64 instructions. (GCC 12's
// unpack{lo,hi}_epi{32,64} pass an undefined vector as their unused merge source, which its
// -Wmaybe-uninitialized takes for a read once inlined here.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void transpose16(__m512i* r) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);      // columns 4l of rows i..i+3 in lane l
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);  // columns 4l + 1
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i w0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88),
                  w1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd),
                  w2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88),
                  w3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(w0, w2, 0x88);
    r[c + 8] = _mm512_shuffle_i32x4(w0, w2, 0xdd);
    r[c + 4] = _mm512_shuffle_i32x4(w1, w3, 0x88);
    r[c + 12] = _mm512_shuffle_i32x4(w1, w3, 0xdd);
  }
}
#pragma GCC diagnostic pop

// b = bt^T with bt (N, K), row stride ldbt (the query-key and value-output products, q k^T and
// dO V^T): pack_b's layout, whose pair (b[2p, n], b[2p + 1, n]) is two adjacent values of bt's
// row n, so 16 rows' 16 pairs are a 16 x 16 transpose of 32-bit elements (0 past K and past N).
// (A scatter of each row down its column ran 20% slower than oneDNN's q k^T on its own.)
void pack_bt(const uint16_t* bt, int64_t ldbt, int64_t K, int64_t N, uint32_t* bp) {
  const int64_t kp = (K + 1) / 2;
  for (int64_t n0 = 0; n0 < N; n0 += kNr, bp += kp * kNr)
    for (int64_t h = 0; h < kNr; h += 16)
      for (int64_t p = 0; p < kp; p += 16) {
        __m512i r[16];
        const __mmask32 mk = mask32(K - 2 * p);
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t n = n0 + h + i;
          r[i] =
              n < N ? _mm512_maskz_loadu_epi16(mk, bt + n * ldbt + 2 * p) : _mm512_setzero_si512();
        }
        transpose16(r);
        for (int64_t i = 0; i < 16 && p + i < kp; ++i)
          _mm512_storeu_si512(bp + (p + i) * kNr + h, r[i]);
      }
}

// a = at^T with at (K, M), row stride lda, as pairs (at[2p, m], at[2p + 1, m]), 0 past K and
// past M, in blocks of 32 rows: block i's pair p at ap + (i * kp + p) * 32 (kp = (K + 1) / 2), so
// that a tile's broadcasts walk one 8 KiB block in order. The pack costs ~45 us of the 64 heads'
// 357 on one core, bound by its reads of a: prefetching the next head, or packing it a slice
// before each tile of this one, or each block just before its tiles, all ran slower.
// vpunpck{l,h}wd interleave within 128-bit lanes (a cross-lane permute is dearer), so a block's
// rows land in the order packed_row() gives; the tiles store each row to its place.
void pack_at(const uint16_t* at, int64_t lda, int64_t K, int64_t M, uint32_t* ap) {
  const int64_t kp = (K + 1) / 2;
  for (int64_t k = 0, p = 0; k < K; k += 2, ++p) {
    const uint16_t* r0 = at + k * lda;
    for (int64_t m = 0; m < M; m += 32) {
      const __mmask32 mk = mask32(M - m);
      const __m512i v0 = _mm512_maskz_loadu_epi16(mk, r0 + m);
      const __m512i v1 =
          k + 1 < K ? _mm512_maskz_loadu_epi16(mk, r0 + lda + m) : _mm512_setzero_si512();
      uint32_t* dst = ap + ((m / 32) * kp + p) * 32;
      _mm512_storeu_si512(dst, _mm512_unpacklo_epi16(v0, v1));
      _mm512_storeu_si512(dst + 16, _mm512_unpackhi_epi16(v0, v1));
    }
  }
}

// The row of a (and c) at position j of a block of pack_at's pack.
inline int64_t packed_row(int64_t j) { return 8 * ((j & 15) >> 2) + 4 * (j >> 4) + (j & 3); }

inline uint32_t load32(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// crow[r][0..32) = round(sum over `pairs` (and a tail) of a's row r pairs times bp's panel),
// columns within the masks; a null crow[r] is not stored. a's pair p of row r is at a + r * rs + p
// * ps (uint16 elements, two adjacent values); `tail`: one more pair holding a single value (odd K,
// rows read straight), whose second half is not read.
template <int R>
void tile(const uint16_t* a, int64_t rs, int64_t ps, int64_t pairs, bool tail, const uint32_t* bp,
          uint16_t* const* crow, __mmask32 cm) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
    bp += kNr;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(load32(a + r * rs)));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
    a += ps;
  }
  if (tail) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * rs]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  // vcvtne2ps2bf16: nearest even in one instruction, as oneDNN's bf16 matmuls round (subnormal
  // sums flush to zero; bf16_lanes512's round16 took 7 integer ops a vector).
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    uint16_t* row = crow[r];
    if (!row) continue;
    _mm512_mask_storeu_epi16(row, cm, (__m512i)_mm512_cvtne2ps_pbh(acc[r][1], acc[r][0]));
  }
}

using TileFn = void (*)(const uint16_t*, int64_t, int64_t, int64_t, bool, const uint32_t*,
                        uint16_t* const*, __mmask32);
template <int... R>
constexpr TileFn tile_for(int rows, std::integer_sequence<int, R...>) {
  TileFn fns[] = {&tile<R + 1>...};
  return fns[rows - 1];
}

// One head: c (M, N, row stride ldc) = a (M, K) @ b (K, N); a's rows contiguous (`direct`, row
// stride lda) or its columns (a^T's row stride lda); b's rows (`b_rows`, row stride ldb) or its
// columns (b^T's row stride ldb).
void head(const uint16_t* a, int64_t lda, bool direct, const uint16_t* b, int64_t ldb, bool b_rows,
          uint16_t* c, int64_t ldc, int64_t M, int64_t N, int64_t K, uint32_t* abuf,
          uint32_t* bbuf) {
  const int64_t panels = (N + kNr - 1) / kNr, kp = (K + 1) / 2;
  if (b_rows)
    pack_b(b, ldb, K, N, bbuf);
  else
    pack_bt(b, ldb, K, N, bbuf);
  if (!direct) pack_at(a, lda, K, M, abuf);
  // Row blocks: all of M read straight; 32 rows of the pack (the last one's rows lie anywhere in
  // it, each tile stores those below M).
  const int64_t block = direct ? M : 32;
  for (int64_t j = 0; j < panels; ++j) {
    const int64_t n = j * kNr;
    const __mmask32 cm = mask32(N - n);
    const uint32_t* bp = bbuf + j * kp * kNr;
    for (int64_t m0 = 0; m0 < M; m0 += block) {
      const uint16_t* ab =
          direct ? a : reinterpret_cast<const uint16_t*>(abuf + (m0 / 32) * kp * 32);
      const int64_t rs = direct ? lda : 2, ps = direct ? 2 : 64, pairs = direct ? K / 2 : kp;
      const bool tail = direct && K % 2 != 0;
      for (int64_t m = 0; m < block; m += kMr) {
        const int r = static_cast<int>(std::min<int64_t>(kMr, block - m));
        uint16_t* crow[kMr];
        for (int i = 0; i < r; ++i) {
          const int64_t row = direct ? m + i : m0 + packed_row(m + i);
          crow[i] = row < M ? c + row * ldc + n : nullptr;
        }
        if (r == kMr)
          tile<kMr>(ab + m * rs, rs, ps, pairs, tail, bp, crow, cm);
        else
          tile_for(r, std::make_integer_sequence<int, kMr - 1>())(ab + m * rs, rs, ps, pairs, tail,
                                                                  bp, crow, cm);
      }
    }
  }
}

// The element offsets of each batch index (c's batch dims, last fastest) in a view's buffer.
std::vector<int64_t> batch_offsets(const StridedView& v, size_t nb, int64_t batches) {
  std::vector<int64_t> off(static_cast<size_t>(batches), 0);
  std::vector<int64_t> idx(nb, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < batches; ++i) {
    off[static_cast<size_t>(i)] = o;
    for (size_t d = nb; d-- > 0;) {
      o += v.strides[d];
      if (++idx[d] < v.dims[d]) break;
      o -= v.strides[d] * v.dims[d];
      idx[d] = 0;
    }
  }
  return off;
}

void heads(const uint16_t* a, const uint16_t* b, uint16_t* c, const StridedMatmul& s) {
  const size_t nb = s.c.dims.size() - 2;
  const int64_t M = s.c.dims[nb], N = s.c.dims[nb + 1], K = s.a.dims[nb + 1];
  int64_t batches = 1;
  for (size_t d = 0; d < nb; ++d) batches *= s.c.dims[d];
  const std::vector<int64_t> oa = batch_offsets(s.a, nb, batches),
                             ob = batch_offsets(s.b, nb, batches),
                             oc = batch_offsets(s.c, nb, batches);
  const bool direct = s.a.strides[nb + 1] == 1 || K == 1;
  const bool b_rows = s.b.strides[nb + 1] == 1 || N == 1;
  const int64_t lda = direct ? s.a.strides[nb] : s.a.strides[nb + 1];
  const int64_t ldb = b_rows ? s.b.strides[nb] : s.b.strides[nb + 1], ldc = s.c.strides[nb];
  const int64_t m32 = (M + 31) / 32 * 32, panels = (N + kNr - 1) / kNr, kp = (K + 1) / 2;
  parallel_for(batches, M * N * K, [&](int64_t h0, int64_t h1) {
    // This thread's packs: they only grow, so warm launches allocate nothing.
    thread_local std::vector<uint32_t> abuf, bbuf;
    if (!direct && abuf.size() < static_cast<size_t>(kp * m32 + 16))
      abuf.resize(static_cast<size_t>(kp * m32 + 16));  // (M / 32 blocks rounded up) * kp * 32
    if (bbuf.size() < static_cast<size_t>(kp * panels * kNr + 16))
      bbuf.resize(static_cast<size_t>(kp * panels * kNr + 16));
    for (int64_t h = h0; h < h1; ++h) {
      const auto i = static_cast<size_t>(h);
      head(a + oa[i], lda, direct, b + ob[i], ldb, b_rows, c + oc[i], ldc, M, N, K, abuf.data(),
           bbuf.data());
    }
  });
}

}  // namespace

void matmul_head_bf16(const HeadOperand& a, const HeadOperand& b, uint16_t* c, int64_t ldc,
                      int64_t M, int64_t N, int64_t K) {
  const int64_t m32 = (M + 31) / 32 * 32, panels = (N + kNr - 1) / kNr, kp = (K + 1) / 2;
  thread_local std::vector<uint32_t> abuf, bbuf;  // only grow: warm calls allocate nothing
  if (!a.rows && abuf.size() < static_cast<size_t>(kp * m32 + 16))
    abuf.resize(static_cast<size_t>(kp * m32 + 16));
  if (bbuf.size() < static_cast<size_t>(kp * panels * kNr + 16))
    bbuf.resize(static_cast<size_t>(kp * panels * kNr + 16));
  head(a.p, a.ld, a.rows || K == 1, b.p, b.ld, b.rows || N == 1, c, ldc, M, N, K, abuf.data(),
       bbuf.data());
}

}  // namespace mycel::cpu
#pragma GCC pop_options
#endif  // MYCEL_AVX512_KERNELS

#if !MYCEL_AVX512_KERNELS
namespace mycel::cpu {
void matmul_head_bf16(const HeadOperand&, const HeadOperand&, uint16_t*, int64_t, int64_t, int64_t,
                      int64_t) {}  // never called: matmul_heads_bf16_available() is false
}  // namespace mycel::cpu
#endif

namespace mycel::cpu {

bool matmul_heads_bf16_available() {
  const bool cpu = cpu_has_avx512_bf16() && !onednn_uses_amx();  // AMX: oneDNN wins
  const char* v = std::getenv("MYCEL_MATMUL_HEADS_BF16");
  return cpu && !(v && std::strcmp(v, "0") == 0);
}

namespace {
// Products with b's columns contiguous (q k^T, dO V^T) as launches of their own stay on oneDNN's
// primitive unless MYCEL_MATMUL_HEADS_BF16_BT=1: the transformer's O2 step, alternating A/B at
// load 3.1-3.5, two threads, minima: the scores with their softmax 313 -> 336-349 us, dP with
// softmax's gradient 233 -> 243 (the pack's transposes and K = 32's short sums). Inside
// attention_heads_grad (no oneDNN call per block) they run here.
bool b_transposed_on(bool b_cols_ok) {
  if (b_cols_ok) return true;
  const char* v = std::getenv("MYCEL_MATMUL_HEADS_BF16_BT");
  return v && std::strcmp(v, "1") == 0;
}
}  // namespace

bool matmul_heads_bf16_fits(const StridedMatmul& s, bool b_cols_ok) {
  const size_t nd = s.c.dims.size();
  if (nd < 2 || s.a.dims.size() != nd || s.b.dims.size() != nd || s.a.strides.size() != nd ||
      s.b.strides.size() != nd || s.c.strides.size() != nd)
    return false;
  const size_t nb = nd - 2;
  for (size_t d = 0; d < nb; ++d)
    if (s.a.dims[d] != s.c.dims[d] || s.b.dims[d] != s.c.dims[d]) return false;
  for (const StridedView* v : {&s.a, &s.b, &s.c})
    for (int64_t st : v->strides)
      if (st < 0) return false;
  const int64_t M = s.c.dims[nb], N = s.c.dims[nb + 1], K = s.a.dims[nb + 1];
  if (s.a.dims[nb] != M || s.b.dims[nb] != K || s.b.dims[nb + 1] != N) return false;
  // Larger heads: on one core oneDNN's brgemm ran a's rows 4-7% faster from L = 256 (64 heads of
  // LxL @ Lx64, the transposed a within 3% either way); two threads were not measured there.
  if (M < 1 || N < 1 || K < 1 || M > 256 || N > 256 || K > 256) return false;
  const bool a_rows = s.a.strides[nb + 1] == 1 || K == 1, a_cols = s.a.strides[nb] == 1 || M == 1;
  const bool b_rows = s.b.strides[nb + 1] == 1 || N == 1, b_cols = s.b.strides[nb] == 1 || K == 1,
             c_rows = s.c.strides[nb + 1] == 1 || N == 1;
  return (a_rows || a_cols) && (b_rows || (b_cols && b_transposed_on(b_cols_ok))) && c_rows;
}

void matmul_heads_bf16(const uint16_t* a, const uint16_t* b, uint16_t* c, const StridedMatmul& s) {
#if MYCEL_AVX512_KERNELS
  heads(a, b, c, s);
#else
  (void)a, (void)b, (void)c, (void)s;
#endif
}

}  // namespace mycel::cpu
