// No contraction of m*v + g or lr*v' into an FMA: the interpreter rounds each step (and so must
// this loop, to stay bitwise equal to it and to the unfused ops).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "mycel/kernels/cpu/momentum_lanes.h"

#include <immintrin.h>

#include <cstdlib>
#include <cstring>

namespace mycel::cpu {
namespace {

// Read at each match (a launch's preparation), so that one process can prepare a step with the
// loop and one without (bench/bench_step_env_ab.py).
bool enabled() {
  const char* v = std::getenv("MYCEL_MOMENTUM_LANES");
  return !v || std::strcmp(v, "0") != 0;
}

}  // namespace

MomentumLanes match_momentum(const EwProgram& p, const char* full, int nout, const int* out_steps) {
  MomentumLanes r;
  const int ni = p.num_inputs;
  if (ni != 5 || p.steps.size() != 4 || nout != 2 || !enabled()) return r;
  const EwStep *s0 = &p.steps[0], *s1 = &p.steps[1], *s2 = &p.steps[2], *s3 = &p.steps[3];
  const int t0 = ni, t1 = ni + 1, t2 = ni + 2;
  auto is_in = [&](int s, bool want_full) { return s < ni && (full[s] != 0) == want_full; };
  if (s0->op != EwOp::kMul || s1->op != EwOp::kAdd || s2->op != EwOp::kMul || s3->op != EwOp::kSub)
    return r;
  // t0 = v * m (either order)
  if (is_in(s0->a, true) && is_in(s0->b, false))
    r.v = s0->a, r.m = s0->b;
  else if (is_in(s0->b, true) && is_in(s0->a, false))
    r.v = s0->b, r.m = s0->a;
  else
    return r;
  // t1 = t0 + g (either order)
  if (s1->a == t0 && is_in(s1->b, true))
    r.g = s1->b;
  else if (s1->b == t0 && is_in(s1->a, true))
    r.g = s1->a;
  else
    return r;
  // t2 = t1 * lr (either order)
  if (s2->a == t1 && is_in(s2->b, false))
    r.lr = s2->b;
  else if (s2->b == t1 && is_in(s2->a, false))
    r.lr = s2->a;
  else
    return r;
  // t3 = w - t2
  if (s3->b != t2 || !is_in(s3->a, true)) return r;
  r.w = s3->a;
  for (int j = 0; j < 2; ++j) {
    if (out_steps[j] == 1)
      r.out_v = j;
    else if (out_steps[j] == 3)
      r.out_w = j;
  }
  r.ok = r.out_v >= 0 && r.out_w >= 0;
  return r;
}

void run_momentum_lanes(const MomentumLanes& mk, const float* const* base, int64_t n,
                        float* const* outs) {
  const float* v = base[mk.v];
  const float* g = base[mk.g];
  const float* w = base[mk.w];
  const float m = base[mk.m][0], lr = base[mk.lr][0];
  float* ov = outs[mk.out_v];
  float* ow = outs[mk.out_w];
  int64_t i = 0;
#if defined(__AVX__)
  const __m256 vm = _mm256_set1_ps(m), vlr = _mm256_set1_ps(lr);
  for (; i + 16 <= n; i += 16) {
    // Every load of the 16 elements before any store: an output may be an input's buffer.
    const __m256 v0 = _mm256_loadu_ps(v + i), v1 = _mm256_loadu_ps(v + i + 8);
    const __m256 g0 = _mm256_loadu_ps(g + i), g1 = _mm256_loadu_ps(g + i + 8);
    const __m256 w0 = _mm256_loadu_ps(w + i), w1 = _mm256_loadu_ps(w + i + 8);
    const __m256 a0 = _mm256_add_ps(_mm256_mul_ps(v0, vm), g0);
    const __m256 a1 = _mm256_add_ps(_mm256_mul_ps(v1, vm), g1);
    const __m256 b0 = _mm256_sub_ps(w0, _mm256_mul_ps(a0, vlr));
    const __m256 b1 = _mm256_sub_ps(w1, _mm256_mul_ps(a1, vlr));
    _mm256_storeu_ps(ov + i, a0);
    _mm256_storeu_ps(ov + i + 8, a1);
    _mm256_storeu_ps(ow + i, b0);
    _mm256_storeu_ps(ow + i + 8, b1);
  }
#endif
  for (; i < n; ++i) {
    const float vi = v[i], gi = g[i], wi = w[i];
    const float t0 = vi * m;
    const float t1 = t0 + gi;
    const float t2 = t1 * lr;
    ov[i] = t1;
    ow[i] = wi - t2;
  }
}

}  // namespace mycel::cpu
