#include "mycel/kernels/cpu/conv_winograd_gemm512.h"

#include <cstdlib>
#include <cstring>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"

#if MYCEL_AVX512_KERNELS
#include <immintrin.h>
#endif

namespace mycel::cpu {

bool winograd_gemm512_on() {
  static const bool on = [] {
    const char* s = std::getenv("MYCEL_WINOGRAD_AVX512");
    return MYCEL_AVX512_KERNELS && cpu_has_avx512() && !cpu_is_zen4() &&
           !(s && std::strcmp(s, "0") == 0);
  }();
  return on;
}

#if MYCEL_AVX512_KERNELS
namespace {

#pragma GCC push_options
#pragma GCC target("avx512f")

// The accumulators are named variables, as in the AVX2 kernel: GCC keeps an array's on the stack.
template <int NT>
void quad(const float* v, const float* u, float* m, int64_t c8, int64_t oc8) {
  static_assert(NT >= 1 && NT <= 6);
  __m512 a00 = _mm512_setzero_ps(), a10 = a00, a20 = a00, a30 = a00, a40 = a00, a50 = a00;
  __m512 a01 = a00, a11 = a00, a21 = a00, a31 = a00, a41 = a00, a51 = a00;
  const float *v0 = v, *v1 = v + c8, *v2 = v + 2 * c8, *v3 = v + 3 * c8, *v4 = v + 4 * c8,
              *v5 = v + 5 * c8;
  const float* u1 = u + c8 * 16;
#define MYCEL_WINO512_ROW(t)                   \
  if constexpr (NT > t) {                      \
    const __m512 b = _mm512_set1_ps(v##t[c]);  \
    a##t##0 = _mm512_fmadd_ps(b, w0, a##t##0); \
    a##t##1 = _mm512_fmadd_ps(b, w1, a##t##1); \
  }
  for (int64_t c = 0; c < c8; ++c) {
    const __m512 w0 = _mm512_loadu_ps(u + c * 16);
    const __m512 w1 = _mm512_loadu_ps(u1 + c * 16);
    MYCEL_WINO512_ROW(0)
    MYCEL_WINO512_ROW(1)
    MYCEL_WINO512_ROW(2)
    MYCEL_WINO512_ROW(3)
    MYCEL_WINO512_ROW(4)
    MYCEL_WINO512_ROW(5)
  }
#undef MYCEL_WINO512_ROW
  const __m512 acc[6][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}, {a40, a41}, {a50, a51}};
  for (int t = 0; t < NT; ++t) {
    _mm512_storeu_ps(m + t * oc8, acc[t][0]);
    _mm512_storeu_ps(m + t * oc8 + 16, acc[t][1]);
  }
}

#pragma GCC pop_options

}  // namespace

void winograd_gemm_quad(int nt, const float* v, const float* u, float* m, int64_t c8, int64_t oc8) {
  switch (nt) {
    case 1:
      return quad<1>(v, u, m, c8, oc8);
    case 2:
      return quad<2>(v, u, m, c8, oc8);
    case 3:
      return quad<3>(v, u, m, c8, oc8);
    case 4:
      return quad<4>(v, u, m, c8, oc8);
    case 5:
      return quad<5>(v, u, m, c8, oc8);
    case 6:
      return quad<6>(v, u, m, c8, oc8);
    default:
      MYCEL_THROW(RuntimeError, "[winograd] a GEMM group of ", nt, " tiles (backend bug)");
  }
}
#else
void winograd_gemm_quad(int, const float*, const float*, float*, int64_t, int64_t) {
  MYCEL_THROW(RuntimeError, "[winograd] no AVX-512 kernels in this build (backend bug)");
}
#endif

}  // namespace mycel::cpu
