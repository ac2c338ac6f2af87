// Whether ordered_reduce.h's one-slice reduction (a bias gradient's sum over the batch: [R, L]
// summed over R, one thread in the header) could split across threads without changing its
// order: by lanes (a thread takes the rows r with r mod 16 in its range of the 16 lanes, runs of
// 16 / T consecutive rows, into a shared lane buffer folded at the end) or by columns (a thread
// takes part of every row). Each gives the serial pass's bits; the question is speed. The chain
// is a relu mask's product, its values kept, as in a relu layer's backward; the operands rotate
// through copies that leave the last-level cache, as a training step's do. Best and median
// microseconds of the launches; "T parts on one thread" shows the cost of the access pattern
// alone. Not a test.
//
//   g++ -O3 -march=native -fopenmp -std=c++20 -Isrc bench/te_reduce_split.cc -o /tmp/rs
//   OMP_WAIT_POLICY=PASSIVE /tmp/rs 2048 512 [launches]     (OMP_NUM_THREADS=T: T parts)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mycel/kernels/cpu/ordered_reduce.h"

using namespace mycel::cpu::ored;

namespace {

struct Src {
  const float* x;
  const float* m;
};

void chain(void* c, int64_t s, int64_t n, float* d) {
  auto* src = static_cast<Src*>(c);
  for (int64_t i = 0; i < n; ++i) d[i] = src->x[s + i] * (src->m[s + i] > 0 ? 1.f : 0.f);
}

// Lanes [l0, l1): rows r with r mod 16 in them, into lane r mod 16 of acc (16 x L).
void lanes(int64_t R, int64_t L, int64_t l0, int64_t l1, Src* src, float* acc, float* keep) {
  std::fill(acc + l0 * L, acc + l1 * L, 0.f);
  float blk[kOrBlock];
  for (int64_t q0 = l0; q0 < R; q0 += 16) {
    const int64_t end = std::min(R, q0 + (l1 - l0)) * L;
    int64_t q = q0, t = 0;
    for (int64_t pos = q0 * L; pos < end;) {
      const int64_t len = std::min(kOrBlock, end - pos);
      chain(src, pos, len, blk);
      std::memcpy(keep + pos, blk, sizeof(float) * len);
      for (int64_t i = 0; i < len;) {
        const int64_t n = std::min(L - t, len - i);
        or_seg_kept<0>(acc + (q & 15) * L + t, blk + i, n);
        i += n;
        t += n;
        if (t == L) t = 0, ++q;
      }
      pos += len;
    }
  }
}

// Columns [c0, c1) of every row, into lanes of acc (16 x L), in the same order.
void columns(int64_t R, int64_t L, int64_t c0, int64_t c1, Src* src, float* acc, float* keep) {
  float blk[kOrBlock];
  std::fill(acc, acc + 16 * L, 0.f);
  for (int64_t q = 0; q < R; ++q)
    for (int64_t c = c0; c < c1; c += kOrBlock) {
      const int64_t n = std::min(kOrBlock, c1 - c);
      chain(src, q * L + c, n, blk);
      std::memcpy(keep + q * L + c, blk, sizeof(float) * n);
      or_seg_kept<0>(acc + (q & 15) * L + c, blk, n);
    }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t R = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int64_t L = argc > 2 ? std::atoll(argv[2]) : 512;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 200;
  int64_t dims[2] = {R, L};
  unsigned char red[2] = {1, 0};
  const or_plan p = or_make_plan(2, dims, red);
  const int64_t copies = std::max<int64_t>(1, (256 << 20) / (12 * R * L));
  std::vector<float> xs(copies * R * L), ms(copies * R * L), keeps(copies * R * L), out(L);
  for (int64_t i = 0; i < copies * R * L; ++i)
    xs[i] = static_cast<float>(i % 7) - 3, ms[i] = static_cast<float>(i % 3) - 1.f;
  const int T = omp_get_max_threads();
  std::vector<float> shared(16 * L);
  std::vector<std::vector<float>> accs(T, std::vector<float>(16 * L));
  const char* names[] = {"serial (the header's)", "lanes, T parts on one thread",
                         "lanes, T threads", "columns, T parts on one thread",
                         "columns, T threads"};
  for (int mode = 0; mode < 5; ++mode) {
    std::vector<double> ts;
    for (int rep = 0; rep < reps; ++rep) {
      const int64_t at = rep % copies * R * L;
      Src src{xs.data() + at, ms.data() + at};
      float* keep = keeps.data() + at;
      const auto t0 = std::chrono::steady_clock::now();
      if (mode == 0) {
        or_run(p, 0, 0, 1, chain, &src, out.data(), keep, 0.f);
      } else if (mode == 1) {
        for (int t = 0; t < T; ++t)
          lanes(R, L, 16 * t / T, 16 * (t + 1) / T, &src, shared.data(), keep);
        or_flush<0>(p, shared.data(), out.data(), 0.f);
      } else if (mode == 2) {
#pragma omp parallel num_threads(T)
        {
          const int t = omp_get_thread_num();
          lanes(R, L, 16 * t / T, 16 * (t + 1) / T, &src, shared.data(), keep);
        }
        or_flush<0>(p, shared.data(), out.data(), 0.f);
      } else if (mode == 3) {
        for (int t = 0; t < T; ++t)
          columns(R, L, L * t / T, L * (t + 1) / T, &src, accs[t].data(), keep);
      } else {
#pragma omp parallel num_threads(T)
        {
          const int t = omp_get_thread_num();
          columns(R, L, L * t / T, L * (t + 1) / T, &src, accs[t].data(), keep);
        }
      }
      ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
                   1e6);
    }
    std::sort(ts.begin(), ts.end());
    std::printf("[%lld, %lld] T=%d %-32s best %7.0f us  median %7.0f us\n",
                static_cast<long long>(R), static_cast<long long>(L), T, names[mode], ts[0],
                ts[ts.size() / 2]);
  }
}
