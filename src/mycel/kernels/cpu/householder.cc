// LAPACK's geqrf/orgqr/ormqr (row-major, through LAPACKE) per matrix of a batch.
#include "mycel/kernels/cpu/householder.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <lapacke.h>

namespace mycel::cpu {
namespace {

using li = lapack_int;
constexpr int kRow = LAPACK_ROW_MAJOR;

li geqrf(li m, li n, float* a, li lda, float* t) { return LAPACKE_sgeqrf(kRow, m, n, a, lda, t); }
li geqrf(li m, li n, double* a, li lda, double* t) { return LAPACKE_dgeqrf(kRow, m, n, a, lda, t); }
li orgqr(li m, li n, li k, float* a, li lda, const float* t) {
  return LAPACKE_sorgqr(kRow, m, n, k, a, lda, t);
}
li orgqr(li m, li n, li k, double* a, li lda, const double* t) {
  return LAPACKE_dorgqr(kRow, m, n, k, a, lda, t);
}
li ormqr(char side, char trans, li m, li n, li k, const float* a, li lda, const float* t, float* c,
         li ldc) {
  return LAPACKE_sormqr(kRow, side, trans, m, n, k, a, lda, t, c, ldc);
}
li ormqr(char side, char trans, li m, li n, li k, const double* a, li lda, const double* t,
         double* c, li ldc) {
  return LAPACKE_dormqr(kRow, side, trans, m, n, k, a, lda, t, c, ldc);
}

li ld(int64_t n) { return static_cast<li>(std::max<int64_t>(n, 1)); }

int64_t batch_of(const Tensor& t, size_t matrix_dims) {
  int64_t b = 1;
  for (size_t i = 0; i + matrix_dims < t.shape().size(); ++i) b *= t.shape()[i];
  return b;
}

void check(li info, const char* op, const char* routine) {
  if (info < 0)
    MYCEL_THROW(RuntimeError, "[", op, "] LAPACK ", routine, " rejected argument ", -info,
                " (an internal error)");
}

template <class Fn>
void visit_real(DType t, const char* op, Fn&& fn) {
  if (t == DType::float32) return fn(float{});
  if (t == DType::float64) return fn(double{});
  MYCEL_THROW(TypeError, "[", op, "] expects float32 or float64, got ", dtype_name(t));
}

}  // namespace

void geqrf_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t m = x.dim(-2), n = x.dim(-1), k = std::min(m, n), batch = batch_of(x, 2);
  visit_real(x.dtype(), "geqrf", [&](auto tag) {
    using T = decltype(tag);
    T* a = c.out(0).data<T>();
    T* tau = c.out(1).data<T>();
    if (x.numel()) std::memcpy(a, x.data(), x.nbytes());
    if (k == 0) return;
    for (int64_t i = 0; i < batch; ++i)
      check(geqrf(static_cast<li>(m), static_cast<li>(n), a + i * m * n, ld(n), tau + i * k),
            "geqrf", "geqrf");
  });
}

void orgqr_kernel(const KernelContext& c) {
  const Tensor &x = c.in(0), &tau = c.in(1);
  const int64_t m = x.dim(-2), n = x.dim(-1), k = tau.dim(-1), batch = batch_of(x, 2);
  visit_real(x.dtype(), "orgqr", [&](auto tag) {
    using T = decltype(tag);
    T* q = c.out(0).data<T>();
    if (x.numel()) std::memcpy(q, x.data(), x.nbytes());
    if (m == 0 || n == 0) return;
    const T* t = tau.data<T>();
    for (int64_t i = 0; i < batch; ++i)
      check(orgqr(static_cast<li>(m), static_cast<li>(n), static_cast<li>(k), q + i * m * n, ld(n),
                  t + i * k),
            "orgqr", "orgqr");
  });
}

void ormqr_kernel(const KernelContext& c) {
  const Tensor &x = c.in(0), &tau = c.in(1), &other = c.in(2);
  const bool left = c.attrs.get_bool("left"), transpose = c.attrs.get_bool("transpose");
  const int64_t r = x.dim(-2), kc = x.dim(-1), k = tau.dim(-1);
  const int64_t m = other.dim(-2), n = other.dim(-1), batch = batch_of(other, 2);
  visit_real(x.dtype(), "ormqr", [&](auto tag) {
    using T = decltype(tag);
    T* out = c.out(0).data<T>();
    if (other.numel()) std::memcpy(out, other.data(), other.nbytes());
    if (m == 0 || n == 0 || k == 0) return;
    const T *a = x.data<T>(), *t = tau.data<T>();
    // The reflectors' columns beyond k are not read: a (r, kc) with lda kc serves as (r, k).
    for (int64_t i = 0; i < batch; ++i)
      check(ormqr(left ? 'L' : 'R', transpose ? 'T' : 'N', static_cast<li>(m), static_cast<li>(n),
                  static_cast<li>(k), a + i * r * kc, ld(kc), t + i * k, out + i * m * n, ld(n)),
            "ormqr", "ormqr");
  });
}

}  // namespace mycel::cpu
