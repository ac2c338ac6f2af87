// The bf16 weight gradient's split along K (c = a^T b, a (K, M), b (K, N); each of T threads
// its K / T rows into a float32 partial) by oneDNN's one-thread primitive against Mycel's own
// AVX512-BF16 kernel (kernels/cpu/matmul_bf16_atb.cc), alternating, operands hot. Prints wall
// minima/medians per variant and the kernels' largest error against a double reference.
//   g++ -O2 -fopenmp -Isrc bench/bench_matmul_atb.cc src/mycel/kernels/cpu/matmul_bf16_atb.cc \
//     src/mycel/core/cpu_features.cc -o /tmp/bma -ldnnl && /tmp/bma 512 128 2048 [threads]
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <time.h>

#include "mycel/kernels/cpu/matmul_bf16_atb.h"

using namespace dnnl;
using dt = memory::data_type;
static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static double cpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char** argv) {
  const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  const int T = argc > 4 ? atoi(argv[4]) : 2, Kp = K / T;
  engine eng(engine::kind::cpu, 0);
  std::vector<uint16_t> A(size_t(K) * M), B(size_t(K) * N);
  srand(1);
  for (auto& v : A) v = to_bf16(float(rand()) / RAND_MAX - 0.5f);
  for (auto& v : B) v = to_bf16(float(rand()) / RAND_MAX - 0.5f);
  std::vector<float> P(size_t(T) * M * N), Q(size_t(T) * M * N);
  omp_set_num_threads(1);
  auto pd = matmul::primitive_desc(
      matmul::desc(memory::desc({M, Kp}, dt::bf16, {1, M}), memory::desc({Kp, N}, dt::bf16, {N, 1}),
                   memory::desc({M, N}, dt::f32, {N, 1})),
      eng);
  matmul mm(pd);
  printf("oneDNN impl: %s\n", pd.impl_info_str());
  omp_set_num_threads(T);
  std::vector<double> td, tm, cd, cm;
  for (int r = 0; r < 300; ++r) {
    for (int v = 0; v < 2; ++v) {
      double t0 = now(), cmax = 0;
#pragma omp parallel num_threads(T) reduction(max : cmax)
      {
        const double c0 = cpu();
        int id = omp_get_thread_num();
        const uint16_t* a = A.data() + size_t(id) * Kp * M;
        const uint16_t* b = B.data() + size_t(id) * Kp * N;
        if (v == 0) {
          stream s(eng);
          memory ma(pd.src_desc(), eng, (void*)a), mb(pd.weights_desc(), eng, (void*)b),
              mc(pd.dst_desc(), eng, P.data() + size_t(id) * M * N);
          mm.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
          s.wait();
        } else {
          mycel::cpu::matmul_bf16_atb(a, M, b, N, Kp, M, N, Q.data() + size_t(id) * M * N, N,
                                      nullptr);
        }
        cmax = cpu() - c0;
      }
      (v == 0 ? cd : cm).push_back(cmax);
      (v == 0 ? td : tm).push_back(now() - t0);
    }
  }
  double err = 0, errd = 0, scale = 0;
  for (int i = 0; i < M; i += 7)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < Kp; ++k) ref += double(from_bf16(A[size_t(k) * M + i])) * from_bf16(B[size_t(k) * N + j]);
      err = std::max(err, std::fabs(ref - Q[size_t(i) * N + j]));
      errd = std::max(errd, std::fabs(ref - P[size_t(i) * N + j]));
      scale = std::max(scale, std::fabs(ref));
    }
  for (auto* t : {&td, &tm, &cd, &cm}) std::sort(t->begin(), t->end());
  const double fl = 2.0 * M * N * K;
  printf("%dx%dx%d T=%d  oneDNN min %.1f med %.1f us (%.0f GF/s) | atb min %.1f med %.1f us (%.0f GF/s)\n",
         M, N, K, T, td[0] * 1e6, td[td.size() / 2] * 1e6, fl / td[0] * 1e-9, tm[0] * 1e6,
         tm[tm.size() / 2] * 1e6, fl / tm[0] * 1e-9);
  printf("  thread CPU time (max over threads): oneDNN min %.1f med %.1f us | atb min %.1f med %.1f us\n",
         cd[0] * 1e6, cd[cd.size() / 2] * 1e6, cm[0] * 1e6, cm[cm.size() / 2] * 1e6);
  printf("max err vs double (part 0): atb %.3g oneDNN %.3g (|ref| max %.3g)\n", err, errd, scale);
}
