#include "mycel/kernels/cpu/conv_weight_reorder.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "mycel/core/cpu_features.h"

#if MYCEL_AVX512_KERNELS
#include <immintrin.h>
#endif

namespace mycel::cpu {
namespace {

// Elements per chunk at most: its offset table (4 bytes each) and the tail's rounded chunk
// (2 bytes each) stay in L1 with room for the data passing through.
constexpr int64_t kChunk = 4096;

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
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
// dst[k] = bf16 of the sum of the T partials at k (k < n), rounded as vcvtneps2bf16 rounds
// (nearest even, subnormals flushed, as oneDNN's f32 -> bf16 reorder on AVX512-BF16).
void sum_round_chunk(const float* const* p, int T, int64_t off, int64_t n, uint16_t* dst) {
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 m = n - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - k)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, p[0] + off + k);
    for (int u = 1; u < T; ++u) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, p[u] + off + k));
    _mm256_mask_storeu_epi16(dst + k, m, (__m256i)_mm512_cvtneps_pbh(v));
  }
}
// weights_to_blocked by runs (WeightBlocking::runs_): per run, each 16 lanes' pairs gathered as
// the low halves of 32-bit loads, then interleaved.
void runs_to_blocked(const WeightBlocking& b, const uint16_t* plain, uint16_t* blocked,
                     int threads) {
  const __m512i lanes = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(b.lane_stride_));
  const __m512i lanes_hi = _mm512_add_epi32(lanes, _mm512_set1_epi32(b.pair_stride_));
  const int64_t L = b.run_lanes_, nl = static_cast<int>(b.run_outer_.size());
  const int64_t span = (L - 1) * b.lane_stride_ + b.pair_stride_;  // a run's last element
  auto run = [&](int64_t r0, int64_t r1) {
    int64_t digit[16], po = 0, bo = 0;
    for (int64_t l = nl - 1, r = r0; l >= 0; --l) {
      const WeightBlocking::RunLevel& v = b.run_outer_[l];
      digit[l] = r % v.count;
      r /= v.count;
      po += digit[l] * v.plain_stride;
      bo += digit[l] * v.blocked_stride;
    }
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* s = plain + po;
      uint16_t* d = blocked + bo;
      if (po + span + 1 < b.plain_elems_) {
        for (int64_t j = 0; j < L; j += 16) {
          const __m512i lo = _mm512_i32gather_epi32(lanes, s + j * b.lane_stride_, 2);
          const __m512i hi = _mm512_i32gather_epi32(lanes_hi, s + j * b.lane_stride_, 2);
          _mm512_storeu_si512(d + 2 * j, _mm512_mask_blend_epi16(0xAAAAAAAA, lo,
                                                                 _mm512_slli_epi32(hi, 16)));
        }
      } else {  // the gathers read 4 bytes at each element: not at the buffer's last one
        for (int64_t l = 0; l < L; ++l)
          for (int p = 0; p < 2; ++p) d[2 * l + p] = s[l * b.lane_stride_ + p * b.pair_stride_];
      }
      for (int64_t l = nl - 1; l >= 0; --l) {
        const WeightBlocking::RunLevel& v = b.run_outer_[l];
        if (++digit[l] < v.count) {
          po += v.plain_stride;
          bo += v.blocked_stride;
          break;
        }
        digit[l] = 0;
        po -= (v.count - 1) * v.plain_stride;
        bo -= (v.count - 1) * v.blocked_stride;
      }
    }
  };
  const int64_t n = b.run_count_;
  if (threads <= 1 || n < 2 || omp_in_parallel()) return run(0, n);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t per = (n + T - 1) / T;
    const int64_t r0 = std::min<int64_t>(n, t * per), r1 = std::min<int64_t>(n, r0 + per);
    if (r0 < r1) run(r0, r1);
  }
}
#pragma GCC pop_options
#endif

}  // namespace

std::unique_ptr<WeightBlocking> WeightBlocking::make(const dnnl::memory::desc& md) {
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
  if (expect != padded ||
      static_cast<int64_t>(md.get_size()) !=
          padded * static_cast<int64_t>(dnnl::memory::data_type_size(md.data_type())))
    return nullptr;
  for (const Blocked& b : all)
    if (b.level.count > 1) levels.push_back(b.level);
  // The chunk: the innermost levels up to kChunk elements, the last one split where it has a
  // divisor that fits (AcdB32a2b's B level of 256 for 512 channels: 8 of it in a 512 chunk).
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
  std::vector<int32_t> idx(chunk);
  for (int64_t k = 0; k < chunk; ++k) idx[k] = static_cast<int32_t>(k);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int32_t a, int32_t b) { return w->chunk_plain_[a] < w->chunk_plain_[b]; });
  for (int32_t k : idx) {
    w->order_plain_.push_back(w->chunk_plain_[k]);
    w->order_k_.push_back(static_cast<uint16_t>(k));
  }
  // The runs: the two innermost levels, the others by plain stride.
  if (!w->padded_ && levels.size() >= 2) {
    std::vector<Blocked> rest;
    for (const Blocked& v : all)
      if (v.level.count > 1) rest.push_back(v);
    const Blocked pair = rest.back(), lane = rest[rest.size() - 2];
    rest.resize(rest.size() - 2);
    if (pair.level.count == 2 && lane.level.count % 16 == 0 && pair.stride == 1 &&
        lane.stride == 2 && rest.size() <= 16) {
      std::stable_sort(rest.begin(), rest.end(), [](const Blocked& a, const Blocked& b) {
        return a.level.plain_stride > b.level.plain_stride;
      });
      w->runs_ = true;
      w->run_count_ = 1;
      for (const Blocked& v : rest) {
        w->run_outer_.push_back({v.level.count, v.level.plain_stride, v.stride});
        w->run_count_ *= v.level.count;
      }
      w->run_lanes_ = lane.level.count;
      w->lane_stride_ = static_cast<int32_t>(lane.level.plain_stride);
      w->pair_stride_ = static_cast<int32_t>(pair.level.plain_stride);
    }
  }
  return w;
}

void weights_to_blocked(const WeightBlocking& b, const uint16_t* plain, uint16_t* blocked,
                        int threads) {
#if MYCEL_AVX512_KERNELS
  if (b.runs_ && cpu_has_avx512()) return runs_to_blocked(b, plain, blocked, threads);
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

void sum_blocked_to_bf16(const WeightBlocking& b, const float* const* partials, int T,
                         uint16_t* plain, int threads) {
#if MYCEL_AVX512_KERNELS
  const int64_t chunk = b.chunk_;
  const int32_t* tbl = b.chunk_plain_.data();
  for_chunks(b, threads, [&](int64_t q0, int64_t q1) {
    alignas(64) uint16_t r[kChunk];
    Cursor c(b, q0);
    for (int64_t q = q0; q < q1; ++q, c.next()) {
      sum_round_chunk(partials, T, q * chunk, chunk, r);
      uint16_t* dst = plain + c.plain;
      if (c.full()) {
        const int32_t* op = b.order_plain_.data();
        const uint16_t* ok = b.order_k_.data();
        for (int64_t m = 0; m < chunk; ++m) dst[op[m]] = r[ok[m]];
      } else {
        for (int64_t k = 0; k < chunk; ++k)
          if (c.inside(k)) dst[tbl[k]] = r[k];
      }
    }
  });
#else
  (void)b, (void)partials, (void)T, (void)plain, (void)threads;
#endif
}

bool conv_weight_loops_enabled() {
  const char* v = std::getenv("MYCEL_CONV_WEIGHT_LOOPS");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace mycel::cpu
