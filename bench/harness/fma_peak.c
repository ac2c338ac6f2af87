/* The machine's measured float32 peak: every core runs a loop of independent AVX2 fused
 * multiply-adds (12 accumulators, 8 floats each: enough to cover the FMA latency on two ports)
 * for a fixed time. Built and run by bench/harness/run.py; prints one JSON line.
 * cc -O3 -mavx2 -mfma -fopenmp fma_peak.c -o fma_peak */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>

#define ACC 12
#define ITERS 20000000L

static double loop(float seed) {
  __m256 acc[ACC];
  for (int i = 0; i < ACC; ++i) acc[i] = _mm256_set1_ps(seed + (float)i);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < ITERS; ++it)
    for (int i = 0; i < ACC; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < ACC; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];  /* used, so the loop is not removed */
}

int main(void) {
  double sink = 0, best1 = 0, bestn = 0;
  int threads = omp_get_max_threads();
  const double flop = 2.0 * 8 * ACC * ITERS;
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
  printf("{\"fp32_gflops_1thread\": %.1f, \"fp32_gflops\": %.1f, \"threads\": %d, \"sink\": %g}\n",
         best1 / 1e9, bestn / 1e9, threads, sink > 0 ? 1.0 : 0.0);
  return 0;
}
