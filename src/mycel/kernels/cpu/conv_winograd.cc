#include "mycel/kernels/cpu/conv_winograd.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/conv_winograd_gemm512.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_util.h"

// The kernels need AVX2 and FMA in the baseline (x86-64-v3, the default MYCEL_ARCH); other
// builds never choose Winograd.
#if defined(__AVX2__) && defined(__FMA__)
#define MYCEL_WINOGRAD_AVX2 1
#else
#define MYCEL_WINOGRAD_AVX2 0
#endif

namespace mycel::cpu {
namespace {

constexpr int64_t kLanes = 8;  // floats per __m256, and channels per nChw8c block
// Tiles per GEMM micro-kernel call: 6 tiles x 2 channel blocks = 12 accumulators, plus two weight
// registers and a broadcast, of AVX2's 16.
constexpr int kTileGroup = 6;
// V and M of one tile block stay below this many bytes (they pass through L2 once per point).
constexpr int64_t kBlockBytes = int64_t{2} << 20;
// The same for a block one thread runs alone: well inside Zen 4's 1 MiB L2 next to U's slices
// (ResNet-18 b1, one thread, per launch: 64 channels at 56x56 0.80 -> 0.75 ms, 128 at 28x28
// 0.80 -> 0.66, 256 at 14x14 1.27 -> 1.10 against 2 MiB blocks). MYCEL_WINOGRAD_BLOCK_KB sets it.
constexpr int64_t kThreadBlockBytes = int64_t{256} << 10;
// Largest transformed weights (U) winograd_tile chooses, in MiB.
constexpr long kMaxWeightMiB = 8;

// G of F(2x2, 3x3) and F(4x4, 3x3) (Lavin & Gray 2016; points 0, +-1, (+-2,) infinity). The
// matching B^T and A^T are written out in the transforms below.
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};

int env_override() {
  static const int v = [] {
    const char* s = std::getenv("MYCEL_WINOGRAD");
    if (!s || !*s) return -1;
    const int k = std::atoi(s);
    return k == 0 || k == 2 || k == 4 ? k : -1;
  }();
  return v;
}

#if MYCEL_WINOGRAD_AVX2

// r = B^T d along one axis; d[i] and r[i] at strides ds and rs (in __m256).
inline void bt2(const __m256* d, int ds, __m256* r, int rs) {
  const __m256 d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds];
  r[0] = _mm256_sub_ps(d0, d2);
  r[rs] = _mm256_add_ps(d1, d2);
  r[2 * rs] = _mm256_sub_ps(d2, d1);
  r[3 * rs] = _mm256_sub_ps(d1, d3);
}

inline void bt4(const __m256* d, int ds, __m256* r, int rs) {
  const __m256 d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds],
               d5 = d[5 * ds];
  const __m256 four = _mm256_set1_ps(4.f), five = _mm256_set1_ps(5.f), two = _mm256_set1_ps(2.f);
  r[0] = _mm256_fmadd_ps(four, d0, _mm256_fnmadd_ps(five, d2, d4));  // 4d0 - 5d2 + d4
  r[rs] = _mm256_fnmadd_ps(four, _mm256_add_ps(d1, d2), _mm256_add_ps(d3, d4));
  r[2 * rs] = _mm256_fmadd_ps(four, _mm256_sub_ps(d1, d2), _mm256_sub_ps(d4, d3));
  const __m256 d42 = _mm256_sub_ps(d4, d2), d31 = _mm256_sub_ps(d3, d1);
  r[3 * rs] = _mm256_fmadd_ps(two, d31, d42);
  r[4 * rs] = _mm256_fnmadd_ps(two, d31, d42);
  r[5 * rs] = _mm256_fmadd_ps(four, d1, _mm256_fnmadd_ps(five, d3, d5));  // 4d1 - 5d3 + d5
}

// o = A^T m along one axis.
inline void at2(const __m256* m, int ms, __m256* o, int os) {
  const __m256 m1 = m[ms], m2 = m[2 * ms];
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], m1), m2);
  o[os] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m[3 * ms]);
}

inline void at4(const __m256* m, int ms, __m256* o, int os) {
  const __m256 m1 = m[ms], m2 = m[2 * ms], m3 = m[3 * ms], m4 = m[4 * ms];
  const __m256 s12 = _mm256_add_ps(m1, m2), d12 = _mm256_sub_ps(m1, m2);
  const __m256 s34 = _mm256_add_ps(m3, m4), d34 = _mm256_sub_ps(m3, m4);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  o[os] = _mm256_fmadd_ps(_mm256_set1_ps(2.f), d34, d12);
  o[2 * os] = _mm256_fmadd_ps(_mm256_set1_ps(4.f), s34, s12);
  o[3 * os] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.f), d34, d12), m[5 * ms]);
}

// Geometry of one call, shared by the three steps.
struct Plan {
  int m, a, p;                    // tile, tile + 2, points
  int64_t h, w, oh, ow, pt, pl;   // input / output size, padding
  int64_t th, tw, tiles_per_img;  // tiles per column, per row, per image
  int64_t cb, ocb, c8, oc8;       // channel blocks, padded channels
};

// Input tile t (global index) of channel block cb: V[point][t][cb * 8 ..] (point stride `ps`).
template <int M>
void input_tile(const Plan& q, const float* x, int64_t t, int64_t cb, float* v, int64_t ps) {
  constexpr int A = M + 2;
  const int64_t img = t / q.tiles_per_img, r = t % q.tiles_per_img;
  const int64_t y0 = r / q.tw * M - q.pt, x0 = r % q.tw * M - q.pl;
  const float* xc = x + (img * q.cb + cb) * q.h * q.w * kLanes;
  __m256 d[A * A], s[A * A];
  const __m256 zero = _mm256_setzero_ps();
  if (y0 >= 0 && x0 >= 0 && y0 + A <= q.h && x0 + A <= q.w) {  // interior: no bounds checks
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j)
        d[i * A + j] = _mm256_loadu_ps(xc + ((y0 + i) * q.w + x0 + j) * kLanes);
  } else {
    for (int i = 0; i < A; ++i) {
      const int64_t iy = y0 + i;
      const bool row = iy >= 0 && iy < q.h;
      for (int j = 0; j < A; ++j) {
        const int64_t ix = x0 + j;
        d[i * A + j] =
            row && ix >= 0 && ix < q.w ? _mm256_loadu_ps(xc + (iy * q.w + ix) * kLanes) : zero;
      }
    }
  }
  for (int j = 0; j < A; ++j) {  // columns: s = B^T d
    if constexpr (M == 4)
      bt4(d + j, A, s + j, A);
    else
      bt2(d + j, A, s + j, A);
  }
  for (int i = 0; i < A; ++i) {  // rows: d = s B
    if constexpr (M == 4)
      bt4(s + i * A, 1, d + i * A, 1);
    else
      bt2(s + i * A, 1, d + i * A, 1);
  }
  float* vt = v + cb * kLanes;
  for (int k = 0; k < A * A; ++k) _mm256_storeu_ps(vt + k * ps, d[k]);
}

// Output tile t (global) of output channel block ob from M[point][t][ob * 8 ..] (point stride ps).
template <int M>
void output_tile(const Plan& q, const float* mt, int64_t ps, int64_t t, int64_t ob,
                 const float* bias8, const float* residual, float* y, WinogradAct act) {
  constexpr int A = M + 2;
  __m256 m[A * A], s[M * A], o[M * M];
  for (int k = 0; k < A * A; ++k) m[k] = _mm256_loadu_ps(mt + k * ps);
  for (int j = 0; j < A; ++j) {  // columns: s = A^T m (M x A)
    if constexpr (M == 4)
      at4(m + j, A, s + j, A);
    else
      at2(m + j, A, s + j, A);
  }
  for (int i = 0; i < M; ++i) {  // rows: o = s A (M x M)
    if constexpr (M == 4)
      at4(s + i * A, 1, o + i * M, 1);
    else
      at2(s + i * A, 1, o + i * M, 1);
  }
  const int64_t img = t / q.tiles_per_img, r = t % q.tiles_per_img;
  const int64_t y0 = r / q.tw * M, x0 = r % q.tw * M;
  const int64_t base = (img * q.ocb + ob) * q.oh * q.ow * kLanes;
  const __m256 b = _mm256_loadu_ps(bias8 + ob * kLanes);
  const __m256 zero = _mm256_setzero_ps(), six = _mm256_set1_ps(6.f);
  const int rows = static_cast<int>(std::min<int64_t>(M, q.oh - y0));
  const int cols = static_cast<int>(std::min<int64_t>(M, q.ow - x0));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const int64_t off = base + ((y0 + i) * q.ow + x0 + j) * kLanes;
      __m256 v = _mm256_add_ps(o[i * M + j], b);
      if (residual) v = _mm256_add_ps(v, _mm256_loadu_ps(residual + off));
      if (act != WinogradAct::kNone) v = _mm256_max_ps(v, zero);
      if (act == WinogradAct::kRelu6) v = _mm256_min_ps(v, six);
      _mm256_storeu_ps(y + off, v);
    }
}

// m[t][o * 8 ..] = sum_c v[t][c] u[c][o * 8 ..] for NT tiles and NO (1 or 2) output channel
// blocks: v rows at stride c8, u rows of NO * 8, m rows at stride oc8. The accumulators are
// named variables, not an array: GCC kept an array's registers stored to the stack on every
// iteration (12 stores per 12 FMAs, half speed).
template <int NT, int NO>
void gemm_kernel(const float* v, const float* u, float* m, int64_t c8, int64_t oc8) {
  static_assert(NT >= 1 && NT <= 6 && (NO == 1 || NO == 2));
  __m256 a00 = _mm256_setzero_ps(), a10 = a00, a20 = a00, a30 = a00, a40 = a00, a50 = a00;
  __m256 a01 = a00, a11 = a00, a21 = a00, a31 = a00, a41 = a00, a51 = a00;
  const float *v0 = v, *v1 = v + c8, *v2 = v + 2 * c8, *v3 = v + 3 * c8, *v4 = v + 4 * c8,
              *v5 = v + 5 * c8;
#define MYCEL_WINO_ROW(t)                                            \
  if constexpr (NT > t) {                                            \
    const __m256 b = _mm256_broadcast_ss(v##t + c);                  \
    a##t##0 = _mm256_fmadd_ps(b, w0, a##t##0);                       \
    if constexpr (NO > 1) a##t##1 = _mm256_fmadd_ps(b, w1, a##t##1); \
  }
  for (int64_t c = 0; c < c8; ++c) {
    const __m256 w0 = _mm256_loadu_ps(u + c * NO * kLanes);
    const __m256 w1 = NO > 1 ? _mm256_loadu_ps(u + c * NO * kLanes + kLanes) : w0;
    MYCEL_WINO_ROW(0)
    MYCEL_WINO_ROW(1)
    MYCEL_WINO_ROW(2)
    MYCEL_WINO_ROW(3)
    MYCEL_WINO_ROW(4)
    MYCEL_WINO_ROW(5)
  }
#undef MYCEL_WINO_ROW
  const __m256 acc[6][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}, {a40, a41}, {a50, a51}};
  for (int t = 0; t < NT; ++t)
    for (int o = 0; o < NO; ++o) _mm256_storeu_ps(m + t * oc8 + o * kLanes, acc[t][o]);
}

using GemmFn = void (*)(const float*, const float*, float*, int64_t, int64_t);
template <int NO>
constexpr GemmFn kGemm[kTileGroup + 1] = {nullptr,
                                          gemm_kernel<1, NO>,
                                          gemm_kernel<2, NO>,
                                          gemm_kernel<3, NO>,
                                          gemm_kernel<4, NO>,
                                          gemm_kernel<5, NO>,
                                          gemm_kernel<6, NO>};

// The distance in floats between two points' rows of V or M holding `n` floats each: n plus a
// cache line. The transforms store (V) and load (M) all 16 or 36 points of a tile at once; at a
// multiple of 4 KiB apart (few-tile planes: 16 tiles x 128 channels is 8 KiB) they all fall in
// one set of the 8-way L1 and evict each other. Measured within the noise on a loaded machine
// (ResNet-18 CIFAR b1, one thread, sum of per-launch minima over 3 alternating runs: 7.05 ms
// unpadded, 7.00 padded); MYCEL_WINOGRAD_PAD=0 leaves them unpadded.
int64_t point_stride(int64_t n) {
  static const int64_t pad = [] {
    const char* s = std::getenv("MYCEL_WINOGRAD_PAD");
    return s && *s ? int64_t{std::atol(s)} : int64_t{16};
  }();
  return n + pad;
}

// Tiles [t0, t0 + nt) through the three steps on the calling thread alone, V and M in its own
// staging buffers 0 and 1.
// Whether the thread blocks split the tiles evenly (else in whole groups of 6, the last one
// short); MYCEL_WINOGRAD_EVEN=0 for the old split (a measuring aid).
bool even_split() {
  static const bool on = [] {
    const char* s = std::getenv("MYCEL_WINOGRAD_EVEN");
    return !(s && *s && std::atoi(s) == 0);
  }();
  return on;
}

// The GEMM of output blocks [ob, end) of one point for the tiles of v (groups as even as they go:
// 25 tiles are five of 5, not four of 6 and a 1-tile group that reads all of U for one tile): four
// blocks at a time in AVX-512 where winograd_gemm512_on(), else pairs, then a last single block.
// up: U of this point at block ob; v, m: this point's V and M at tile 0 (m at block ob).
void gemm_blocks(const float* v, const float* up, float* m, int64_t nt, int64_t ob, int64_t end,
                 const Plan& q) {
  const bool quad = winograd_gemm512_on(), even = even_split();
  const int64_t ng = (nt + kTileGroup - 1) / kTileGroup;
  for (int64_t o = ob; o < end;) {
    const int blocks = quad && o + 4 <= end ? 4 : o + 1 < end ? 2 : 1;
    const float* u = up + (o - ob) * q.c8 * kLanes;
    float* mo = m + (o - ob) * kLanes;
    for (int64_t j = 0; j < ng; ++j) {
      const int64_t t = even ? j * nt / ng : j * kTileGroup;
      const int n =
          static_cast<int>(even ? (j + 1) * nt / ng - t : std::min<int64_t>(kTileGroup, nt - t));
      if (blocks == 4)
        winograd_gemm_quad(n, v + t * q.c8, u, mo + t * q.oc8, q.c8, q.oc8);
      else
        (blocks == 2 ? kGemm<2>[n] : kGemm<1>[n])(v + t * q.c8, u, mo + t * q.oc8, q.c8, q.oc8);
    }
    o += blocks;
  }
}

template <int M>
void run_block(const Plan& q, const float* x, const float* u, const float* bias8,
               const float* residual, float* y, WinogradAct act, int64_t t0, int64_t nt) {
  const int64_t vps = point_stride(nt * q.c8), mps = point_stride(nt * q.oc8);
  float* v = static_cast<float*>(dnnl_util::staging_data(0, q.p * vps * sizeof(float)));
  float* mm = static_cast<float*>(dnnl_util::staging_data(1, q.p * mps * sizeof(float)));
  for (int64_t i = 0; i < nt * q.cb; ++i)
    input_tile<M>(q, x, t0 + i / q.cb, i % q.cb, v + i / q.cb * q.c8, vps);
  for (int64_t pt = 0; pt < q.p; ++pt)
    gemm_blocks(v + pt * vps, u + pt * q.oc8 * q.c8, mm + pt * mps, nt, 0, q.ocb, q);
  for (int64_t i = 0; i < nt * q.ocb; ++i) {
    const int64_t t = i / q.ocb, ob = i % q.ocb;
    output_tile<M>(q, mm + t * q.oc8 + ob * kLanes, mps, t0 + t, ob, bias8, residual, y, act);
  }
}

template <int M>
void run(const Plan& q, const float* x, const float* u, const float* bias8, const float* residual,
         float* y, const WindowGeom& g, WinogradAct act) {
  const int64_t tiles = g.n * q.tiles_per_img;
  const int64_t per_tile = q.p * (q.c8 + q.oc8) * int64_t{sizeof(float)};
  static const int64_t block_bytes = [] {
    const char* s = std::getenv("MYCEL_WINOGRAD_BLOCK_KB");
    return s && *s ? int64_t{std::atol(s)} << 10 : kThreadBlockBytes;
  }();
  // Many tiles: each thread takes whole blocks of tiles, V and M of a block in its L2, no barrier
  // between the steps. The blocks split the tiles evenly, their count a multiple of the threads,
  // and each block its tiles into even GEMM groups of at most 6 (run_block). Splitting in whole
  // groups of 6 instead left the last block a 1-tile GEMM that reads all of U for one tile, and
  // at 49 tiles (ResNet-18's 128 channels at 28x28, 256 at 14x14) on two threads 25 tiles to one
  // thread and 24 to the other, the extra one costing a whole pass over U.
  const int64_t groups = (tiles + kTileGroup - 1) / kTileGroup;
  const int64_t cap = std::max<int64_t>(1, block_bytes / per_tile / kTileGroup);  // in groups
  const int nth = omp_in_parallel() ? 1 : num_threads();
  if (int64_t nb = (groups + cap - 1) / cap; nb >= 2 * nth) {
    nb = (nb + nth - 1) / nth * nth;
    const bool even = even_split();
    parallel_for(nb, int64_t{1} << 30, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t t0 = even ? i * tiles / nb : i * groups / nb * kTileGroup,
                      t1 = even ? (i + 1) * tiles / nb
                                : std::min(tiles, (i + 1) * groups / nb * kTileGroup);
        run_block<M>(q, x, u, bias8, residual, y, act, t0, t1 - t0);
      }
    });
    return;
  }
  // Few tiles (each thread would read all of U for little work): the threads split each step,
  // the GEMM by points and output channels, so U is read once.
  int64_t tb = std::max<int64_t>(kTileGroup, kBlockBytes / per_tile / kTileGroup * kTileGroup);
  tb = std::min(tb, tiles);
  float* v = static_cast<float*>(
      dnnl_util::staging_data(0, q.p * point_stride(tb * q.c8) * sizeof(float)));
  float* mm = static_cast<float*>(
      dnnl_util::staging_data(1, q.p * point_stride(tb * q.oc8) * sizeof(float)));
  // The GEMM's work items: a point and 4 output blocks (AVX-512, gemm_blocks), else 2.
  const int64_t step = winograd_gemm512_on() ? 4 : 2, units = (q.ocb + step - 1) / step;
  for (int64_t t0 = 0; t0 < tiles; t0 += tb) {
    const int64_t nt = std::min(tb, tiles - t0);
    const int64_t vps = point_stride(nt * q.c8), mps = point_stride(nt * q.oc8);
    parallel_for(nt * q.cb, 40 * q.p, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        input_tile<M>(q, x, t0 + i / q.cb, i % q.cb, v + i / q.cb * q.c8, vps);
    });
    parallel_for(q.p * units, nt * q.c8 * kLanes * step, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t pt = i / units, ob = i % units * step;
        gemm_blocks(v + pt * vps, u + pt * q.oc8 * q.c8 + ob * q.c8 * kLanes,
                    mm + pt * mps + ob * kLanes, nt, ob, std::min(ob + step, q.ocb), q);
      }
    });
    parallel_for(nt * q.ocb, 40 * q.p, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / q.ocb, ob = i % q.ocb;
        output_tile<M>(q, mm + t * q.oc8 + ob * kLanes, mps, t0 + t, ob, bias8, residual, y, act);
      }
    });
  }
}

#endif  // MYCEL_WINOGRAD_AVX2

}  // namespace

bool winograd_fits(DType dtype, const WindowGeom& g) {
  return MYCEL_WINOGRAD_AVX2 && dtype == DType::float32 && g.groups == 1 && g.kh == 3 &&
         g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.pt <= 2 && g.pb <= 2 &&
         g.pl <= 2 && g.pr <= 2 && g.c >= 16 && g.oc >= 16 && g.oh >= 1 && g.ow >= 1;
}

int winograd_forced() { return env_override(); }

int winograd_tile(DType dtype, const WindowGeom& g) {
  if (!winograd_fits(dtype, g) || channel_block() != kLanes) return 0;
  if (const int forced = env_override(); forced >= 0) return forced;
  const int64_t side = std::min(g.oh, g.ow);
  struct Rule {
    long f4 = 10, f2 = 6, max_mib = kMaxWeightMiB;  // smallest sides, largest weights
  };
  static const Rule rule = [] {  // a measuring aid: MYCEL_WINOGRAD_RULE="f4,f2,mib"
    Rule r;
    if (const char* s = std::getenv("MYCEL_WINOGRAD_RULE"))
      std::sscanf(s, "%ld,%ld,%ld", &r.f4, &r.f2, &r.max_mib);
    return r;
  }();
  // Transformed weights past this size stream from memory at every call and the GEMM waits on
  // them (ImageNet ResNet-18's 512 channels at 7x7: F(2x2) 16.7 MB, slower than oneDNN).
  const int64_t pairs = ((g.c + 7) / 8) * ((g.oc + 7) / 8) * 64 * int64_t{sizeof(float)};
  if (side >= rule.f4 && 36 * pairs <= (rule.max_mib << 20)) return 4;
  if (side >= rule.f2 && 16 * pairs <= (rule.max_mib << 20)) return 2;
  return 0;
}

int winograd_tile_for(DType dtype, const WindowGeom& g, const KernelParams* params, bool has_slot) {
  if (!has_slot || !params || !params->const_weights || !params->src_blocked ||
      !params->dst_blocked)
    return 0;
  for (size_t k = 0; k < params->post_ops.size(); ++k) {
    const PostOp::Kind kind = params->post_ops[k].kind;
    // A leading add is a residual of y's shape (graph mode's fuse_post_ops.cc).
    if (kind != PostOp::Kind::kRelu && kind != PostOp::Kind::kRelu6 &&
        !(k == 0 && kind == PostOp::Kind::kAddRow))
      return 0;
  }
  return winograd_tile(dtype, g);
}

WinogradWeights winograd_weights(const Tensor& w, const WindowGeom& g, int m) {
  MYCEL_CHECK(m == 2 || m == 4, ValueError, "[conv2d] Winograd tile must be 2 or 4, got ", m);
  MYCEL_CHECK(w.dtype() == DType::float32 && w.ndim() == 4 && w.shape()[0] == g.oc &&
                  w.shape()[1] == g.c && w.shape()[2] == 3 && w.shape()[3] == 3,
              ValueError, "[conv2d] Winograd weights must be float32 (", g.oc, ", ", g.c,
              ", 3, 3), got ", dtype_name(w.dtype()), shape_str(w.shape()));
  const int a = m + 2;
  const double(*gm)[3] = m == 4 ? kG4 : kG2;
  WinogradWeights r;
  r.m = m;
  r.c8 = (g.c + kLanes - 1) / kLanes * kLanes;
  r.oc8 = (g.oc + kLanes - 1) / kLanes * kLanes;
  r.u = Tensor::zeros({a * a, r.oc8, r.c8}, DType::float32);
  const float* src = w.data<float>();
  float* u = r.u.data<float>();
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t c = 0; c < g.c; ++c) {
      const float* k = src + (o * g.c + c) * 9;
      double gk[6][3];  // G k
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < 3; ++j)
          gk[i][j] = gm[i][0] * k[j] + gm[i][1] * k[3 + j] + gm[i][2] * k[6 + j];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) {  // (G k) G^T
          const double v = gk[i][0] * gm[j][0] + gk[i][1] * gm[j][1] + gk[i][2] * gm[j][2];
          const int64_t pt = i * a + j;
          const int64_t pair = o / 16, width = pair * 16 + 16 <= r.oc8 ? 16 : 8;
          u[pt * r.oc8 * r.c8 + pair * 16 * r.c8 + c * width + o % 16] = static_cast<float>(v);
        }
    }
  return r;
}

void winograd_weights_into(const float* w, const WindowGeom& g, int m, bool flip,
                           WinogradWeights& r) {
  MYCEL_CHECK(m == 2 || m == 4, ValueError, "[conv2d] Winograd tile must be 2 or 4, got ", m);
  const int a = m + 2;
  const double(*gd)[3] = m == 4 ? kG4 : kG2;
  float gm[6][3];
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < 3; ++j) gm[i][j] = static_cast<float>(gd[i][j]);
  r.m = m;
  r.c8 = (g.c + kLanes - 1) / kLanes * kLanes;
  r.oc8 = (g.oc + kLanes - 1) / kLanes * kLanes;
  const int64_t need = a * a * r.oc8 * r.c8;
  if (!r.u.defined() || r.u.numel() < need) r.u = Tensor::empty({need}, DType::float32);
  float* u = r.u.data<float>();
  const int64_t oc16 = (r.oc8 + 15) / 16 * 16, c8 = r.c8, oc8 = r.oc8;
  // Per input channel c: its 9 taps for every output channel, o innermost (zero past g.oc and for
  // the padding channels past g.c), then U for 16 output channels at a time; U's rows of one point
  // and one pair of 8-channel blocks are contiguous in c, 16 (or, for the last odd block, 8) wide.
  parallel_for(c8, 400 * oc16, [&](int64_t s, int64_t e) {
    thread_local std::vector<float> kbuf;
    kbuf.assign(static_cast<size_t>(9 * oc16), 0.0f);
    for (int64_t c = s; c < e; ++c) {
      for (int64_t o = 0; o < oc16; ++o)
        for (int t = 0; t < 9; ++t)
          kbuf[t * oc16 + o] = c >= g.c || o >= g.oc ? 0.0f
                               : flip                ? w[(c * g.oc + o) * 9 + (8 - t)]
                                                     : w[(o * g.c + c) * 9 + t];
      for (int64_t pair = 0; pair * 16 < oc8; ++pair) {
        const float* k = kbuf.data() + pair * 16;
        const int64_t width = pair * 16 + 16 <= oc8 ? 16 : 8;
        float gk[6][3][16];  // G k, 16 output channels per entry
        for (int i = 0; i < a; ++i)
          for (int j = 0; j < 3; ++j)
            for (int l = 0; l < 16; ++l)
              gk[i][j][l] = gm[i][0] * k[j * oc16 + l] + gm[i][1] * k[(3 + j) * oc16 + l] +
                            gm[i][2] * k[(6 + j) * oc16 + l];
        for (int i = 0; i < a; ++i)
          for (int j = 0; j < a; ++j) {  // (G k) G^T
            float v[16];
            for (int l = 0; l < 16; ++l)
              v[l] = gk[i][0][l] * gm[j][0] + gk[i][1][l] * gm[j][1] + gk[i][2][l] * gm[j][2];
            float* dst = u + (i * a + j) * oc8 * c8 + pair * 16 * c8 + c * width;
            std::memcpy(dst, v, static_cast<size_t>(width) * sizeof(float));
          }
      }
    }
  });
}

void conv2d_winograd(const float* x, const WinogradWeights& u, const float* bias,
                     const float* residual, float* y, const WindowGeom& g, WinogradAct act) {
#if MYCEL_WINOGRAD_AVX2
  MYCEL_CHECK((u.m == 2 || u.m == 4) && u.c8 == (g.c + 7) / 8 * 8 && u.oc8 == (g.oc + 7) / 8 * 8 &&
                  g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
                  g.groups == 1 && g.oh == g.h + g.pt + g.pb - 2 && g.ow == g.w + g.pl + g.pr - 2,
              RuntimeError, "[conv2d] Winograd weights or geometry do not fit this convolution");
  Plan q{};
  q.m = u.m, q.a = u.m + 2, q.p = q.a * q.a;
  q.h = g.h, q.w = g.w, q.oh = g.oh, q.ow = g.ow, q.pt = g.pt, q.pl = g.pl;
  q.th = (g.oh + q.m - 1) / q.m, q.tw = (g.ow + q.m - 1) / q.m, q.tiles_per_img = q.th * q.tw;
  q.c8 = u.c8, q.oc8 = u.oc8, q.cb = u.c8 / kLanes, q.ocb = u.oc8 / kLanes;
  // Bias padded to whole blocks (zeros keep y's channel padding zero).
  float* bias8 = static_cast<float*>(dnnl_util::staging_data(2, q.oc8 * sizeof(float)));
  std::memset(bias8, 0, q.oc8 * sizeof(float));
  if (bias) std::memcpy(bias8, bias, g.oc * sizeof(float));
  const float* uw = u.u.data<float>();
  if (q.m == 4)
    run<4>(q, x, uw, bias8, residual, y, g, act);
  else
    run<2>(q, x, uw, bias8, residual, y, g, act);
#else
  (void)x, (void)u, (void)bias, (void)residual, (void)y, (void)g, (void)act;
  MYCEL_THROW(RuntimeError, "[conv2d] Winograd needs an AVX2 + FMA build");
#endif
}

}  // namespace mycel::cpu
