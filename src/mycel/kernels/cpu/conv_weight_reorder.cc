#include "mycel/kernels/cpu/conv_weight_reorder.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "mycel/core/cpu_features.h"
#include "mycel/kernels/cpu/transpose8x8.h"

#if MYCEL_AVX512_KERNELS
#include <immintrin.h>
#endif

namespace mycel::cpu {
namespace {

using tag = dnnl::memory::format_tag;

// Elements per chunk at most: its offset table (4 bytes each) and the tail's rounded chunk
// (2 bytes each) stay in L1 with room for the data passing through.
constexpr int64_t kChunk = 1024;

// Runs fn(q0, q1) over b's chunks [0, outer_count_) split in contiguous ranges on `threads`
// threads (1: the calling thread).
template <class Fn>
void for_chunks(const WeightBlocking& b, int threads, Fn&& fn) {
  const int64_t n = b.outer_count_;
  if (threads <= 1 || n < 2 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t per = (n + T - 1) / T;
    const int64_t q0 = std::min<int64_t>(n, t * per), q1 = std::min<int64_t>(n, q0 + per);
    if (q0 < q1) fn(q0, q1);
  }
}

// The outer levels' digits of one chunk, counted through chunk by chunk: the chunk's plain
// offset and its logical index per dim.
struct Cursor {
  const WeightBlocking& b;
  int64_t digit[16] = {};
  int64_t plain = 0, logical[5] = {};

  Cursor(const WeightBlocking& w, int64_t q) : b(w) {
    for (int l = static_cast<int>(b.outer_.size()) - 1; l >= 0; --l) {
      const WeightBlocking::Level& v = b.outer_[l];
      digit[l] = q % v.count;
      q /= v.count;
      plain += digit[l] * v.plain_stride;
      logical[v.dim] += digit[l] * v.weight;
    }
  }
  void next() {
    for (int l = static_cast<int>(b.outer_.size()) - 1; l >= 0; --l) {
      const WeightBlocking::Level& v = b.outer_[l];
      if (++digit[l] < v.count) {
        plain += v.plain_stride;
        logical[v.dim] += v.weight;
        return;
      }
      digit[l] = 0;
      plain -= (v.count - 1) * v.plain_stride;
      logical[v.dim] -= (v.count - 1) * v.weight;
    }
  }
  // Whether every element of the chunk lies inside the dims (none in a padded edge).
  bool full() const {
    if (!b.padded_) return true;
    for (int d = 0; d < b.ndims_; ++d)
      if (logical[d] + b.chunk_max_[d] >= b.dims_[d]) return false;
    return true;
  }
  // Whether the chunk's element k lies inside the dims.
  bool inside(int64_t k) const {
    const int32_t* li = &b.chunk_logical_[k * b.ndims_];
    for (int d = 0; d < b.ndims_; ++d)
      if (logical[d] + li[d] >= b.dims_[d]) return false;
    return true;
  }
};

#if MYCEL_AVX512_KERNELS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
// dst[k] = bf16 of the sum of the T partials at k (k < n), rounded as vcvtneps2bf16 rounds
// (nearest even, subnormals flushed, as oneDNN's f32 -> bf16 reorder on AVX512-BF16).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"))) void sum_round_chunk(
    const float* const* p, int T, int64_t off, int64_t n, uint16_t* dst) {
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 m = n - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - k)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, p[0] + off + k);
    for (int u = 1; u < T; ++u) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, p[u] + off + k));
    _mm256_mask_storeu_epi16(dst + k, m, (__m256i)_mm512_cvtneps_pbh(v));
  }
}

// 8 rows of 8 32-bit units -> their columns (out[k] = unit k of each row): transpose8x8.h's.
inline void transpose8x8(const __m256i* in, __m256i* out) {
  mycel::cpu::transpose8x8(reinterpret_cast<const __m256*>(in), reinterpret_cast<__m256*>(out));
}

// z[0..5] := the seg (<= 192) 16-bit words at s, the lanes past seg zero.
inline void load_segment(const uint16_t* s, int64_t seg, __m512i* z) {
#pragma GCC unroll 6
  for (int k = 0; k < 6; ++k) {
    const int64_t left = seg - 32 * k;
    const __mmask32 m = left >= 32 ? ~__mmask32(0) : left > 0 ? (__mmask32(1) << left) - 1 : 0;
    z[k] = _mm512_maskz_loadu_epi16(m, s + 32 * k);
  }
}

// gather_words' tables for nv output vectors: lane `lane` of vector v takes segment word
// source(v, lane) (-1: none, the lane stays zero) from the register pair p holding it.
template <class Source>
void gather_tables(int64_t nv, __m512i (*idx)[3], __mmask32 (*take)[3], Source source) {
  for (int64_t v = 0; v < nv; ++v)
    for (int p = 0; p < 3; ++p) {
      alignas(64) uint16_t ix[32];
      uint32_t m = 0;
      for (int lane = 0; lane < 32; ++lane) {
        const int64_t src = source(v, lane);
        ix[lane] = static_cast<uint16_t>(src < 0 ? 0 : src & 63);
        if (src >= 0 && src / 64 == p) m |= 1u << lane;
      }
      idx[v][p] = _mm512_load_si512(ix);
      take[v][p] = m;
    }
}

// 32 words picked from the segment z[0..5]: lane j from the pair (z[2p], z[2p + 1]) that take[p]
// marks, at index idx[p][j].
inline __m512i gather_words(const __m512i* z, const __m512i* idx, const __mmask32* take) {
  __m512i o = _mm512_maskz_permutex2var_epi16(take[0], z[0], idx[0], z[1]);
  o = _mm512_mask_mov_epi16(o, take[1], _mm512_permutex2var_epi16(z[2], idx[1], z[3]));
  return _mm512_mask_mov_epi16(o, take[2], _mm512_permutex2var_epi16(z[4], idx[2], z[5]));
}

// weights_to_blocked by tiles (WeightBlocking::tile_rows_) of N output channels x 16 input
// channels, each row's 16 x khw words read once: (1) per row, the 16 x khw matrix of its segment
// transposed to khw x 16 by word permutes (at most 3 pairs of registers: khw <= 12); (2) per
// kernel position, the input channel pairs are 32-bit units and 8 rows x 8 units are transposed
// into the destination's [pair][row] order. On one thread of the Zen 4 VM (minima, bench/
// bench_conv_weight_reorder.cc): 256x256x3x3 into AcdB32a2b 0.11 ms against oneDNN's 0.63
// (jit:uni) and the generic walk's 0.27, 512x512x3x3 0.7 against 2.5.
void tiles_to_blocked(const WeightBlocking& b, const uint16_t* plain, uint16_t* blocked,
                      int threads) {
  const int64_t N = b.tile_rows_, O = b.dims_[0], I = b.dims_[1], khw = b.khw_;
  const int64_t seg = 16 * khw, nv = (khw + 1) / 2;  // row segment words, output vectors per row
  // Per output vector v (kernel positions 2v, 2v+1 x 16 channels) and source register pair p
  // (words [64p, 64p + 64)): the word indices and the lanes that pair supplies.
  __m512i idx[6][3];
  __mmask32 take[6][3];
  gather_tables(nv, idx, take, [&](int64_t v, int lane) {
    const int64_t pos = 2 * v + lane / 16, ch = lane % 16;
    return pos < khw ? ch * khw + pos : int64_t{-1};
  });
  const int64_t tiles_i = I / 16, tiles = (O / N) * tiles_i;
  auto run = [&](int64_t t0, int64_t t1) {
    alignas(64) uint16_t tile[64 * 16 * 12];  // [row][position][16 channels]
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t ob = t / tiles_i, i0 = (t % tiles_i) * 16;
      for (int64_t r = 0; r < N; ++r) {
        const uint16_t* s = plain + ((ob * N + r) * I + i0) * khw;
        __m512i z[6];
        load_segment(s, seg, z);
        uint16_t* d = tile + r * seg;
        for (int64_t v = 0; v < nv; ++v) {
          const __m512i o = gather_words(z, idx[v], take[v]);
          const __mmask32 out = 2 * v + 1 < khw ? ~__mmask32(0) : __mmask32(0xFFFF);
          _mm512_mask_storeu_epi16(d + 32 * v, out, o);
        }
      }
      // dst word ((ob * khw + pos) * I/2 + pair) * 2N + 2 * row + (channel & 1)
      for (int64_t pos = 0; pos < khw; ++pos) {
        uint16_t* d = blocked + ((ob * khw + pos) * (I / 2) + i0 / 2) * 2 * N;
        for (int64_t r = 0; r < N; r += 8) {
          __m256i in[8], out[8];
#pragma GCC unroll 8
          for (int k = 0; k < 8; ++k)
            in[k] = _mm256_load_si256(
                reinterpret_cast<const __m256i*>(tile + (r + k) * seg + pos * 16));
          transpose8x8(in, out);
#pragma GCC unroll 8
          for (int k = 0; k < 8; ++k)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k * 2 * N + 2 * r), out[k]);
        }
      }
    }
  };
  if (threads <= 1 || tiles < 2 || omp_in_parallel()) return run(0, tiles);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t per = (tiles + T - 1) / T;
    const int64_t a = std::min<int64_t>(tiles, t * per), e = std::min<int64_t>(tiles, a + per);
    if (a < e) run(a, e);
  }
}

// 16 rows of 16 words -> their columns (out[k] = word k of each row).
inline void transpose16x16_epi16(const __m256i* r, __m256i* out) {
  __m256i a[16], q[16], c[16];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {  // pairs of rows: 32-bit units, columns 0-3 | 4-7 per lane
    a[2 * k] = _mm256_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm256_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
  }
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {  // quads of rows: 64-bit units, two columns per register
    q[4 * m] = _mm256_unpacklo_epi32(a[4 * m], a[4 * m + 2]);
    q[4 * m + 1] = _mm256_unpackhi_epi32(a[4 * m], a[4 * m + 2]);
    q[4 * m + 2] = _mm256_unpacklo_epi32(a[4 * m + 1], a[4 * m + 3]);
    q[4 * m + 3] = _mm256_unpackhi_epi32(a[4 * m + 1], a[4 * m + 3]);
  }
#pragma GCC unroll 2
  for (int g = 0; g < 2; ++g)  // eights of rows: one column per register lane
#pragma GCC unroll 4
    for (int x = 0; x < 4; ++x) {
      c[8 * g + 2 * x] = _mm256_unpacklo_epi64(q[8 * g + x], q[8 * g + 4 + x]);
      c[8 * g + 2 * x + 1] = _mm256_unpackhi_epi64(q[8 * g + x], q[8 * g + 4 + x]);
    }
#pragma GCC unroll 8
  for (int o = 0; o < 8; ++o) {
    out[o] = _mm256_permute2x128_si256(c[o], c[8 + o], 0x20);
    out[o + 8] = _mm256_permute2x128_si256(c[o], c[8 + o], 0x31);
  }
}

// sum_blocked_to_bf16 from ABcd16b16a (WeightBlocking::tail16_), by tiles of 16 output x 16 input
// channels (khw x 256 floats per partial, contiguous): the partials added and rounded in that
// order; per kernel position the 16 x 16 [input][output] words transposed; per output channel
// its khw x 16 [position][input] words permuted into the row's 16 x khw (oihw) and stored whole.
// The generic walk's writes (one word at a time, 16 rows apart) took half of its time.
// Share `part` of `parts` of the tiles, on the calling thread.
void tail16_to_plain(const WeightBlocking& b, const float* const* partials, int T, uint16_t* plain,
                     int part, int parts) {
  const int64_t O = b.dims_[0], I = b.dims_[1], khw = b.khw_, seg = 16 * khw;
  const int64_t nv = (seg + 31) / 32;  // output vectors per row
  // Per output vector v (row words [32v, 32v + 32): channel w / khw, position w % khw) and
  // source register pair p (words [64p, 64p + 64) of [position][channel]).
  __m512i idx[6][3];
  __mmask32 take[6][3];
  gather_tables(nv, idx, take, [&](int64_t v, int lane) {
    const int64_t w = 32 * v + lane;
    return w < seg ? (w % khw) * 16 + w / khw : int64_t{-1};
  });
  const int64_t tiles_i = I / 16, tiles = (O / 16) * tiles_i;
  auto run = [&](int64_t t0, int64_t t1) {
    alignas(64) uint16_t r[12 * 256];   // [position][input][output]
    alignas(64) uint16_t tt[16 * 192];  // [output][position][input]
    for (int64_t t = t0; t < t1; ++t) {
      sum_round_chunk(partials, T, t * khw * 256, khw * 256, r);
      for (int64_t pos = 0; pos < khw; ++pos) {
        __m256i in[16], out[16];
#pragma GCC unroll 16
        for (int k = 0; k < 16; ++k)
          in[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(r + pos * 256 + k * 16));
        transpose16x16_epi16(in, out);
#pragma GCC unroll 16
        for (int k = 0; k < 16; ++k)
          _mm256_store_si256(reinterpret_cast<__m256i*>(tt + k * seg + pos * 16), out[k]);
      }
      const int64_t ob = t / tiles_i, i0 = (t % tiles_i) * 16;
      for (int64_t o = 0; o < 16; ++o) {
        const uint16_t* s = tt + o * seg;
        __m512i z[6];
        load_segment(s, seg, z);
        uint16_t* d = plain + ((ob * 16 + o) * I + i0) * khw;
        for (int64_t v = 0; v < nv; ++v) {
          const __m512i x = gather_words(z, idx[v], take[v]);
          const int64_t left = seg - 32 * v;
          _mm512_mask_storeu_epi16(d + 32 * v,
                                   left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1, x);
        }
      }
    }
  };
  const int64_t per = (tiles + parts - 1) / parts;
  const int64_t a = std::min<int64_t>(tiles, part * per), e = std::min<int64_t>(tiles, a + per);
  if (a < e) run(a, e);
}

#pragma GCC pop_options
#endif

}  // namespace

std::unique_ptr<WeightBlocking> WeightBlocking::make(const dnnl::memory::desc& md,
                                                     bool tiles_only) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims < 4 || d.ndims > 5 || d.offset0 != 0 ||
      d.extra.flags != 0)
    return nullptr;
  const dnnl_blocking_desc_t& bd = d.format_desc.blocking;
  auto w = std::make_unique<WeightBlocking>();
  const int n = d.ndims;
  w->ndims_ = n;
  int64_t plain_stride[5], block[5];
  int64_t s = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (d.dims[i] <= 0 || d.padded_dims[i] < d.dims[i] || d.padded_offsets[i] != 0) return nullptr;
    w->dims_[i] = d.dims[i];
    w->padded_ = w->padded_ || d.padded_dims[i] != d.dims[i];
    plain_stride[i] = s;
    s *= d.dims[i];
    block[i] = 1;
  }
  w->plain_elems_ = s;
  if (s >= (int64_t{1} << 31)) return nullptr;  // int32 offsets in the chunk table
  // Levels with their strides in the blocked layout: each dim's outer index, then the inner
  // blocks in their order (the last one innermost).
  struct Blocked {
    Level level;
    int64_t stride;
  };
  std::vector<Blocked> outer, inner;
  for (int k = 0; k < bd.inner_nblks; ++k) {
    const int dim = static_cast<int>(bd.inner_idxs[k]);
    if (dim < 0 || dim >= n || bd.inner_blks[k] <= 0) return nullptr;
    block[dim] *= bd.inner_blks[k];
  }
  for (int i = 0; i < n; ++i) {
    if (d.padded_dims[i] % block[i] != 0) return nullptr;
    const int64_t count = d.padded_dims[i] / block[i];
    if (count > 1)
      outer.push_back({{i, count, plain_stride[i] * block[i], block[i]}, bd.strides[i]});
  }
  std::stable_sort(outer.begin(), outer.end(),
                   [](const Blocked& a, const Blocked& b) { return a.stride > b.stride; });
  int64_t after = 1;  // inner elements after block k
  for (int k = bd.inner_nblks - 1; k >= 0; --k) {
    const int dim = static_cast<int>(bd.inner_idxs[k]);
    int64_t weight = 1;  // the dim's blocks after k
    for (int j = k + 1; j < bd.inner_nblks; ++j)
      if (bd.inner_idxs[j] == dim) weight *= bd.inner_blks[j];
    inner.insert(inner.begin(),
                 {{dim, bd.inner_blks[k], plain_stride[dim] * weight, weight}, after});
    after *= bd.inner_blks[k];
  }
  std::vector<Level> levels;
  std::vector<Blocked> all = outer;
  all.insert(all.end(), inner.begin(), inner.end());
  // Dense: each level's blocked stride is the product of the counts inside it.
  int64_t expect = 1;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->level.count == 1) continue;
    if (it->stride != expect) return nullptr;
    expect *= it->level.count;
  }
  int64_t padded = 1;
  for (int i = 0; i < n; ++i) padded *= d.padded_dims[i];
  w->blocked_elems_ = padded;
  if (expect != padded ||
      static_cast<int64_t>(md.get_size()) !=
          padded * static_cast<int64_t>(dnnl::memory::data_type_size(md.data_type())))
    return nullptr;
  const bool half = md.data_type() == dnnl::memory::data_type::bf16 ||
                    md.data_type() == dnnl::memory::data_type::f16;
  // (the tile kernels need AVX-512, the tail's AVX512-BF16: without them, the generic walk)
  if (n == 4 && !w->padded_ && half && d.dims[1] % 16 == 0 && d.dims[2] * d.dims[3] <= 12 &&
      cpu_has_avx512()) {
    const tag tags[] = {tag::AcdB16a2b, tag::AcdB32a2b, tag::AcdB48a2b, tag::AcdB64a2b};
    for (int k = 0; k < 4; ++k)
      if (d.dims[0] % (16 * (k + 1)) == 0 &&
          md == dnnl::memory::desc(md.dims(), md.data_type(), tags[k]))
        w->tile_rows_ = 16 * (k + 1);
    w->khw_ = d.dims[2] * d.dims[3];
  }
  if (n == 4 && !w->padded_ && md.data_type() == dnnl::memory::data_type::f32 &&
      d.dims[0] % 16 == 0 && d.dims[1] % 16 == 0 && d.dims[2] * d.dims[3] <= 12 &&
      md == dnnl::memory::desc(md.dims(), md.data_type(), tag::ABcd16b16a) &&
      sum_blocked_to_bf16_available()) {
    w->tail16_ = true;
    w->khw_ = d.dims[2] * d.dims[3];
  }
  // (the tile paths need no chunk tables: a launch prepared per call, PyNative's, builds none)
  if (w->tile_rows_ || w->tail16_) return w;
  if (tiles_only) return nullptr;
  for (const Blocked& b : all)
    if (b.level.count > 1) levels.push_back(b.level);
  // The chunk: the innermost levels up to kChunk elements, the last one split where it has a
  // divisor that fits (a B level of 256 pairs: 4 of it in a chunk of 4 x 2 x 32 x 2).
  int64_t chunk = 1;
  size_t first = levels.size();  // the chunk's outermost level
  while (first > 0) {
    Level& v = levels[first - 1];
    if (chunk * v.count <= kChunk) {
      chunk *= v.count;
      --first;
      continue;
    }
    int64_t f = kChunk / chunk;
    while (f > 1 && v.count % f != 0) --f;
    if (f > 1) {
      Level in = v;
      in.count = f;
      v.count /= f;
      v.plain_stride *= f;
      v.weight *= f;
      levels.insert(levels.begin() + first, in);
      chunk *= f;
    }
    break;
  }
  if (chunk < 16 && first > 0) return nullptr;  // a level too long to split: not walked
  w->outer_.assign(levels.begin(), levels.begin() + first);
  if (w->outer_.size() > 16) return nullptr;
  for (const Level& v : w->outer_) w->outer_count_ *= v.count;
  w->chunk_ = chunk;
  w->chunk_plain_.resize(chunk);
  w->chunk_logical_.assign(chunk * n, 0);
  for (int64_t k = 0; k < chunk; ++k) {
    int64_t r = k, plain = 0;
    int32_t* li = &w->chunk_logical_[k * n];
    for (size_t l = levels.size(); l > first; --l) {
      const Level& v = levels[l - 1];
      const int64_t digit = r % v.count;
      r /= v.count;
      plain += digit * v.plain_stride;
      li[v.dim] += static_cast<int32_t>(digit * v.weight);
    }
    w->chunk_plain_[k] = static_cast<int32_t>(plain);
    for (int i = 0; i < n; ++i) w->chunk_max_[i] = std::max<int64_t>(w->chunk_max_[i], li[i]);
  }
  return w;
}

void weights_to_blocked(const WeightBlocking& b, const uint16_t* plain, uint16_t* blocked,
                        int threads) {
#if MYCEL_AVX512_KERNELS
  if (b.tile_rows_) return tiles_to_blocked(b, plain, blocked, threads);
#endif
  const int64_t chunk = b.chunk_;
  const int32_t* tbl = b.chunk_plain_.data();
  for_chunks(b, threads, [&](int64_t q0, int64_t q1) {
    Cursor c(b, q0);
    for (int64_t q = q0; q < q1; ++q, c.next()) {
      uint16_t* dst = blocked + q * chunk;
      const uint16_t* src = plain + c.plain;
      if (c.full()) {
        for (int64_t k = 0; k < chunk; ++k) dst[k] = src[tbl[k]];
      } else {
        for (int64_t k = 0; k < chunk; ++k) dst[k] = c.inside(k) ? src[tbl[k]] : uint16_t{0};
      }
    }
  });
}

bool sum_blocked_to_bf16_available() {
#if MYCEL_AVX512_KERNELS
  static const bool ok = [] {
    const auto isa = static_cast<int>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<int>(dnnl::cpu_isa::avx512_core_bf16);
    return cpu_has_avx512_bf16() && (isa & bf16) == bf16;
  }();
  return ok;
#else
  return false;
#endif
}

namespace {
// sum_blocked_to_bf16's share `part` of `parts` (0 <= part < parts), on the calling thread.
void sum_blocked_to_bf16_share(const WeightBlocking& b, const float* const* partials, int T,
                               uint16_t* plain, int part, int parts) {
#if MYCEL_AVX512_KERNELS
  if (b.tail16_) return tail16_to_plain(b, partials, T, plain, part, parts);
  const int64_t chunk = b.chunk_, n = b.outer_count_, per = (n + parts - 1) / parts;
  const int64_t q0 = std::min<int64_t>(n, part * per), q1 = std::min<int64_t>(n, q0 + per);
  if (q0 >= q1) return;
  const int32_t* tbl = b.chunk_plain_.data();
  alignas(64) uint16_t r[kChunk];
  Cursor c(b, q0);
  for (int64_t q = q0; q < q1; ++q, c.next()) {
    sum_round_chunk(partials, T, q * chunk, chunk, r);
    uint16_t* dst = plain + c.plain;
    if (c.full()) {
      for (int64_t k = 0; k < chunk; ++k) dst[tbl[k]] = r[k];
    } else {
      for (int64_t k = 0; k < chunk; ++k)
        if (c.inside(k)) dst[tbl[k]] = r[k];
    }
  }
#else
  (void)b, (void)partials, (void)T, (void)plain, (void)part, (void)parts;
#endif
}

}  // namespace

void sum_blocked_to_bf16(const WeightBlocking& b, const float* const* partials, int T,
                         uint16_t* plain, int threads) {
  if (threads <= 1 || omp_in_parallel())
    return sum_blocked_to_bf16_share(b, partials, T, plain, 0, 1);
#pragma omp parallel num_threads(threads)
  sum_blocked_to_bf16_share(b, partials, T, plain, omp_get_thread_num(), omp_get_num_threads());
}

bool conv_weight_loops_enabled() {
  const char* v = std::getenv("MYCEL_CONV_WEIGHT_LOOPS");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace mycel::cpu
