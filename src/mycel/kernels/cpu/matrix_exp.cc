// matrix_exp on CPU: Higham's scaling and squaring with Pade approximants ("The scaling and
// squaring method for the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 2005,
// Algorithm 2.3): the lowest degree m in {3, 5, 7, 9, 13} whose bound theta_m covers the 1-norm,
// else A / 2^s with degree 13, then s squarings. Computed in double (complex<double>) whatever the
// input precision, one matrix of the batch per task; the Pade system is solved by LAPACK's gesv.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/linalg.h"

namespace mycel::cpu {
namespace {

using cdouble = std::complex<double>;

lapack_int gesv(lapack_int n, double* a, lapack_int* p, double* b) {
  return LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, n, a, n, p, b, n);
}
lapack_int gesv(lapack_int n, cdouble* a, lapack_int* p, cdouble* b) {
  return LAPACKE_zgesv(LAPACK_ROW_MAJOR, n, n, a, n, p, b, n);
}

// c = a b for n x n row-major matrices (i-k-j order: the inner loop runs over contiguous rows).
template <class W>
void matmul(const W* a, const W* b, W* c, int64_t n) {
  std::fill_n(c, n * n, W(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const W aik = a[i * n + k];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
}

// The 1-norm (largest column sum of moduli).
template <class W>
double norm1(const W* a, int64_t n) {
  double best = 0;
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::abs(a[i * n + j]);
    best = std::max(best, s);
  }
  return best;
}

// Pade coefficients b_0..b_m of degree m (Higham 2005, Table 2.3 and eq. 2.11).
const std::vector<double>& pade(int m) {
  static const std::vector<double> p3 = {120, 60, 12, 1};
  static const std::vector<double> p5 = {30240, 15120, 3360, 420, 30, 1};
  static const std::vector<double> p7 = {17297280, 8648640, 1995840, 277200, 25200, 1512, 56, 1};
  static const std::vector<double> p9 = {17643225600., 8821612800., 2075673600., 302702400.,
                                         30270240.,    2162160.,    110880.,     3960.,
                                         90.,          1.};
  static const std::vector<double> p13 = {64764752532480000.,
                                          32382376266240000.,
                                          7771770303897600.,
                                          1187353796428800.,
                                          129060195264000.,
                                          10559470521600.,
                                          670442572800.,
                                          33522128640.,
                                          1323241920.,
                                          40840800.,
                                          960960.,
                                          16380.,
                                          182.,
                                          1.};
  switch (m) {
    case 3:
      return p3;
    case 5:
      return p5;
    case 7:
      return p7;
    case 9:
      return p9;
    default:
      return p13;
  }
}

// exp(a) into a (n x n, working type W); returns false if the Pade denominator is singular
// (only for non-finite input).
template <class W>
bool expm(W* a, int64_t n) {
  const int64_t nn = n * n;
  static constexpr double kTheta[] = {1.495585217958292e-2, 2.539398330063230e-1,
                                      9.504178996162932e-1, 2.097847961257068e0,
                                      5.371920351148152e0};
  static constexpr int kDegree[] = {3, 5, 7, 9, 13};
  const double nrm = norm1(a, n);
  int m = 13, s = 0;
  for (int k = 0; k < 4; ++k)
    if (nrm <= kTheta[k]) {
      m = kDegree[k];
      break;
    }
  if (m == 13 && nrm > kTheta[4]) {
    s = static_cast<int>(std::ceil(std::log2(nrm / kTheta[4])));
    const double scale = std::ldexp(1.0, -s);
    for (int64_t i = 0; i < nn; ++i) a[i] *= scale;
  }
  const std::vector<double>& b = pade(m);
  // Even powers A^2, A^4, ... as needed; U = A * (odd part), V = even part.
  std::vector<W> a2(nn), tmp(nn), u(nn, W(0)), v(nn, W(0));
  matmul(a, a, a2.data(), n);
  std::vector<std::vector<W>> pw = {std::vector<W>(nn, W(0)), a2};  // A^0 (filled below), A^2
  for (int64_t i = 0; i < n; ++i) pw[0][i * n + i] = W(1);
  const int top = m == 13 ? 3 : m / 2;  // highest even power used directly: A^(2 top)
  for (int k = 2; k <= top; ++k) {
    pw.emplace_back(nn);
    matmul(pw[k - 1].data(), a2.data(), pw[k].data(), n);
  }
  std::vector<W> odd(nn, W(0));
  if (m < 13) {
    for (int k = 0; k <= m / 2; ++k)
      for (int64_t i = 0; i < nn; ++i) {
        odd[i] += b[2 * k + 1] * pw[k][i];
        v[i] += b[2 * k] * pw[k][i];
      }
  } else {  // degree 13 from A^2, A^4, A^6 (eq. 2.13 of the paper)
    const std::vector<W>&a6 = pw[3], &a4 = pw[2], &i2 = pw[1], &id = pw[0];
    std::vector<W> hi(nn);
    for (int64_t i = 0; i < nn; ++i) hi[i] = b[13] * a6[i] + b[11] * a4[i] + b[9] * i2[i];
    matmul(a6.data(), hi.data(), odd.data(), n);
    for (int64_t i = 0; i < nn; ++i)
      odd[i] += b[7] * a6[i] + b[5] * a4[i] + b[3] * i2[i] + b[1] * id[i];
    for (int64_t i = 0; i < nn; ++i) hi[i] = b[12] * a6[i] + b[10] * a4[i] + b[8] * i2[i];
    matmul(a6.data(), hi.data(), v.data(), n);
    for (int64_t i = 0; i < nn; ++i)
      v[i] += b[6] * a6[i] + b[4] * a4[i] + b[2] * i2[i] + b[0] * id[i];
  }
  matmul(a, odd.data(), u.data(), n);
  // (V - U) X = (V + U).
  std::vector<W> p(nn), q(nn);
  for (int64_t i = 0; i < nn; ++i) {
    p[i] = v[i] - u[i];
    q[i] = v[i] + u[i];
  }
  std::vector<lapack_int> piv(static_cast<size_t>(n));
  if (gesv(static_cast<lapack_int>(n), p.data(), piv.data(), q.data()) != 0) return false;
  for (int k = 0; k < s; ++k) {
    matmul(q.data(), q.data(), tmp.data(), n);
    q.swap(tmp);
  }
  std::copy(q.begin(), q.end(), a);
  return true;
}

}  // namespace

void matrix_exp_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& out = ctx.out(0);
  const int64_t n = x.ndim() ? x.shape().back() : 0, nn = n * n;
  if (nn == 0) return;
  const int64_t batch = x.numel() / nn;
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_complex_v<T>) {
      using W = std::conditional_t<is_complex_v<T>, cdouble, double>;
      const T* px = x.data<T>();
      T* py = out.data<T>();
      parallel_for(batch, nn * n * 20, [&](int64_t lo, int64_t hi) {
        std::vector<W> a(static_cast<size_t>(nn));
        for (int64_t bi = lo; bi < hi; ++bi) {
          for (int64_t i = 0; i < nn; ++i) a[i] = W(px[bi * nn + i]);
          bool ok = true;
          for (int64_t i = 0; i < nn && ok; ++i) ok = std::isfinite(std::abs(a[i]));
          if (ok) ok = expm(a.data(), n);
          for (int64_t i = 0; i < nn; ++i)
            py[bi * nn + i] = ok ? T(a[i]) : T(std::numeric_limits<double>::quiet_NaN());
        }
      });
    }
  });
}

}  // namespace mycel::cpu
