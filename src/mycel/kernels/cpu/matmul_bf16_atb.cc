#include "mycel/kernels/cpu/matmul_bf16_atb.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/kernels/cpu/dnnl_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>  // here, at the baseline: each intrinsic carries its own target
#endif
#if MYCEL_AVX512_KERNELS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include "mycel/kernels/cpu/bf16_pairs512.h"  // inside a target region, as it asks
#pragma GCC pop_options
#endif

namespace mycel::cpu {

#if MYCEL_AVX512_KERNELS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
namespace {

// vdpbf16ps multiplies pairs of bf16 and adds both products to a float lane, so both operands
// are packed with K's rows k and k+1 interleaved: a lane of a's pack holds (a[k, m], a[k+1, m])
// and is broadcast, a lane of b's holds (b[k, n], b[k+1, n]). The register tile is kMr rows of
// c by kNr columns (kMr x 2 accumulators of the 32 registers); b's pack is cut into panels of
// kNr columns, kept in L1 while every row tile of c passes over it.
constexpr int kMr = 12, kNr = 32;
// Rows of K per packed block: b's panel (kKc / 2 pairs x 128 bytes, 16 KiB) fits L1, a's block
// and c's float partial fit L2 (512 x 128: 256 + 256 KiB).
constexpr int64_t kKc = 256;

// The maskz forms: GCC 12 warns (falsely) that the plain forms' pass-through is uninitialized.
constexpr __mmask16 kAll16 = 0xFFFF;

inline __mmask16 mask16(int64_t n) {
  return n >= 16 ? kAll16 : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

using bf16_pairs512::interleave;
using bf16_pairs512::mask32;
using bf16_pairs512::Pairs;

// 16 bf16 -> float.
inline __m512 widen16(__m256i h) {
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll16, _mm512_maskz_cvtepu16_epi32(kAll16, h), 16));
}

// a's rows k0 <= k < k1 as pairs: ap[p * m2 + m] = (a[k0 + 2p, m], a[k0 + 2p + 1, m]) (the
// second 0 past k1; m2: M rounded up to 16, the extra lanes 0). With sums: sums[m] += the rows.
void pack_a(const uint16_t* a, int64_t lda, int64_t k0, int64_t k1, int64_t M, int64_t m2,
            uint32_t* ap, float* sums) {
  for (int64_t k = k0, p = 0; k < k1; k += 2, ++p) {
    const uint16_t* r0 = a + k * lda;
    const uint16_t* r1 = k + 1 < k1 ? r0 + lda : nullptr;
    uint32_t* dst = ap + p * m2;
    for (int64_t m = 0; m < m2; m += 32) {
      const __mmask32 mk = mask32(M - m);
      const __m512i v0 = _mm512_maskz_loadu_epi16(mk, r0 + m);
      const __m512i v1 = r1 ? _mm512_maskz_loadu_epi16(mk, r1 + m) : _mm512_setzero_si512();
      const Pairs q = interleave(v0, v1);
      _mm512_storeu_si512(dst + m, q.lo);
      if (m + 16 < m2) _mm512_storeu_si512(dst + m + 16, q.hi);
      if (sums) {
        const __m512 s0 = _mm512_add_ps(widen16(_mm512_maskz_extracti64x4_epi64(0xF, v0, 0)),
                                        widen16(_mm512_maskz_extracti64x4_epi64(0xF, v1, 0)));
        const __mmask16 m0 = mask16(M - m), m1 = mask16(M - m - 16);
        _mm512_mask_storeu_ps(sums + m, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, sums + m), s0));
        if (m1) {
          const __m512 s1 = _mm512_add_ps(widen16(_mm512_maskz_extracti64x4_epi64(0xF, v0, 1)),
                                          widen16(_mm512_maskz_extracti64x4_epi64(0xF, v1, 1)));
          _mm512_mask_storeu_ps(sums + m + 16, m1,
                                _mm512_add_ps(_mm512_maskz_loadu_ps(m1, sums + m + 16), s1));
        }
      }
    }
  }
}

// b's rows k0 <= k < k1 as pairs in panels of kNr columns: bp[(j * pairs + p) * kNr + n] =
// (b[k0 + 2p, j * kNr + n], b[k0 + 2p + 1, j * kNr + n]), 0 past k1 and past N.
void pack_b(const uint16_t* b, int64_t ldb, int64_t k0, int64_t k1, int64_t N, uint32_t* bp) {
  // Panel by panel, so that the writes run in order (pair by pair across the panels scattered
  // them: 60 -> 40 us of packing for 1024 rows of 512, one core).
  for (int64_t n = 0; n < N; n += kNr) {
    const __mmask32 mk = mask32(N - n);
    uint32_t* dst = bp;
    for (int64_t k = k0; k < k1; k += 2, dst += kNr) {
      const uint16_t* r0 = b + k * ldb + n;
      const __m512i v0 = _mm512_maskz_loadu_epi16(mk, r0);
      const __m512i v1 =
          k + 1 < k1 ? _mm512_maskz_loadu_epi16(mk, r0 + ldb) : _mm512_setzero_si512();
      const Pairs q = interleave(v0, v1);
      _mm512_storeu_si512(dst, q.lo);
      _mm512_storeu_si512(dst + 16, q.hi);
    }
    bp = dst;
  }
}

// c[r, 0..32) (+)= the sums over `pairs` of ap's rows r < R (ap: stride m2 between pairs) times
// bp's panel; rows >= rows_valid and columns past the masks are not stored.
template <int R>
void tile(const uint32_t* ap, int64_t m2, const uint32_t* bp, int64_t pairs, float* c, int64_t ldc,
          int rows_valid, __mmask16 c0, __mmask16 c1, bool add) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
    bp += kNr;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
    ap += m2;
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    if (r >= rows_valid) break;
    float* row = c + r * ldc;
    __m512 v0 = acc[r][0], v1 = acc[r][1];
    if (add) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(c0, row));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(c1, row + 16));
    }
    _mm512_mask_storeu_ps(row, c0, v0);
    _mm512_mask_storeu_ps(row + 16, c1, v1);
  }
}

using TileFn = void (*)(const uint32_t*, int64_t, const uint32_t*, int64_t, float*, int64_t, int,
                        __mmask16, __mmask16, bool);
template <int... R>
constexpr TileFn tile_for(int rows, std::integer_sequence<int, R...>) {
  TileFn fns[] = {&tile<R + 1>...};
  return fns[rows - 1];
}

// Brings the next block's rows of a and b towards L2 (prefetcht1) a few lines per register tile,
// while the tiles of this block compute: the step's operands come cold from memory (x and the
// relu output from the forward pass), and packing them then waited for each line.
struct Prefetch {
  const char *a = nullptr, *b = nullptr;
  int64_t lda = 0, ldb = 0, la = 0, lb = 0;           // row strides (bytes), lines a row
  int64_t rows = 0, row = 0, line = 0, per_tile = 0;  // the cursor: row, line in a's then b's
  void block(const uint16_t* pa, int64_t sa, int64_t M, const uint16_t* pb, int64_t sb, int64_t N,
             int64_t r0, int64_t r1, int64_t tiles) {
    a = reinterpret_cast<const char*>(pa + r0 * sa);
    b = reinterpret_cast<const char*>(pb + r0 * sb);
    lda = sa * 2, ldb = sb * 2, la = (M * 2 + 63) / 64, lb = (N * 2 + 63) / 64;
    rows = r1 - r0;
    row = line = 0;
    per_tile = tiles > 0 ? (rows * (la + lb) + tiles - 1) / tiles : 0;
  }
  void step() {
    for (int64_t i = 0; i < per_tile && row < rows; ++i) {
      _mm_prefetch(line < la ? a + line * 64 : b + (line - la) * 64, _MM_HINT_T1);
      if (++line == la + lb) {
        line = 0;
        ++row;
        a += lda;
        b += ldb;
      }
    }
  }
};

void atb(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, int64_t K, int64_t M,
         int64_t N, float* c, int64_t ldc, float* sums, bool prefetch, bool accumulate) {
  const int64_t m2 = (M + 15) / 16 * 16, panels = (N + kNr - 1) / kNr;
  const int64_t max_pairs = kKc / 2;
  // This thread's packs: they only grow, so warm launches allocate nothing.
  thread_local std::vector<uint32_t> abuf, bbuf;
  if (abuf.size() < static_cast<size_t>(max_pairs * m2 + 16))
    abuf.resize(static_cast<size_t>(max_pairs * m2 + 16));
  if (bbuf.size() < static_cast<size_t>(max_pairs * panels * kNr + 16))
    bbuf.resize(static_cast<size_t>(max_pairs * panels * kNr + 16));
  if (sums && !accumulate) std::fill(sums, sums + M, 0.0f);
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t k1 = std::min(K, k0 + kKc), pairs = (k1 - k0 + 1) / 2;
    pack_a(a, lda, k0, k1, M, m2, abuf.data(), sums);
    pack_b(b, ldb, k0, k1, N, bbuf.data());
    const bool add = k0 > 0 || accumulate;
    Prefetch pf;
    if (prefetch && k1 < K)
      pf.block(a, lda, M, b, ldb, N, k1, std::min(K, k1 + kKc), panels * ((M + kMr - 1) / kMr));
    for (int64_t j = 0; j < panels; ++j) {
      const int64_t n = j * kNr;
      const __mmask16 c0 = mask16(N - n), c1 = mask16(N - n - 16);
      const uint32_t* bp = bbuf.data() + j * pairs * kNr;
      int64_t m = 0;
      for (; m + kMr <= M; m += kMr, pf.step())
        tile<kMr>(abuf.data() + m, m2, bp, pairs, c + m * ldc + n, ldc, kMr, c0, c1, add);
      if (m < M) {
        pf.step();
        const int rest = static_cast<int>(M - m);
        tile_for(rest, std::make_integer_sequence<int, kMr - 1>())(
            abuf.data() + m, m2, bp, pairs, c + m * ldc + n, ldc, rest, c0, c1, add);
      }
    }
  }
}

}  // namespace
#pragma GCC pop_options
#endif  // MYCEL_AVX512_KERNELS

// The switch is read on every call (when a launch is first prepared), so that one process can
// A/B two compiled steps (bench/bench_step_env_ab.py).
bool matmul_bf16_atb_available() {
  const bool cpu = cpu_has_avx512_bf16() && !onednn_uses_amx();  // AMX: oneDNN wins
  const char* v = std::getenv("MYCEL_MATMUL_BF16_ATB");
  return cpu && !(v && std::strcmp(v, "0") == 0);
}

bool matmul_bf16_atb_prefetch() {
  const char* v = std::getenv("MYCEL_MATMUL_BF16_ATB_PREFETCH");
  return !(v && std::strcmp(v, "0") == 0);
}

void matmul_bf16_atb(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, int64_t K,
                     int64_t M, int64_t N, float* c, int64_t ldc, float* col_sums, bool prefetch,
                     bool accumulate) {
#if MYCEL_AVX512_KERNELS
  atb(a, lda, b, ldb, K, M, N, c, ldc, col_sums, prefetch, accumulate);
#else
  (void)a, (void)lda, (void)b, (void)ldb, (void)K, (void)M, (void)N, (void)c, (void)ldc,
      (void)col_sums, (void)prefetch, (void)accumulate;
#endif
}

}  // namespace mycel::cpu
