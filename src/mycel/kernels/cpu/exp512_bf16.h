// exp(d) for d <= 0 in 16 float lanes, accurate enough for a result rounded to bfloat16 (the bf16
// softmax, softmax_bf16.cc): 2^t with t = d log2(e), t = n + f (n = floor(t) by VREDUCEPS, f in
// [0, 1)), 2^f by a degree-4 minimax polynomial (2.6e-6 relative) and 2^n by VSCALEFPS. Its
// relative error is at most 6.5e-6 over every float d in [-87.3, 0] (the polynomial's, and the
// rounding of t, half an ulp of |t| < 128; tests/cpp/exp512_bf16_test.cc, all 1.1e9 floats
// once with MYCEL_EXP_EXHAUSTIVE=1), 300 times below half a bf16 ulp (2^-9 relative): a rounded
// weight differs from that of an exact exp only where the exact value lies within 6.5e-6
// relative of a rounding boundary. Cephes' degree-6 form (Cody-Waite reduction, 1 float ulp)
// cost 15 instructions a vector, this 8: the softmax row is bound by their count. Below -87.3
// the result goes into float32's denormals as std::exp does and is 0 from -103.3 (also -inf).
// Include only inside an AVX-512 target region (see softmax_bf16.cc).
#pragma once
#include <immintrin.h>

namespace mycel::cpu::exp512 {

/// exp(d) per lane for d <= 0 or -inf (a NaN lane stays NaN).
inline __m512 exp16_nonpositive_bf16(__m512 d) {
  constexpr __mmask16 all = 0xFFFF;
  // -200 keeps -inf's f finite (0, not inf - inf) and scales 2^f to 0. max(-200, t): VMAXPS
  // returns its second operand when either is NaN, so a NaN stays NaN (the callers detect it).
  const __m512 t = _mm512_maskz_max_ps(all, _mm512_set1_ps(-200.0f),
                                       _mm512_mul_ps(d, _mm512_set1_ps(1.44269504088896341f)));
  const __m512 f = _mm512_maskz_reduce_ps(all, t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(0.013534121215343475f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.052011482417583466f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24144279956817627f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6930038332939148f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000026226043701f));
  return _mm512_maskz_scalef_ps(all, p, t);  // p * 2^floor(t)
}

}  // namespace mycel::cpu::exp512
