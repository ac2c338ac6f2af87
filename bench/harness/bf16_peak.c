/* The machine's measured bfloat16 peak: every core runs a loop of independent AVX512-BF16 dot
 * products (vdpbf16ps: 32 bf16 pairs into 16 float32 sums, 64 FLOP per instruction; 16
 * accumulators cover its latency), for a fixed count. The instruction oneDNN's
 * avx512_core_bf16 kernels are built on, so it bounds what a bf16 matmul/conv can reach.
 * Built and run by bench/harness/run.py only when /proc/cpuinfo lists avx512_bf16; prints one
 * JSON line.  cc -O3 -mavx512f -mavx512bf16 -fopenmp bf16_peak.c -o bf16_peak */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>

#define ACC 16
#define ITERS 10000000L

static double loop(float seed) {
  __m512 acc[ACC];
  for (int i = 0; i < ACC; ++i) acc[i] = _mm512_set1_ps(seed + (float)i);
  /* small products: the sums grow by ~1e-3 per iteration, far from overflow */
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.03125f), _mm512_set1_ps(0.03125f));
  for (long it = 0; it < ITERS; ++it)
    for (int i = 0; i < ACC; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, a);
  __m512 s = acc[0];
  for (int i = 1; i < ACC; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s); /* used, so the loop is not removed */
}

int main(void) {
  double sink = 0, best1 = 0, bestn = 0;
  int threads = omp_get_max_threads();
  const double flop = 64.0 * ACC * ITERS;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = omp_get_wtime();
    sink += loop(1.0f);
    double t1 = omp_get_wtime();
    if (flop / (t1 - t0) > best1) best1 = flop / (t1 - t0);
    t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
    sink += loop((float)omp_get_thread_num());
    t1 = omp_get_wtime();
    if (flop * threads / (t1 - t0) > bestn) bestn = flop * threads / (t1 - t0);
  }
  printf("{\"bf16_gflops_1thread\": %.1f, \"bf16_gflops\": %.1f, \"threads\": %d, \"sink\": %g}\n",
         best1 / 1e9, bestn / 1e9, threads, sink > 0 ? 1.0 : 0.0);
  return 0;
}
