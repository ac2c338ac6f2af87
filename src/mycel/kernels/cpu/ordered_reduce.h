// The one summation order of a chain-into-reduction (the graph backend's fused_reduce), written
// once for its two runners: the interpreter (backend/fuse_reduce_te.cc runs the chain's
// EwProgram block by block and reduces each block here) and the generated kernel (te/elementwise.cc
// pastes this text, kOrderedReduceSource, into its source and reduces its chain's blocks with the
// same code). Both combine the same values in the same order, so they give the same bits, and the
// default mode may switch from one to the other mid-run (when the background compiler finishes)
// without a result depending on when that happened.
//
// The order: the reduced elements of one output, numbered r = 0, 1, ... in row-major order of the
// reduced axes, go to 16 partial results by r mod 16 (lane l takes r = l, l + 16, ... in that
// order, starting from the identity: 0 for a sum, -inf / +inf for max / min), then the lanes fold
// pairwise (l += l + 8, then + 4, + 2, + 1). 16 lanes are two AVX2 vectors or one AVX-512 vector
// of independent accumulators in a row reduction; a reduction over outer axes (a bias gradient's
// sum over the batch) vectorizes over the kept inner axis instead, each output's lanes in memory.
// Each output is computed by one thread, so the thread count changes nothing. Only adds and
// compares: no contraction or vector width can change a bit (neither side uses -ffast-math).
//
// The work is split in slices, the indices of the leading kept axis (one slice when the first
// axis is reduced): a thread takes a range of slices, and the chain is computed in blocks of
// kOrBlock consecutive elements (across rows and slices), so short rows cost no call each. With
// fewer slices than threads and rows reduced into kept columns (a bias gradient over the batch),
// the threads split the columns instead (or_run_share), each computing its columns of every row.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#define MYCEL_ORDERED_REDUCE_DEFINE(...) \
  __VA_ARGS__                            \
  inline constexpr const char* kOrderedReduceSource = #__VA_ARGS__;

namespace mycel::cpu::ored {

MYCEL_ORDERED_REDUCE_DEFINE(
    // Computes the chain's values at flat elements [start, start + len) (len <= kOrBlock) into dst.
    typedef void (*or_chain_fn)(void* ctx, int64_t start, int64_t len, float* dst);

    constexpr int64_t kOrBlock = 512;

    // Partial results per output (a power of 2).
    constexpr int kOrLanes = 16;

    // K: 0 sum, 1 max, 2 min (NaN propagating: a NaN lane stays NaN, a NaN value wins).
    template <int K> inline float or_identity() {
      return K == 0 ? 0.0f
                    : (K == 1 ? -std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::infinity());
    }

    template <int K>
    inline float or_comb(float a, float v) {
      if (K == 0) return a + v;
      const bool take = K == 1 ? (v != v || v > a) : (v != v || v < a);
      return a != a ? a : (take ? v : a);
    }

    // The shape as groups of adjacent axes that are all reduced or all kept (axes of extent 1
    // dropped), less the leading kept group, whose indices are the slices.
    struct or_plan {
      int ng;
      int64_t ext[32];
      unsigned char red[32];
      int64_t lead;   // slices: the leading kept group's extent (1 when the first is reduced)
      int64_t slice;  // elements per slice
      int64_t outs;   // outputs per slice
    };

    inline or_plan or_make_plan(int rank, const int64_t* dims, const unsigned char* reduced) {
      or_plan p;
      p.ng = 0;
      p.lead = 1;
      for (int d = 0; d < rank; ++d) {
        if (dims[d] == 1) continue;
        const unsigned char r = reduced[d] ? 1 : 0;
        if (p.ng > 0 && p.red[p.ng - 1] == r) {
          p.ext[p.ng - 1] *= dims[d];
        } else {
          p.ext[p.ng] = dims[d];
          p.red[p.ng] = r;
          ++p.ng;
        }
      }
      if (p.ng > 0 && !p.red[0]) {
        p.lead = p.ext[0];
        for (int g = 1; g < p.ng; ++g) {
          p.ext[g - 1] = p.ext[g];
          p.red[g - 1] = p.red[g];
        }
        --p.ng;
      }
      if (p.ng == 0) {  // nothing left to reduce: one element per slice
        p.ext[0] = 1;
        p.red[0] = 0;
        p.ng = 1;
      }
      p.slice = 1;
      p.outs = 1;
      for (int g = 0; g < p.ng; ++g) {
        p.slice *= p.ext[g];
        if (!p.red[g]) p.outs *= p.ext[g];
      }
      return p;
    }

    // A run of n values of one output (the innermost group reduced), lanes from `lane` on; acc
    // holds that output's 16 lanes.
    template <int K>
    inline void or_seg_reduced(float* acc, int lane, const float* v, int64_t n) {
      int64_t i = 0;
      for (; lane != 0 && i < n; ++i) {
        acc[lane] = or_comb<K>(acc[lane], v[i]);
        lane = (lane + 1) & (kOrLanes - 1);
      }
      if (K == 0 && kOrLanes == 16 && i + 16 <= n) {
        // A sum's lanes as two 8-float vectors (GCC and Clang vector extensions: lane-wise adds,
        // so the same bits as the loop below, which compilers leave scalar).
        typedef float or_v8 __attribute__((vector_size(32)));
        or_v8 a0;
        or_v8 a1;
        std::memcpy(&a0, acc, sizeof a0);
        std::memcpy(&a1, acc + 8, sizeof a1);
        for (; i + 16 <= n; i += 16) {
          or_v8 x0;
          or_v8 x1;
          std::memcpy(&x0, v + i, sizeof x0);
          std::memcpy(&x1, v + i + 8, sizeof x1);
          a0 += x0;
          a1 += x1;
        }
        std::memcpy(acc, &a0, sizeof a0);
        std::memcpy(acc + 8, &a1, sizeof a1);
      }
      if (i + kOrLanes <= n) {  // (indexed by constants only: the lanes may stay in registers)
        float a[kOrLanes];
        for (int l = 0; l < kOrLanes; ++l) a[l] = acc[l];
        for (; i + kOrLanes <= n; i += kOrLanes)
          for (int l = 0; l < kOrLanes; ++l) a[l] = or_comb<K>(a[l], v[i + l]);
        for (int l = 0; l < kOrLanes; ++l) acc[l] = a[l];
      }
      for (int l = 0; i < n; ++i, ++l) acc[l] = or_comb<K>(acc[l], v[i]);
    }

    // A run of n values of consecutive outputs in one lane (the innermost group kept).
    template <int K>
    inline void or_seg_kept(float* acc, const float* v, int64_t n) {
      for (int64_t i = 0; i < n; ++i) acc[i] = or_comb<K>(acc[i], v[i]);
    }

    // The lanes folded into the slice's outputs (divided by `divisor`, a mean's count, when > 0).
    template <int K>
    inline void or_flush(const or_plan& p, float* acc, float* out, float divisor) {
      const bool inner_red = p.red[p.ng - 1] != 0;
      for (int w = kOrLanes / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) {
          if (inner_red) {
            for (int64_t o = 0; o < p.outs; ++o)
              acc[o * kOrLanes + l] = or_comb<K>(acc[o * kOrLanes + l], acc[o * kOrLanes + l + w]);
          } else {
            float* a = acc + l * p.outs;
            const float* b = acc + (l + w) * p.outs;
            for (int64_t o = 0; o < p.outs; ++o) a[o] = or_comb<K>(a[o], b[o]);
          }
        }
      const int64_t step = inner_red ? kOrLanes : 1;
      for (int64_t o = 0; o < p.outs; ++o)
        out[o] = divisor > 0 ? acc[o * step] / divisor : acc[o * step];
    }

    // Slices [s0, s1): their outputs into out (at slice * outs), the chain's values also into
    // chain_out when it is not null.
    template <int K>
    inline void or_run_k(const or_plan& p, int64_t s0, int64_t s1, or_chain_fn chain, void* ctx,
                         float* out, float* chain_out, float divisor) {
      static thread_local std::vector<float> acc_v;  // reused: a warm launch allocates nothing
      if (acc_v.size() < static_cast<size_t>(p.outs * kOrLanes)) acc_v.resize(p.outs * kOrLanes);
      float* acc = acc_v.data();
      float blk[kOrBlock];
      const int ng = p.ng;
      const int64_t L = p.ext[ng - 1];
      const bool inner_red = p.red[ng - 1] != 0;
      const int64_t end = s1 * p.slice;
      const int64_t rows = p.slice / L;  // rows of the innermost group per slice
      // The position of the next element: slice s, row q of it, t in the row (advanced per run,
      // no division per run).
      int64_t s = s0;
      int64_t q = 0;
      int64_t t = 0;
      std::fill(acc, acc + p.outs * kOrLanes, or_identity<K>());
      for (int64_t pos = s0 * p.slice; pos < end;) {
        const int64_t len = std::min(kOrBlock, end - pos);
        chain(ctx, pos, len, blk);
        if (chain_out) std::memcpy(chain_out + pos, blk, sizeof(float) * len);
        for (int64_t i = 0; i < len;) {
          const int64_t n = std::min(L - t, len - i);
          int64_t oq = 0;
          int64_t rq = 0;
          int64_t om = 1;
          int64_t rm = 1;
          int64_t qq = q;
          for (int g = ng - 2; g >= 0; --g) {
            const int64_t x = qq % p.ext[g];
            qq /= p.ext[g];
            if (p.red[g]) {
              rq += x * rm;
              rm *= p.ext[g];
            } else {
              oq += x * om;
              om *= p.ext[g];
            }
          }
          if (inner_red)
            or_seg_reduced<K>(acc + oq * kOrLanes, static_cast<int>((rq * L + t) & (kOrLanes - 1)),
                              blk + i, n);
          else
            or_seg_kept<K>(acc + (rq & (kOrLanes - 1)) * p.outs + oq * L + t, blk + i, n);
          i += n;
          t += n;
          if (t == L) {
            t = 0;
            if (++q == rows) {  // the slice is complete: its outputs
              or_flush<K>(p, acc, out + s * p.outs, divisor);
              std::fill(acc, acc + p.outs * kOrLanes, or_identity<K>());
              q = 0;
              ++s;
            }
          }
        }
        pos += len;
      }
    }

    // Columns [c0, c1) of every slice of a plan whose slices are rows reduced into a kept inner
    // group (ng == 2: red[0], !red[1]; a bias gradient's sum of a (batch, features) chain over the
    // batch), the chain's values also into chain_out when it is not null. Each output's lanes and
    // fold are or_run_k's (row q into lane q mod 16, rows in order, the same pairwise fold), so
    // the same bits whichever columns a thread takes.
    template <int K>
    inline void or_run_cols_k(const or_plan& p, int64_t c0, int64_t c1, or_chain_fn chain,
                              void* ctx, float* out, float* chain_out, float divisor) {
      static thread_local std::vector<float> acc_v;  // reused: a warm launch allocates nothing
      const int64_t W = c1 - c0;
      const int64_t R = p.ext[0];
      const int64_t C = p.ext[1];
      if (acc_v.size() < static_cast<size_t>(W * kOrLanes)) acc_v.resize(W * kOrLanes);
      float* acc = acc_v.data();
      float blk[kOrBlock];
      for (int64_t s = 0; s < p.lead; ++s) {
        std::fill(acc, acc + W * kOrLanes, or_identity<K>());
        for (int64_t q = 0; q < R; ++q) {
          float* a = acc + (q & (kOrLanes - 1)) * W;
          for (int64_t c = c0; c < c1; c += kOrBlock) {
            const int64_t len = std::min(kOrBlock, c1 - c);
            const int64_t pos = (s * R + q) * C + c;
            chain(ctx, pos, len, blk);
            if (chain_out) std::memcpy(chain_out + pos, blk, sizeof(float) * len);
            or_seg_kept<K>(a + (c - c0), blk, len);
          }
        }
        for (int w = kOrLanes / 2; w >= 1; w /= 2)
          for (int l = 0; l < w; ++l) {
            float* a = acc + l * W;
            const float* b = acc + (l + w) * W;
            for (int64_t o = 0; o < W; ++o) a[o] = or_comb<K>(a[o], b[o]);
          }
        for (int64_t o = 0; o < W; ++o)
          out[s * C + c0 + o] = divisor > 0 ? acc[o] / divisor : acc[o];
      }
    }

    // Whether T threads split the columns rather than the slices: fewer slices than threads (one
    // when the first axis is reduced) and at least two 16-float lines of kept columns per thread.
    // Split by slices, one thread would run the whole of a (batch, features) bias gradient.
    inline bool or_split_columns(const or_plan& p, int64_t T) {
      return T > 1 && p.lead < T && p.ng == 2 && p.red[0] && !p.red[1] &&
             p.ext[1] >= 2 * kOrLanes * T;
    }

    // kind: 0 sum, 1 max, 2 min; divisor > 0 divides each result (a mean).
    inline void or_run(const or_plan& p, int kind, int64_t s0, int64_t s1, or_chain_fn chain,
                       void* ctx, float* out, float* chain_out, float divisor) {
      if (kind == 0)
        or_run_k<0>(p, s0, s1, chain, ctx, out, chain_out, divisor);
      else if (kind == 1)
        or_run_k<1>(p, s0, s1, chain, ctx, out, chain_out, divisor);
      else
        or_run_k<2>(p, s0, s1, chain, ctx, out, chain_out, divisor);
    }

    // Thread t of T's share: a contiguous range of slices, or (or_split_columns) of the kept
    // columns, cut at multiples of 16 floats so no two threads write one cache line of out.
    inline void or_run_share(const or_plan& p, int kind, int64_t t, int64_t T, or_chain_fn chain,
                             void* ctx, float* out, float* chain_out, float divisor) {
      if (!or_split_columns(p, T)) {
        const int64_t chunk = (p.lead + T - 1) / T;
        const int64_t b = t * chunk;
        const int64_t e = b + chunk < p.lead ? b + chunk : p.lead;
        if (b < e) or_run(p, kind, b, e, chain, ctx, out, chain_out, divisor);
        return;
      }
      const int64_t C = p.ext[1];
      const int64_t c0 = t == 0 ? 0 : (C * t / T) / kOrLanes * kOrLanes;
      const int64_t c1 = t + 1 == T ? C : (C * (t + 1) / T) / kOrLanes * kOrLanes;
      if (c0 >= c1) return;
      if (kind == 0)
        or_run_cols_k<0>(p, c0, c1, chain, ctx, out, chain_out, divisor);
      else if (kind == 1)
        or_run_cols_k<1>(p, c0, c1, chain, ctx, out, chain_out, divisor);
      else
        or_run_cols_k<2>(p, c0, c1, chain, ctx, out, chain_out, divisor);
    })

}  // namespace mycel::cpu::ored
