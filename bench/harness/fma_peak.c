/* The machine's measured float32 peak: every core runs a loop of independent fused multiply-adds
 * (12 accumulators: enough to cover the FMA latency on two ports) for a fixed time, in AVX2
 * (8 floats) and, where the CPU has AVX-512, in AVX-512 (16 floats); the peak is the faster.
 * AVX-512 counts: an Ice Lake Xeon with two 512-bit FMA units ran 172 GFLOP/s a core in AVX-512
 * against 103 in AVX2, and oneDNN's kernels use it, while on Zen 4 (one 512-bit FMA as two
 * 256-bit halves) the two are equal. Built and run by bench/harness/run.py; prints one JSON line.
 * cc -O3 -mavx2 -mfma -fopenmp fma_peak.c -o fma_peak */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>

#define ACC 12
#define ITERS 20000000L

static double loop256(float seed) {
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

__attribute__((target("avx512f"))) static double loop512(float seed) {
  __m512 acc[ACC];
  for (int i = 0; i < ACC; ++i) acc[i] = _mm512_set1_ps(seed + (float)i);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < ITERS; ++it)
    for (int i = 0; i < ACC; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < ACC; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

/* Best of 3 of one thread and of all threads running loop (lanes floats a vector). */
static void measure(double (*loop)(float), int lanes, double* best1, double* bestn, double* sink) {
  const int threads = omp_get_max_threads();
  const double flop = 2.0 * lanes * ACC * ITERS;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = omp_get_wtime();
    *sink += loop(1.0f);
    double t1 = omp_get_wtime();
    if (flop / (t1 - t0) > *best1) *best1 = flop / (t1 - t0);
    double s = 0;
    t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : s)
    s += loop((float)omp_get_thread_num());
    t1 = omp_get_wtime();
    *sink += s;
    if (flop * threads / (t1 - t0) > *bestn) *bestn = flop * threads / (t1 - t0);
  }
}

int main(void) {
  double sink = 0, a1 = 0, an = 0, z1 = 0, zn = 0;
  measure(loop256, 8, &a1, &an, &sink);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) measure(loop512, 16, &z1, &zn, &sink);
  printf("{\"fp32_gflops_1thread\": %.1f, \"fp32_gflops\": %.1f, \"avx2_gflops_1thread\": %.1f, "
         "\"avx2_gflops\": %.1f, \"avx512_gflops_1thread\": %.1f, \"avx512_gflops\": %.1f, "
         "\"threads\": %d, \"sink\": %g}\n",
         (a1 > z1 ? a1 : z1) / 1e9, (an > zn ? an : zn) / 1e9, a1 / 1e9, an / 1e9, z1 / 1e9,
         zn / 1e9, omp_get_max_threads(), sink > 0 ? 1.0 : 0.0);
  return 0;
}
