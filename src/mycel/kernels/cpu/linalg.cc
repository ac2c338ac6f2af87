#include "mycel/kernels/cpu/linalg.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

// std::complex for LAPACK's complex types (layout-compatible with our complex64/complex128);
// lapack.h, which lapacke.h includes first, reads these two macros.
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

namespace mycel::cpu {
namespace {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;
using li = lapack_int;
constexpr int kRow = LAPACK_ROW_MAJOR;

// ---- one overload set per LAPACK routine, so the kernels below are written once per routine ----
li getrf(li m, li n, float* a, li lda, li* p) { return LAPACKE_sgetrf(kRow, m, n, a, lda, p); }
li getrf(li m, li n, double* a, li lda, li* p) { return LAPACKE_dgetrf(kRow, m, n, a, lda, p); }
li getrf(li m, li n, cfloat* a, li lda, li* p) { return LAPACKE_cgetrf(kRow, m, n, a, lda, p); }
li getrf(li m, li n, cdouble* a, li lda, li* p) { return LAPACKE_zgetrf(kRow, m, n, a, lda, p); }

li getri(li n, float* a, li lda, const li* p) { return LAPACKE_sgetri(kRow, n, a, lda, p); }
li getri(li n, double* a, li lda, const li* p) { return LAPACKE_dgetri(kRow, n, a, lda, p); }
li getri(li n, cfloat* a, li lda, const li* p) { return LAPACKE_cgetri(kRow, n, a, lda, p); }
li getri(li n, cdouble* a, li lda, const li* p) { return LAPACKE_zgetri(kRow, n, a, lda, p); }

li getrs(char t, li n, li k, const float* a, li lda, const li* p, float* b, li ldb) {
  return LAPACKE_sgetrs(kRow, t, n, k, a, lda, p, b, ldb);
}
li getrs(char t, li n, li k, const double* a, li lda, const li* p, double* b, li ldb) {
  return LAPACKE_dgetrs(kRow, t, n, k, a, lda, p, b, ldb);
}
li getrs(char t, li n, li k, const cfloat* a, li lda, const li* p, cfloat* b, li ldb) {
  return LAPACKE_cgetrs(kRow, t, n, k, a, lda, p, b, ldb);
}
li getrs(char t, li n, li k, const cdouble* a, li lda, const li* p, cdouble* b, li ldb) {
  return LAPACKE_zgetrs(kRow, t, n, k, a, lda, p, b, ldb);
}

li potrf(char u, li n, float* a, li lda) { return LAPACKE_spotrf(kRow, u, n, a, lda); }
li potrf(char u, li n, double* a, li lda) { return LAPACKE_dpotrf(kRow, u, n, a, lda); }
li potrf(char u, li n, cfloat* a, li lda) { return LAPACKE_cpotrf(kRow, u, n, a, lda); }
li potrf(char u, li n, cdouble* a, li lda) { return LAPACKE_zpotrf(kRow, u, n, a, lda); }

li potrs(char u, li n, li k, const float* a, li lda, float* b, li ldb) {
  return LAPACKE_spotrs(kRow, u, n, k, a, lda, b, ldb);
}
li potrs(char u, li n, li k, const double* a, li lda, double* b, li ldb) {
  return LAPACKE_dpotrs(kRow, u, n, k, a, lda, b, ldb);
}
li potrs(char u, li n, li k, const cfloat* a, li lda, cfloat* b, li ldb) {
  return LAPACKE_cpotrs(kRow, u, n, k, a, lda, b, ldb);
}
li potrs(char u, li n, li k, const cdouble* a, li lda, cdouble* b, li ldb) {
  return LAPACKE_zpotrs(kRow, u, n, k, a, lda, b, ldb);
}

li heevd(char j, char u, li n, float* a, li lda, float* w) {
  return LAPACKE_ssyevd(kRow, j, u, n, a, lda, w);
}
li heevd(char j, char u, li n, double* a, li lda, double* w) {
  return LAPACKE_dsyevd(kRow, j, u, n, a, lda, w);
}
li heevd(char j, char u, li n, cfloat* a, li lda, float* w) {
  return LAPACKE_cheevd(kRow, j, u, n, a, lda, w);
}
li heevd(char j, char u, li n, cdouble* a, li lda, double* w) {
  return LAPACKE_zheevd(kRow, j, u, n, a, lda, w);
}

li gesdd(char j, li m, li n, float* a, li lda, float* s, float* u, li ldu, float* vt, li ldvt) {
  return LAPACKE_sgesdd(kRow, j, m, n, a, lda, s, u, ldu, vt, ldvt);
}
li gesdd(char j, li m, li n, double* a, li lda, double* s, double* u, li ldu, double* vt, li ldvt) {
  return LAPACKE_dgesdd(kRow, j, m, n, a, lda, s, u, ldu, vt, ldvt);
}
li gesdd(char j, li m, li n, cfloat* a, li lda, float* s, cfloat* u, li ldu, cfloat* vt, li ldvt) {
  return LAPACKE_cgesdd(kRow, j, m, n, a, lda, s, u, ldu, vt, ldvt);
}
li gesdd(char j, li m, li n, cdouble* a, li lda, double* s, cdouble* u, li ldu, cdouble* vt,
         li ldvt) {
  return LAPACKE_zgesdd(kRow, j, m, n, a, lda, s, u, ldu, vt, ldvt);
}

li geqrf(li m, li n, float* a, li lda, float* t) { return LAPACKE_sgeqrf(kRow, m, n, a, lda, t); }
li geqrf(li m, li n, double* a, li lda, double* t) { return LAPACKE_dgeqrf(kRow, m, n, a, lda, t); }
li geqrf(li m, li n, cfloat* a, li lda, cfloat* t) { return LAPACKE_cgeqrf(kRow, m, n, a, lda, t); }
li geqrf(li m, li n, cdouble* a, li lda, cdouble* t) {
  return LAPACKE_zgeqrf(kRow, m, n, a, lda, t);
}

li orgqr(li m, li n, li k, float* a, li lda, const float* t) {
  return LAPACKE_sorgqr(kRow, m, n, k, a, lda, t);
}
li orgqr(li m, li n, li k, double* a, li lda, const double* t) {
  return LAPACKE_dorgqr(kRow, m, n, k, a, lda, t);
}
li orgqr(li m, li n, li k, cfloat* a, li lda, const cfloat* t) {
  return LAPACKE_cungqr(kRow, m, n, k, a, lda, t);
}
li orgqr(li m, li n, li k, cdouble* a, li lda, const cdouble* t) {
  return LAPACKE_zungqr(kRow, m, n, k, a, lda, t);
}

li gelsd(li m, li n, li k, float* a, li lda, float* b, li ldb, float* s, li* rank) {
  return LAPACKE_sgelsd(kRow, m, n, k, a, lda, b, ldb, s, -1.0f, rank);
}
li gelsd(li m, li n, li k, double* a, li lda, double* b, li ldb, double* s, li* rank) {
  return LAPACKE_dgelsd(kRow, m, n, k, a, lda, b, ldb, s, -1.0, rank);
}
li gelsd(li m, li n, li k, cfloat* a, li lda, cfloat* b, li ldb, float* s, li* rank) {
  return LAPACKE_cgelsd(kRow, m, n, k, a, lda, b, ldb, s, -1.0f, rank);
}
li gelsd(li m, li n, li k, cdouble* a, li lda, cdouble* b, li ldb, double* s, li* rank) {
  return LAPACKE_zgelsd(kRow, m, n, k, a, lda, b, ldb, s, -1.0, rank);
}

// geev (right eigenvectors only): real input gives real and imaginary parts apart.
li geev(char jv, li n, float* a, li lda, float* wr, float* wi, float* vr, li ldvr) {
  return LAPACKE_sgeev(kRow, 'N', jv, n, a, lda, wr, wi, nullptr, 1, vr, ldvr);
}
li geev(char jv, li n, double* a, li lda, double* wr, double* wi, double* vr, li ldvr) {
  return LAPACKE_dgeev(kRow, 'N', jv, n, a, lda, wr, wi, nullptr, 1, vr, ldvr);
}
li geev(char jv, li n, cfloat* a, li lda, cfloat* w, cfloat* vr, li ldvr) {
  return LAPACKE_cgeev(kRow, 'N', jv, n, a, lda, w, nullptr, 1, vr, ldvr);
}
li geev(char jv, li n, cdouble* a, li lda, cdouble* w, cdouble* vr, li ldvr) {
  return LAPACKE_zgeev(kRow, 'N', jv, n, a, lda, w, nullptr, 1, vr, ldvr);
}

// ---- helpers ----
template <class T>
struct RealOf {
  using type = T;
};
template <class T>
struct RealOf<std::complex<T>> {
  using type = T;
};
template <class T>
using real_t = typename RealOf<T>::type;

template <class T>
T conj_of(T v) {
  if constexpr (is_complex_v<T>)
    return std::conj(v);
  else
    return v;
}

// Calls fn(TypeTag<T>) for the four LAPACK types (infer let no other dtype through).
template <class Fn>
void visit_lapack(DType t, Fn&& fn) {
  switch (t) {
    case DType::float32:
      return fn(TypeTag<float>{});
    case DType::float64:
      return fn(TypeTag<double>{});
    case DType::complex64:
      return fn(TypeTag<cfloat>{});
    case DType::complex128:
      return fn(TypeTag<cdouble>{});
    default:
      MYCEL_THROW(TypeError, "linear algebra kernels take float32, float64, complex64 or ",
                  "complex128, got ", dtype_name(t));
  }
}

// A batch of matrices (..., rows, cols) seen as (batch, rows, cols).
struct Batch {
  int64_t batch, rows, cols;
  int64_t size() const { return rows * cols; }
};
Batch batch_of(const Tensor& t) {
  const int64_t nd = t.ndim(), r = t.dim(nd - 2), c = t.dim(nd - 1);
  return {r * c == 0 ? 0 : t.numel() / (r * c), r, c};
}
int64_t batch_count(const Shape& s, size_t matrix_dims) {
  int64_t b = 1;
  for (size_t i = 0; i + matrix_dims < s.size(); ++i) b *= s[i];
  return b;
}
li ld(int64_t n) { return static_cast<li>(std::max<int64_t>(n, 1)); }

// LU of a copy of matrix b of x: returns the info of getrf (>0: U(info, info) is exactly 0).
template <class T>
li lu(const T* src, int64_t n, std::vector<T>& a, std::vector<li>& piv) {
  a.assign(src, src + n * n);
  piv.assign(std::max<int64_t>(n, 1), 0);
  return getrf(static_cast<li>(n), static_cast<li>(n), a.data(), ld(n), piv.data());
}

// Throws unless every 1-based pivot of matrix b lies in [1, n] (LAPACK would read out of bounds).
void check_pivots(const int32_t* p, int64_t n, int64_t b, const char* op) {
  for (int64_t i = 0; i < n; ++i)
    if (p[i] < 1 || p[i] > n)
      MYCEL_THROW(ValueError, "[", op, "] input 'LU_pivots' must hold 1-based rows in [1, ", n,
                  "], got ", p[i], " at position ", i, " of matrix ", b, " of the batch");
}

void check_info(li info, const char* op, const char* routine) {
  if (info < 0)
    MYCEL_THROW(RuntimeError, "[", op, "] LAPACK ", routine, " rejected argument ", -info,
                " (an internal error)");
}

}  // namespace

void matrix_inverse_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Batch b = batch_of(x);
  const int64_t n = b.rows;
  const bool adjoint = c.attrs.get_bool("adjoint");
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<li> piv(std::max<int64_t>(n, 1));
    T* out = c.out(0).data<T>();
    if (x.numel()) std::memcpy(out, x.data(), x.nbytes());
    for (int64_t i = 0; i < b.batch; ++i) {
      T* a = out + i * b.size();
      li info = getrf(static_cast<li>(n), static_cast<li>(n), a, ld(n), piv.data());
      check_info(info, "inverse", "getrf");
      if (info > 0)
        MYCEL_THROW(ValueError, "[inverse] input 'x' is singular: matrix ", i, " of the batch has ",
                    "U(", info - 1, ", ", info - 1, ") = 0 in its LU factorization");
      check_info(getri(static_cast<li>(n), a, ld(n), piv.data()), "inverse", "getri");
      if (adjoint)  // (A^H)^-1 = (A^-1)^H
        for (int64_t r = 0; r < n; ++r) {
          a[r * n + r] = conj_of(a[r * n + r]);
          for (int64_t q = r + 1; q < n; ++q) {
            const T t = a[r * n + q];
            a[r * n + q] = conj_of(a[q * n + r]);
            a[q * n + r] = conj_of(t);
          }
        }
    }
  });
}

void det_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(-1), batch = batch_count(x.shape(), 2);
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> a;
    std::vector<li> piv;
    const T* src = x.data<T>();
    T* out = c.out(0).data<T>();
    for (int64_t i = 0; i < batch; ++i) {
      check_info(lu(src + i * n * n, n, a, piv), "det", "getrf");
      T d = T(1);
      for (int64_t k = 0; k < n; ++k) d *= (piv[k] != k + 1 ? -a[k * n + k] : a[k * n + k]);
      out[i] = d;
    }
  });
}

void slogdet_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(-1), batch = batch_count(x.shape(), 2);
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = real_t<T>;
    std::vector<T> a;
    std::vector<li> piv;
    const T* src = x.data<T>();
    T *sign = c.out(0).data<T>(), *logabs = c.out(1).data<T>();
    for (int64_t i = 0; i < batch; ++i) {
      check_info(lu(src + i * n * n, n, a, piv), "slogdet", "getrf");
      T s = T(1);
      R l = 0;
      for (int64_t k = 0; k < n; ++k) {
        const T d = a[k * n + k];
        const R m = std::abs(d);
        if (m == R(0)) {
          s = T(0);
          l = -std::numeric_limits<R>::infinity();
          break;
        }
        s *= (piv[k] != k + 1 ? -d : d) / m;
        l += std::log(m);
      }
      sign[i] = s;
      logabs[i] = T(l);
    }
  });
}

void cholesky_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Batch b = batch_of(x);
  const int64_t n = b.rows;
  const bool upper = c.attrs.get_bool("upper");
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = c.out(0).data<T>();
    if (x.numel()) std::memcpy(out, x.data(), x.nbytes());
    for (int64_t i = 0; i < b.batch; ++i) {
      T* a = out + i * b.size();
      li info = potrf(upper ? 'U' : 'L', static_cast<li>(n), a, ld(n));
      check_info(info, "cholesky", "potrf");
      if (info > 0)
        MYCEL_THROW(ValueError, "[cholesky] input 'input_x' is not positive definite: matrix ", i,
                    " of the batch fails at its leading minor of order ", info);
      for (int64_t r = 0; r < n; ++r)  // LAPACK leaves the other triangle as it was
        for (int64_t q = 0; q < n; ++q)
          if (upper ? q < r : q > r) a[r * n + q] = T(0);
    }
  });
}

void cholesky_solve_kernel(const KernelContext& c) {
  const Tensor &rhs = c.in(0), &factor = c.in(1);
  const int64_t n = factor.dim(-1), k = rhs.dim(-1), batch = batch_count(factor.shape(), 2);
  const bool upper = c.attrs.get_bool("upper");
  visit_lapack(rhs.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = c.out(0).data<T>();
    if (rhs.numel()) std::memcpy(out, rhs.data(), rhs.nbytes());
    const T* f = factor.data<T>();
    for (int64_t i = 0; i < batch && n * k > 0; ++i)
      check_info(potrs(upper ? 'U' : 'L', static_cast<li>(n), static_cast<li>(k), f + i * n * n,
                       ld(n), out + i * n * k, ld(k)),
                 "cholesky_solve", "potrs");
  });
}

void matrix_solve_kernel(const KernelContext& c) {
  const Tensor &m = c.in(0), &rhs = c.in(1);
  const int64_t n = m.dim(-1), k = rhs.dim(-1), batch = batch_count(m.shape(), 2);
  const bool adjoint = c.attrs.get_bool("adjoint");
  visit_lapack(m.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> a;
    std::vector<li> piv;
    T* out = c.out(0).data<T>();
    if (rhs.numel()) std::memcpy(out, rhs.data(), rhs.nbytes());
    const T* src = m.data<T>();
    const char trans = adjoint ? (is_complex_v<T> ? 'C' : 'T') : 'N';
    for (int64_t i = 0; i < batch; ++i) {
      li info = lu(src + i * n * n, n, a, piv);
      check_info(info, "matrix_solve", "getrf");
      if (info > 0)
        MYCEL_THROW(ValueError, "[matrix_solve] input 'matrix' is singular: matrix ", i,
                    " of the batch has U(", info - 1, ", ", info - 1,
                    ") = 0 in its LU factorization");
      if (k > 0)
        check_info(getrs(trans, static_cast<li>(n), static_cast<li>(k), a.data(), ld(n), piv.data(),
                         out + i * n * k, ld(k)),
                   "matrix_solve", "getrs");
    }
  });
}

void eigh_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(-1), batch = batch_count(x.shape(), 2);
  const bool vectors = c.attrs.get_bool("compute_eigenvectors");
  const char uplo = c.attrs.get_bool("lower") ? 'L' : 'U';
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = real_t<T>;
    std::vector<T> scratch;
    const T* src = x.data<T>();
    R* w = c.out(0).data<R>();
    for (int64_t i = 0; i < batch && n > 0; ++i) {
      T* a;
      if (vectors) {
        a = c.out(1).data<T>() + i * n * n;
        std::copy(src + i * n * n, src + (i + 1) * n * n, a);
      } else {
        scratch.assign(src + i * n * n, src + (i + 1) * n * n);
        a = scratch.data();
      }
      li info = heevd(vectors ? 'V' : 'N', uplo, static_cast<li>(n), a, ld(n), w + i * n);
      check_info(info, "eigh", "syevd/heevd");
      if (info > 0)
        MYCEL_THROW(ValueError, "[eigh] the eigenvalues of matrix ", i,
                    " of input 'x' did not converge (non-finite entries?)");
    }
  });
}

void svd_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t m = x.dim(-2), n = x.dim(-1), k = std::min(m, n), batch = batch_count(x.shape(), 2);
  const bool uv = c.attrs.get_bool("compute_uv"), full = c.attrs.get_bool("full_matrices");
  const int64_t ucols = full ? m : k, vrows = full ? n : k;  // u: m x ucols, v^H: vrows x n
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = real_t<T>;
    std::vector<T> a, u, vt;
    const T* src = x.data<T>();
    R* s = c.out(0).data<R>();
    for (int64_t i = 0; i < batch && k > 0; ++i) {
      a.assign(src + i * m * n, src + (i + 1) * m * n);
      u.assign(uv ? m * ucols : 1, T(0));
      vt.assign(uv ? vrows * n : 1, T(0));
      li info = gesdd(uv ? (full ? 'A' : 'S') : 'N', static_cast<li>(m), static_cast<li>(n),
                      a.data(), ld(n), s + i * k, u.data(), ld(ucols), vt.data(), ld(n));
      check_info(info, "svd", "gesdd");
      if (info > 0)
        MYCEL_THROW(ValueError, "[svd] the SVD of matrix ", i,
                    " of input 'x' did not converge (non-finite entries?)");
      if (!uv) continue;
      std::copy(u.begin(), u.end(), c.out(1).data<T>() + i * m * ucols);
      T* v = c.out(2).data<T>() + i * n * vrows;  // v = (v^H)^H: n x vrows
      for (int64_t r = 0; r < vrows; ++r)
        for (int64_t q = 0; q < n; ++q) v[q * vrows + r] = conj_of(vt[r * n + q]);
    }
    if (uv && k == 0) {  // an empty matrix: u and v are identities of their sizes
      for (auto [out, rows, cols] :
           {std::tuple{&c.out(1), m, ucols}, std::tuple{&c.out(2), n, vrows}}) {
        T* p = out->template data<T>();
        std::fill(p, p + out->numel(), T(0));
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t d = 0; d < std::min(rows, cols); ++d) p[b * rows * cols + d * cols + d] = 1;
      }
    }
  });
}

void qr_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t m = x.dim(-2), n = x.dim(-1), k = std::min(m, n), batch = batch_count(x.shape(), 2);
  const bool full = c.attrs.get_bool("full_matrices");
  const int64_t qcols = full ? m : k, rrows = full ? m : k;
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> a, tau, q;
    const T* src = x.data<T>();
    for (int64_t i = 0; i < batch; ++i) {
      a.assign(src + i * m * n, src + (i + 1) * m * n);
      tau.assign(std::max<int64_t>(k, 1), T(0));
      if (k > 0)
        check_info(geqrf(static_cast<li>(m), static_cast<li>(n), a.data(), ld(n), tau.data()), "qr",
                   "geqrf");
      T* r = c.out(1).data<T>() + i * rrows * n;
      for (int64_t row = 0; row < rrows; ++row)
        for (int64_t col = 0; col < n; ++col)
          r[row * n + col] = (col >= row && row < k) ? a[row * n + col] : T(0);
      // Q from the reflectors: the first min(n, qcols) columns of a, the rest zero.
      q.assign(m * qcols, T(0));
      for (int64_t row = 0; row < m; ++row)
        for (int64_t col = 0; col < std::min(n, qcols); ++col)
          q[row * qcols + col] = a[row * n + col];
      if (m > 0 && qcols > 0)
        check_info(orgqr(static_cast<li>(m), static_cast<li>(qcols), static_cast<li>(k), q.data(),
                         ld(qcols), tau.data()),
                   "qr", "orgqr");
      std::copy(q.begin(), q.end(), c.out(0).data<T>() + i * m * qcols);
    }
  });
}

void lstsq_kernel(const KernelContext& c) {
  const Tensor &x = c.in(0), &b = c.in(1);
  const int64_t m = x.dim(-2), n = x.dim(-1), batch = batch_count(x.shape(), 2);
  const bool vec = b.ndim() == x.ndim() - 1;
  const int64_t k = vec ? 1 : b.dim(-1), rows = std::max(m, n);
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = real_t<T>;
    std::vector<T> a, bb;
    std::vector<R> s(std::max<int64_t>(std::min(m, n), 1));
    const T *px = x.data<T>(), *pb = b.data<T>();
    T* out = c.out(0).data<T>();
    for (int64_t i = 0; i < batch; ++i) {
      a.assign(px + i * m * n, px + (i + 1) * m * n);
      bb.assign(rows * k, T(0));
      std::copy(pb + i * m * k, pb + (i + 1) * m * k, bb.begin());
      li rank = 0;
      if (m > 0 && n > 0 && k > 0) {
        li info = gelsd(static_cast<li>(m), static_cast<li>(n), static_cast<li>(k), a.data(), ld(n),
                        bb.data(), ld(k), s.data(), &rank);
        check_info(info, "lstsq", "gelsd");
        if (info > 0)
          MYCEL_THROW(ValueError, "[lstsq] the SVD of matrix ", i,
                      " of input 'input' did not converge (non-finite entries?)");
      } else {
        std::fill(bb.begin(), bb.end(), T(0));  // an empty system: the minimum-norm X is 0
      }
      std::copy(bb.begin(), bb.begin() + n * k, out + i * n * k);
    }
  });
}

void lu_factor_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(-1), batch = batch_count(x.shape(), 2);
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = c.out(0).data<T>();
    int32_t* piv = c.out(1).data<int32_t>();
    if (x.numel()) std::memcpy(out, x.data(), x.nbytes());
    std::vector<li> p(std::max<int64_t>(n, 1));
    for (int64_t i = 0; i < batch && n > 0; ++i) {
      check_info(getrf(static_cast<li>(n), static_cast<li>(n), out + i * n * n, ld(n), p.data()),
                 "lu_factor", "getrf");
      for (int64_t k = 0; k < n; ++k) piv[i * n + k] = static_cast<int32_t>(p[k]);
    }
  });
}

void lu_unpack_kernel(const KernelContext& c) {
  const Tensor &lu = c.in(0), &piv = c.in(1);
  const int64_t n = lu.dim(-1), batch = batch_count(lu.shape(), 2);
  visit_lapack(lu.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = lu.data<T>();
    const int32_t* pv = piv.data<int32_t>();
    T *pm = c.out(0).data<T>(), *l = c.out(1).data<T>(), *u = c.out(2).data<T>();
    std::vector<int64_t> perm(n);
    for (int64_t b = 0; b < batch; ++b) {
      check_pivots(pv + b * n, n, b, "lu_unpack");
      const T* ab = a + b * n * n;
      T *pb = pm + b * n * n, *lb = l + b * n * n, *ub = u + b * n * n;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t q = 0; q < n; ++q) {
          lb[r * n + q] = q < r ? ab[r * n + q] : (q == r ? T(1) : T(0));
          ub[r * n + q] = q >= r ? ab[r * n + q] : T(0);
        }
      // Row i of P^T A is row perm[i] of A, so A = P (P^T A) with P[perm[i]][i] = 1.
      for (int64_t i = 0; i < n; ++i) perm[i] = i;
      for (int64_t i = 0; i < n; ++i) std::swap(perm[i], perm[pv[b * n + i] - 1]);
      std::fill(pb, pb + n * n, T(0));
      for (int64_t i = 0; i < n; ++i) pb[perm[i] * n + i] = T(1);
    }
  });
}

void lu_solve_kernel(const KernelContext& c) {
  const Tensor &rhs = c.in(0), &lu = c.in(1), &piv = c.in(2);
  const int64_t n = lu.dim(-1), k = rhs.dim(-1), batch = batch_count(lu.shape(), 2);
  visit_lapack(lu.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = c.out(0).data<T>();
    if (rhs.numel()) std::memcpy(out, rhs.data(), rhs.nbytes());
    const T* a = lu.data<T>();
    const int32_t* pv = piv.data<int32_t>();
    std::vector<li> p(std::max<int64_t>(n, 1));
    for (int64_t b = 0; b < batch && n * k > 0; ++b) {
      check_pivots(pv + b * n, n, b, "lu_solve");
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<li>(pv[b * n + i]);
      check_info(getrs('N', static_cast<li>(n), static_cast<li>(k), a + b * n * n, ld(n), p.data(),
                       out + b * n * k, ld(k)),
                 "lu_solve", "getrs");
    }
  });
}

void eig_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(-1), batch = batch_count(x.shape(), 2);
  const bool vectors = c.attrs.get_bool("compute_v");
  visit_lapack(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = real_t<T>;
    using C = std::complex<R>;
    const T* src = x.data<T>();
    C* w = c.out(0).data<C>();
    C* v = vectors ? c.out(1).data<C>() : nullptr;
    std::vector<T> a, vr(vectors ? std::max<int64_t>(n * n, 1) : 1);
    for (int64_t b = 0; b < batch && n > 0; ++b) {
      a.assign(src + b * n * n, src + (b + 1) * n * n);
      li info;
      if constexpr (is_complex_v<T>) {
        info = geev(vectors ? 'V' : 'N', static_cast<li>(n), a.data(), ld(n), w + b * n, vr.data(),
                    ld(n));
        if (vectors && info == 0) std::copy(vr.begin(), vr.begin() + n * n, v + b * n * n);
      } else {
        std::vector<R> wr(n), wi(n);
        info = geev(vectors ? 'V' : 'N', static_cast<li>(n), a.data(), ld(n), wr.data(), wi.data(),
                    vr.data(), ld(n));
        for (int64_t k = 0; k < n; ++k) w[b * n + k] = C(wr[k], wi[k]);
        // A complex pair (k, k+1) shares columns: v_k = vr[:, k] + i vr[:, k+1], v_k+1 its conj.
        for (int64_t k = 0; vectors && info == 0 && k < n; ++k) {
          C* vb = v + b * n * n;
          if (wi[k] != R(0) && k + 1 < n) {
            for (int64_t r = 0; r < n; ++r) {
              vb[r * n + k] = C(vr[r * n + k], vr[r * n + k + 1]);
              vb[r * n + k + 1] = std::conj(vb[r * n + k]);
            }
            ++k;
          } else {
            for (int64_t r = 0; r < n; ++r) vb[r * n + k] = C(vr[r * n + k], R(0));
          }
        }
      }
      check_info(info, "eig", "geev");
      if (info > 0)
        MYCEL_THROW(ValueError, "[eig] the QR algorithm did not converge for matrix ", b,
                    " of input 'A' (non-finite entries?)");
    }
  });
}

}  // namespace mycel::cpu
