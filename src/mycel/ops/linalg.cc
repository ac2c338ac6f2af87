// Linear algebra (MindSpore's ops.inverse, det, slogdet, cholesky, cholesky_solve, matrix_solve,
// eigh, svd, qr, lstsq): batched over leading dims (..., M, N), float32/float64/complex64/
// complex128, computed by LAPACK (kernels/cpu/linalg.cc). The backward rules are the closed forms
// of the matrix-calculus literature, written with matmul/inverse/matrix_solve so they differentiate
// again. Every rule takes complex inputs too, in PyTorch's convention (bprop_complex.h): the real
// rules with every transpose a conjugate transpose (mm and mH below) and scalars conjugated, plus
// the phase terms that svd and qr need (their factors' phases are fixed by a convention).
#include "mycel/kernels/cpu/linalg.h"
#include "mycel/ops/batch.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using Ints = std::vector<int64_t>;

bool is_lapack_dtype(DType t) {
  return t == DType::float32 || t == DType::float64 || t == DType::complex64 ||
         t == DType::complex128;
}
std::vector<DType> lapack_dtypes() {
  return {DType::float32, DType::float64, DType::complex64, DType::complex128};
}
DType real_dtype(DType t) {
  return t == DType::complex64 ? DType::float32 : t == DType::complex128 ? DType::float64 : t;
}

// Input i is a matrix or a batch of them (..., M, N) of a LAPACK dtype; `square`: M == N.
const Shape& check_matrix(const InferContext& c, size_t i, bool square) {
  const TensorMeta& m = c.in(i);
  const std::string& name = input_name(c, i);
  if (!is_lapack_dtype(m.dtype))
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", name,
                "' must be float32, float64, complex64 or complex128, got ", dtype_name(m.dtype));
  if (m.shape.size() < 2)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", name,
                "' must be a matrix or a batch of matrices (..., M, N), got shape ",
                shape_str(m.shape));
  const int64_t r = m.shape[m.shape.size() - 2], k = m.shape.back();
  constexpr int64_t kLapackMax = 2147483647;  // LAPACK indexes with 32-bit ints
  if (r > kLapackMax || k > kLapackMax)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", name, "' has shape ", shape_str(m.shape),
                ": LAPACK takes matrices of at most 2^31 - 1 rows and columns");
  if (square && r != k)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", name,
                "' must be square (..., N, N), got shape ", shape_str(m.shape));
  return m.shape;
}

Shape batch_dims(const Shape& s, size_t matrix_dims = 2) {
  return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(matrix_dims));
}
Shape with_matrix(Shape batch, int64_t r, int64_t c) {
  batch.push_back(r);
  batch.push_back(c);
  return batch;
}

// Inputs i (…, N, N) and j (…, N, K): same dtype, same batch dims, matching N.
void check_system(const InferContext& c, size_t a, size_t b) {
  const Shape &sa = check_matrix(c, a, true), &sb = check_matrix(c, b, false);
  check_same_dtype(c, a, b);
  if (batch_dims(sa) != batch_dims(sb) || sb[sb.size() - 2] != sa.back())
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, b), "' with shape ",
                shape_str(sb), " must be (..., ", sa.back(), ", K) with the batch dims of '",
                input_name(c, a), "' ", shape_str(sa));
}

std::vector<TensorMeta> infer_square(const InferContext& c) {
  check_matrix(c, 0, true);
  return {c.in(0)};
}
std::vector<TensorMeta> infer_det(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, true);
  return {{batch_dims(s), c.in(0).dtype}};
}
std::vector<TensorMeta> infer_slogdet(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, true);
  return {{batch_dims(s), c.in(0).dtype}, {batch_dims(s), c.in(0).dtype}};
}
std::vector<TensorMeta> infer_cholesky_solve(const InferContext& c) {
  check_system(c, 1, 0);
  return {c.in(0)};
}
std::vector<TensorMeta> infer_matrix_solve(const InferContext& c) {
  check_system(c, 0, 1);
  return {c.in(1)};
}
std::vector<TensorMeta> infer_eigh(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, true);
  TensorMeta w{Shape(s.begin(), s.end() - 1), real_dtype(c.in(0).dtype)};
  if (!c.attrs.get_bool("compute_eigenvectors")) return {w};
  return {w, c.in(0)};
}
DType complex_dtype(DType t) {
  return t == DType::float64 || t == DType::complex128 ? DType::complex128 : DType::complex64;
}
std::vector<TensorMeta> infer_eig(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, true);
  const DType t = complex_dtype(c.in(0).dtype);
  TensorMeta w{Shape(s.begin(), s.end() - 1), t};
  if (!c.attrs.get_bool("compute_v")) return {w};
  return {w, {s, t}};
}
std::vector<TensorMeta> infer_svd(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, false);
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const bool full = c.attrs.get_bool("full_matrices");
  Shape sv = batch_dims(s);
  sv.push_back(k);
  TensorMeta sm{sv, real_dtype(c.in(0).dtype)};
  if (!c.attrs.get_bool("compute_uv")) return {sm};
  return {sm,
          {with_matrix(batch_dims(s), m, full ? m : k), c.in(0).dtype},
          {with_matrix(batch_dims(s), n, full ? n : k), c.in(0).dtype}};
}
std::vector<TensorMeta> infer_qr(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, false);
  const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const bool full = c.attrs.get_bool("full_matrices");
  return {{with_matrix(batch_dims(s), m, full ? m : k), c.in(0).dtype},
          {with_matrix(batch_dims(s), full ? m : k, n), c.in(0).dtype}};
}
std::vector<TensorMeta> infer_lstsq(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, false);
  const TensorMeta& b = c.in(1);
  check_same_dtype(c, 0, 1);
  const int64_t m = s[s.size() - 2], n = s.back();
  const bool vec = b.shape.size() == s.size() - 1;
  Shape want_batch = batch_dims(s), got_batch = batch_dims(b.shape, vec ? 1 : 2);
  if ((!vec && b.shape.size() != s.size()) || got_batch != want_batch ||
      b.shape[b.shape.size() - (vec ? 1 : 2)] != m)
    MYCEL_THROW(ValueError, "[lstsq] input 'A' with shape ", shape_str(b.shape), " must be (..., ",
                m, ", K) or (..., ", m, ") with the batch dims of input 'input' ", shape_str(s));
  Shape out = want_batch;
  out.push_back(n);
  if (!vec) out.push_back(b.shape.back());
  return {{out, c.in(0).dtype}};
}

// LU_pivots (input i): int32 of shape (..., N) for an LU_data of shape (..., N, N).
void check_pivots_input(const InferContext& c, size_t i, const Shape& lu) {
  const TensorMeta& p = c.in(i);
  if (p.dtype != DType::int32)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input 'LU_pivots' must be int32, got ",
                dtype_name(p.dtype));
  Shape want(lu.begin(), lu.end() - 1);
  if (p.shape != want)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input 'LU_pivots' must have shape ", shape_str(want),
                " for 'LU_data' of shape ", shape_str(lu), ", got ", shape_str(p.shape));
}
std::vector<TensorMeta> infer_lu_factor(const InferContext& c) {
  const Shape& s = check_matrix(c, 0, true);
  return {c.in(0), {Shape(s.begin(), s.end() - 1), DType::int32}};
}
std::vector<TensorMeta> infer_lu_unpack(const InferContext& c) {
  check_pivots_input(c, 1, check_matrix(c, 0, true));
  return {c.in(0), c.in(0), c.in(0)};
}
std::vector<TensorMeta> infer_lu_solve(const InferContext& c) {
  check_system(c, 1, 0);
  check_pivots_input(c, 2, c.in(1).shape);
  return {c.in(0)};
}

OpDef la_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
            std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel, std::string grad) {
  return make_op(std::move(name), std::move(cls), std::move(doc), std::move(inputs),
                 std::move(attrs), std::move(infer), std::move(kernel), lapack_dtypes(),
                 std::move(grad));
}

// ---- helpers of the backward rules ----
std::vector<GradVar> eig_bprop(BpropBuilder& g);

size_t rank_of(BpropBuilder& g, const GradVar& x) { return g.meta(x).shape.size(); }
// x with its last two dims swapped.
GradVar mT(BpropBuilder& g, GradVar x, size_t rank) {
  Ints perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return g.call("transpose", {x}, {{"perm", perm}});
}
// Whether the op differentiates complex matrices: its inputs share input 0's dtype (the rules'
// intermediate values have no known metadata, so they are judged by it).
bool complex_op(BpropBuilder& g) { return is_complex(g.meta(g.input(0)).dtype); }
// x^H: x^T, conjugated for a complex op (the complex rules' every transpose).
GradVar mH(BpropBuilder& g, GradVar x, size_t rank) {
  GradVar t = mT(g, x, rank);
  return complex_op(g) ? g.call("conj", {t}) : t;
}
// a b with a transposed operand conjugated too for a complex op: op(a) = a^H, op(b) = b^H.
GradVar mm(BpropBuilder& g, GradVar a, GradVar b, bool ta = false, bool tb = false) {
  if (ta && complex_op(g)) a = g.call("conj", {a});
  if (tb && complex_op(g)) b = g.call("conj", {b});
  return g.call("matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
}
GradVar unsqueeze(BpropBuilder& g, GradVar v, int64_t axis) {
  return g.call("expand_dims", {v}, {{"axis", axis}});
}
// The n x n identity in dtype t (a constant that broadcasts over batch dims).
GradVar eye(BpropBuilder& g, int64_t n, DType t) {
  Tensor e = Tensor::zeros({n, n}, t);
  visit_float_dtype(t, "eye", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) e.data<T>()[i * n + i] = T(1);
  });
  return g.constant(e);
}
// The n x n matrix with `diag` on the diagonal and `off` elsewhere, in any dtype (complex too).
GradVar diag_const(BpropBuilder& g, int64_t n, DType t, double diag, double off) {
  Tensor e = Tensor::zeros({n, n}, t);
  visit_any_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T> || std::is_floating_point_v<T>)
      for (int64_t i = 0; i < n * n; ++i) e.data<T>()[i] = T(i % (n + 1) == 0 ? diag : off);
  });
  return g.constant(e);
}
GradVar half(BpropBuilder& g, GradVar x, DType t) {
  return g.mul(x, g.scalar(0.5, real_dtype(t)));  // (a real scalar promotes to complex x's type)
}
// (x + x^H) / 2: the (Hermitian) symmetric part.
GradVar sym(BpropBuilder& g, GradVar x, size_t rank, DType t) {
  return half(g, g.add(x, mH(g, x, rank)), t);
}
// dout of output k of a multi-output op.
GradVar dout_k(BpropBuilder& g, size_t k) { return g.tuple_get(g.dout(), k); }
GradVar out_k(BpropBuilder& g, size_t k) { return g.tuple_get(g.out(), k); }
// F with F_ij = 1 / (v_j - v_i) off the diagonal and 0 on it (v: (..., n)).
GradVar gap_inverse(BpropBuilder& g, GradVar v, int64_t n, DType t) {
  GradVar i = eye(g, n, t);
  GradVar diff = g.sub(unsqueeze(g, v, -2), unsqueeze(g, v, -1));
  return g.div(g.sub(g.ones_like(i), i), g.add(diff, i));
}

// d inverse: Y = A^-1 (adjoint: Y = A^-H) gives dA = -Y^H dY Y^H (adjoint: -Y dY^H Y).
std::vector<GradVar> inverse_bprop(BpropBuilder& g) {
  GradVar y = g.out(), dy = g.dout();
  if (g.attrs().get_bool("adjoint")) return {g.neg(mm(g, mm(g, y, dy, false, true), y))};
  return {g.neg(mm(g, mm(g, y, dy, true), y, false, true))};
}

// d det: dA = dout conj(det(A)) A^-H (A must be invertible).
std::vector<GradVar> det_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  const DType t = g.meta(x).dtype;
  GradVar s = g.mul(g.dout(), bprop::conj_if_complex(g, g.out(), t));
  s = unsqueeze(g, unsqueeze(g, s, -1), -1);
  return {g.mul(s, mH(g, g.call("inverse", {x}), rank_of(g, x)))};
}

// d slogdet: d log det A = tr(A^-1 dA) = d log|det A| + i d(phase). Real A: the sign is locally
// constant and dA = dlogabs A^-T. Complex A: sign = e^(i phase) moves too, and the cotangent of
// log det is dlogabs + i Im(conj(sign) dsign), so dA = (that) A^-H.
std::vector<GradVar> slogdet_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  GradVar s = dout_k(g, 1);
  if (is_complex(g.meta(x).dtype)) {
    // (logabsdet has the input's complex dtype, its imaginary part 0)
    GradVar phase = g.call("imag", {g.mul(g.call("conj", {out_k(g, 0)}), dout_k(g, 0))});
    s = g.call("complex", {g.call("real", {s}), phase});
  }
  s = unsqueeze(g, unsqueeze(g, s, -1), -1);
  return {g.mul(s, mH(g, g.call("inverse", {x}), rank_of(g, x)))};
}

// d cholesky (Murray 2016): with P = Phi(L^T dL) (lower triangle, diagonal halved),
// dA = sym(L^-H P L^-1). The upper factor U = L^H transposes in and out.
std::vector<GradVar> cholesky_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  const size_t r = rank_of(g, x);
  const DType t = g.meta(x).dtype;
  const int64_t n = g.meta(x).shape.back();
  const bool upper = g.attrs().get_bool("upper");
  GradVar l = upper ? mH(g, g.out(), r) : g.out(), dl = upper ? mH(g, g.dout(), r) : g.dout();
  GradVar p = mm(g, l, dl, true);
  p = g.sub(g.call("tril", {p}), half(g, g.mul(p, diag_const(g, n, t, 1, 0)), t));
  GradVar linv = g.call("inverse", {l});
  return {sym(g, mm(g, mm(g, linv, p, true), linv), r, t)};
}

// d cholesky_solve: X = A^-1 B with A = L L^H: dB = A^-1 dX and, through the factor,
// dL = -tril((dB X^H + X dB^H) L) (upper: dU = -triu(U (dB X^H + X dB^H))).
std::vector<GradVar> cholesky_solve_bprop(BpropBuilder& g) {
  GradVar f = g.input(1), x = g.out();
  const bool upper = g.attrs().get_bool("upper");
  GradVar db = g.call("cholesky_solve", {g.dout(), f}, {{"upper", upper}});
  GradVar s = g.add(mm(g, db, x, false, true), mm(g, x, db, false, true));
  GradVar df = upper ? g.neg(g.call("triu", {mm(g, f, s)})) : g.neg(g.call("tril", {mm(g, s, f)}));
  return {db, df};
}

// d matrix_solve: X = A^-1 B gives dB = A^-H dX, dA = -dB X^H (adjoint: dA = -X dB^H).
std::vector<GradVar> matrix_solve_bprop(BpropBuilder& g) {
  GradVar a = g.input(0), x = g.out();
  const bool adjoint = g.attrs().get_bool("adjoint");
  GradVar db = g.call("matrix_solve", {a, g.dout()}, {{"adjoint", !adjoint}});
  GradVar da = adjoint ? mm(g, x, db, false, true) : mm(g, db, x, false, true);
  return {g.neg(da), db};
}

// d eigh: dA = V (diag(dw) + F o (V^H dV)) V^H, symmetrized, F_ij = 1/(w_j - w_i) (real). For
// complex A the loss must not depend on the eigenvectors' phases (the diagonal of V^H dV is
// dropped, as PyTorch does).
std::vector<GradVar> eigh_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  const size_t r = rank_of(g, x);
  const DType t = g.meta(x).dtype, rt = real_dtype(t);
  const int64_t n = g.meta(x).shape.back();
  const bool vectors = g.attrs().get_bool("compute_eigenvectors");
  GradVar w, v, dw, inner;
  if (vectors) {
    w = out_k(g, 0);
    v = out_k(g, 1);
    dw = dout_k(g, 0);
  } else {  // eigenvalues only: the rule still needs the eigenvectors
    GradVar wv = g.call("eigh", {x}, {{"lower", g.attrs().get_bool("lower")}});
    w = g.tuple_get(wv, 0);
    v = g.tuple_get(wv, 1);
    dw = g.dout();
  }
  inner = g.mul(unsqueeze(g, dw, -2), eye(g, n, rt));
  if (vectors) inner = g.add(inner, g.mul(gap_inverse(g, w, n, rt), mm(g, v, dout_k(g, 1), true)));
  return {sym(g, mm(g, mm(g, v, inner), v, false, true), r, t)};
}

// d svd (A = U S V^H, k = min(M, N) singular values; Townsend 2016, as PyTorch writes it):
// dA = U [ (skew(U^T dU) / E) S + S (skew(V^T dV) / E) + diag(dS) ] V^T
//      + (I - U U^T) dU S^-1 V^T + U S^-1 dV^T (I - V V^T),   E_ij = s_j^2 - s_i^2 (i != j);
// complex: every ^T a ^H, plus the phase term below.
std::vector<GradVar> svd_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  const size_t r = rank_of(g, x);
  const DType t = g.meta(x).dtype, rt = real_dtype(t);
  const Shape& xs = g.meta(x).shape;
  const int64_t m = xs[r - 2], n = xs[r - 1], k = std::min(m, n);
  const bool uv = g.attrs().get_bool("compute_uv");
  if (uv && g.attrs().get_bool("full_matrices") && m != n)
    MYCEL_THROW(NotSupported, "[svd] the gradient of full_matrices=True needs a square input, got ",
                "shape ", shape_str(xs), " (use full_matrices=False)");
  GradVar s, u, v, ds;
  if (uv) {
    s = out_k(g, 0);
    u = out_k(g, 1);
    v = out_k(g, 2);
    ds = dout_k(g, 0);
  } else {
    GradVar suv = g.call("svd", {x}, {{"compute_uv", true}, {"full_matrices", false}});
    s = g.tuple_get(suv, 0);
    u = g.tuple_get(suv, 1);
    v = g.tuple_get(suv, 2);
    ds = g.dout();
  }
  // diag(dS) is real (S is); a complex op's inner matrix is complex, so it is cast once here.
  GradVar inner = g.mul(unsqueeze(g, ds, -2), eye(g, k, rt));
  if (is_complex(t)) inner = g.cast(inner, t);
  if (!uv) return {mm(g, mm(g, u, inner), v, false, true)};
  GradVar du = dout_k(g, 1), dv = dout_k(g, 2);
  GradVar finv = gap_inverse(g, g.mul(s, s), k, rt);  // 1 / (s_j^2 - s_i^2)
  GradVar utdu = mm(g, u, du, true), vtdv = mm(g, v, dv, true);
  GradVar ju = g.mul(finv, g.sub(utdu, mH(g, utdu, r))),
          jv = g.mul(finv, g.sub(vtdv, mH(g, vtdv, r)));
  inner = g.add(inner, g.add(g.mul(ju, unsqueeze(g, s, -2)), g.mul(unsqueeze(g, s, -1), jv)));
  if (is_complex(t)) {
    // The phases: U e^(i theta), V e^(i theta) is the same factorization, so only the difference
    // of the two phase changes is fixed by dA (Im diag(U^H dA V) / s); a loss that does not depend
    // on the common phase lets it all be charged to U: diag(i Im diag(U^H dU) / s).
    GradVar im = g.call("imag", {g.mul(utdu, eye(g, k, rt))});  // Im diag(U^H dU), on the diagonal
    GradVar phase = g.div(im, unsqueeze(g, s, -2));
    inner = g.add(inner, g.call("complex", {g.zeros_like(phase), phase}));
  }
  GradVar da = mm(g, mm(g, u, inner), v, false, true);
  GradVar s_row = unsqueeze(g, s, -2);  // scales columns: X S^-1
  if (m > k) {
    GradVar pu = g.sub(du, mm(g, u, utdu));  // (I - U U^T) dU
    da = g.add(da, mm(g, g.div(pu, s_row), v, false, true));
  }
  if (n > k) {
    GradVar pv = g.sub(dv, mm(g, v, vtdv));  // (I - V V^T) dV
    da = g.add(da, mm(g, u, g.div(pv, s_row), false, true));
  }
  return {da};
}

// d qr (M >= N or full square; Walter & Lehmann, as TensorFlow writes it):
// M = R dR^T - dQ^T Q, dA = (dQ + Q copyltu(M)) R^-T, copyltu(M) = tril(M) + tril(M, -1)^T;
// complex: every ^T a ^H, and copyltu's diagonal Re diag(M) (see below).
std::vector<GradVar> qr_bprop(BpropBuilder& g) {
  GradVar x = g.input(0);
  const size_t r = rank_of(g, x);
  const Shape& xs = g.meta(x).shape;
  const int64_t m = xs[r - 2], n = xs[r - 1];
  const bool full = g.attrs().get_bool("full_matrices");
  if (m < n || (full && m != n))
    MYCEL_THROW(NotSupported, "[qr] the gradient needs M >= N (and M == N with full_matrices), ",
                "got shape ", shape_str(xs));
  GradVar q = out_k(g, 0), rr = out_k(g, 1), dq = dout_k(g, 0), dr = dout_k(g, 1);
  GradVar mmat = g.sub(mm(g, rr, dr, false, true), mm(g, dq, q, true));
  GradVar lower = g.call("tril", {mmat}, {{"diagonal", int64_t{-1}}});
  GradVar copyltu = g.add(g.call("tril", {mmat}), mT(g, lower, r));
  if (complex_op(g)) {
    // R's diagonal is real (LAPACK's Householder QR), so Q^H dQ's is imaginary: the diagonal
    // keeps Re(M_ii) alone, copyltu(M) = tril(M, -1) + tril(M, -1)^H + Re diag(M).
    const int64_t n2 = g.meta(rr).shape.back();
    GradVar re_diag = g.mul(g.call("real", {mmat}), eye(g, n2, real_dtype(g.meta(x).dtype)));
    copyltu = g.add(g.add(lower, mH(g, lower, r)), g.cast(re_diag, g.meta(x).dtype));
  }
  GradVar lhs = g.add(dq, mm(g, q, copyltu));
  return {mm(g, lhs, g.call("inverse", {rr}), false, true)};
}

// d lstsq for a full-rank A (M x N) and X = argmin |A X - B| (minimum norm when M < N); for
// complex A every transpose below is a conjugate transpose.
// M >= N: X = (A^T A)^-1 A^T B; with Y = (A^T A)^-1 dX and r = B - A X:
//   dB = A Y, dA = r Y^T - A Y X^T.
// M < N: X = A^T Z, Z = (A A^T)^-1 B; with W = (A A^T)^-1 A dX:
//   dB = W, dA = Z dX^T - W X^T - Z W^T A.
std::vector<GradVar> lstsq_bprop(BpropBuilder& g) {
  GradVar a = g.input(0), b = g.input(1), x = g.out(), dx = g.dout();
  const Shape as = g.meta(a).shape, bs = g.meta(b).shape;
  const size_t r = as.size();
  const int64_t m = as[r - 2], n = as[r - 1];
  if (bs.size() == r - 1) {  // a vector right-hand side: one column
    b = unsqueeze(g, b, -1);
    x = unsqueeze(g, x, -1);
    dx = unsqueeze(g, dx, -1);
  }
  GradVar da, db;
  if (m >= n) {
    GradVar y = g.call("matrix_solve", {mm(g, a, a, true), dx});
    GradVar ay = mm(g, a, y);
    db = ay;
    da = g.sub(mm(g, g.sub(b, mm(g, a, x)), y, false, true), mm(g, ay, x, false, true));
  } else {
    GradVar h = mm(g, a, a, false, true);
    GradVar z = g.call("matrix_solve", {h, b}), w = g.call("matrix_solve", {h, mm(g, a, dx)});
    db = w;
    da = g.sub(g.sub(mm(g, z, dx, false, true), mm(g, w, x, false, true)),
               mm(g, mm(g, z, w, false, true), a));
  }
  if (bs.size() == r - 1) db = g.reshape(db, bs);
  return {da, db};
}

// (P, L, U) of packed LU factors, as a tuple.
GradVar unpack(BpropBuilder& g, GradVar lu, GradVar piv) { return g.call("lu_unpack", {lu, piv}); }

// d lu_factor (square; P^T A = L U, as PyTorch derives it): with gL, gU the strict lower and upper
// parts of the packed cotangent, dA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T (^H for
// complex A).
std::vector<GradVar> lu_factor_bprop(BpropBuilder& g) {
  GradVar plu = unpack(g, out_k(g, 0), out_k(g, 1)), dlu = dout_k(g, 0);
  GradVar p = g.tuple_get(plu, 0), l = g.tuple_get(plu, 1), u = g.tuple_get(plu, 2);
  GradVar gl = g.call("tril", {dlu}, {{"diagonal", int64_t{-1}}}), gu = g.call("triu", {dlu});
  GradVar inner = g.add(g.call("tril", {mm(g, l, gl, true)}, {{"diagonal", int64_t{-1}}}),
                        g.call("triu", {mm(g, gu, u, false, true)}));
  GradVar left = mm(g, g.call("inverse", {l}), inner, true);  // L^-T inner
  return {mm(g, p, mm(g, left, g.call("inverse", {u}), false, true))};
}

// d lu_unpack: L's strict lower and U's upper part are where they came from in LU_data.
std::vector<GradVar> lu_unpack_bprop(BpropBuilder& g) {
  return {g.add(g.call("tril", {dout_k(g, 1)}, {{"diagonal", int64_t{-1}}}),
                g.call("triu", {dout_k(g, 2)})),
          GradVar()};
}

// d lu_solve: X = A^-1 b with A = P L U: db = A^-T dX, dA = -db X^T, and through the packed
// factors dLU = tril(P^T dA U^T, -1) + triu(L^T P^T dA).
std::vector<GradVar> lu_solve_bprop(BpropBuilder& g) {
  GradVar x = g.out();
  GradVar plu = unpack(g, g.input(1), g.input(2));
  GradVar p = g.tuple_get(plu, 0), l = g.tuple_get(plu, 1), u = g.tuple_get(plu, 2);
  GradVar a = mm(g, p, mm(g, l, u));
  GradVar db = g.call("matrix_solve", {a, g.dout()}, {{"adjoint", true}});
  GradVar pda = g.neg(mm(g, p, mm(g, db, x, false, true), true));  // P^T dA
  GradVar dlu = g.add(g.call("tril", {mm(g, pda, u, false, true)}, {{"diagonal", int64_t{-1}}}),
                      g.call("triu", {mm(g, l, pda, true)}));
  return {db, dlu, GradVar()};
}

// d eig, for distinct eigenvalues (the rule of Giles 2008 / PyTorch's linalg_eig_backward), in the
// complex cotangent convention dL/dRe + i dL/dIm. V's columns have unit norm and a phase fixed by
// LAPACK, so only the part of V^H dV that does not change that gauge counts:
// K = V^H dV - V^H V diag(Re diag(V^H dV)), and with E_ij = w_j - w_i,
// dA = V^-H (diag(dw) + K / conj(E) off the diagonal) V^H (its real part for a real A).
// The loss must not depend on the eigenvectors' phases (|V|, not V itself).
std::vector<GradVar> eig_bprop(BpropBuilder& g) {
  GradVar a = g.input(0);
  const size_t r = rank_of(g, a);
  const int64_t n = g.meta(a).shape.back();
  const bool vectors = g.attrs().get_bool("compute_v");
  GradVar w, v, dw, dv;
  if (vectors) {
    w = out_k(g, 0);
    v = out_k(g, 1);
    dw = dout_k(g, 0);
    dv = dout_k(g, 1);
  } else {  // eigenvalues only: the rule still needs the eigenvectors
    GradVar wv = g.call("eig", {a}, {{"compute_v", true}});
    w = g.tuple_get(wv, 0);
    v = g.tuple_get(wv, 1);
    dw = g.dout();
  }
  const DType ct = g.meta(w).dtype;
  auto as_complex = [&g, ct](GradVar d) {  // a real cotangent (zeros for an unused output)
    return g.meta(d).dtype == ct ? d : g.call("cast", {d}, {{"dtype", ct}});
  };
  dw = as_complex(dw);
  if (vectors) dv = as_complex(dv);
  GradVar eye_c = diag_const(g, n, ct, 1, 0);
  GradVar vh = g.call("conj", {mT(g, v, r)});
  GradVar inner = g.mul(unsqueeze(g, dw, -2), eye_c);  // diag(dw)
  if (vectors) {
    GradVar vhdv = mm(g, vh, dv);
    GradVar re_diag = g.call("real", {g.sum(g.mul(vhdv, eye_c), {static_cast<int64_t>(r) - 2})});
    GradVar scale = unsqueeze(g, g.call("cast", {re_diag}, {{"dtype", ct}}), -2);
    GradVar k = g.sub(vhdv, mm(g, vh, g.mul(v, scale)));
    GradVar wc = g.call("conj", {w});
    GradVar gap = g.add(g.sub(unsqueeze(g, wc, -2), unsqueeze(g, wc, -1)), eye_c);  // 1 on diag
    inner = g.add(inner, g.mul(g.div(k, gap), diag_const(g, n, ct, 0, 1)));
  }
  GradVar da = g.call("matrix_solve", {vh, mm(g, inner, vh)});
  return {is_complex(g.meta(a).dtype) ? da : g.call("real", {da})};
}

}  // namespace

MYCEL_REGISTER_OPS(linalg) {
  using namespace cpu;
  const AttrDef upper = attr("upper", AttrKind::kBool, false);
  r.add(la_op("inverse", "MatrixInverse",
              "Inverse of square matrices (adjoint: of their conjugate transposes); singular "
              "input raises ValueError.",
              {{"x"}}, {attr("adjoint", AttrKind::kBool, false)}, infer_square,
              matrix_inverse_kernel, "bprop"));
  r.add(la_op("det", "MatrixDeterminant", "Determinants of square matrices (..., N, N) -> (...).",
              {{"x"}}, {}, infer_det, det_kernel, "bprop"));
  r.add(la_op("slogdet", "LogMatrixDeterminant",
              "(sign, log|det|) of square matrices; a singular matrix gives (0, -inf).", {{"x"}},
              {}, infer_slogdet, slogdet_kernel, "bprop"));
  r.add(la_op("cholesky", "Cholesky",
              "Cholesky factor L (x = L L^H), or U (x = U^H U) if upper; x must be positive "
              "definite.",
              {{"input_x"}}, {upper}, infer_square, cholesky_kernel, "bprop"));
  r.add(la_op("cholesky_solve", "CholeskySolve",
              "X with A X = input, A given by its Cholesky factor input2 (lower, or upper).",
              {{"input"}, {"input2"}}, {upper}, infer_cholesky_solve, cholesky_solve_kernel,
              "bprop"));
  r.add(la_op("matrix_solve", "MatrixSolve",
              "X with matrix X = rhs (adjoint: matrix^H X = rhs); singular matrix raises "
              "ValueError.",
              {{"matrix"}, {"rhs"}}, {attr("adjoint", AttrKind::kBool, false)}, infer_matrix_solve,
              matrix_solve_kernel, "bprop"));
  r.add(la_op(
      "eigh", "Eigh",
      "Eigenvalues (ascending) and eigenvectors (columns) of symmetric/Hermitian "
      "matrices, read from the lower (or upper) triangle.",
      {{"x"}},
      {attr("compute_eigenvectors", AttrKind::kBool, true), attr("lower", AttrKind::kBool, true)},
      infer_eigh, eigh_kernel, "bprop"));
  r.add(la_op("eig", "Eig",
              "Eigenvalues and (compute_v) right eigenvectors of general square matrices, complex "
              "(LAPACK geev).",
              {{"A"}}, {attr("compute_v", AttrKind::kBool, true)}, infer_eig, eig_kernel, "bprop"));
  r.add(la_op(
      "svd", "Svd",
      "Singular values (descending) and, if compute_uv, u and v with x = u diag(s) v^H.",
      {{"input"}},
      {attr("full_matrices", AttrKind::kBool, false), attr("compute_uv", AttrKind::kBool, true)},
      infer_svd, svd_kernel, "bprop"));
  r.add(la_op("qr", "Qr", "QR factorization x = q r: q orthonormal columns, r upper triangular.",
              {{"x"}}, {attr("full_matrices", AttrKind::kBool, false)}, infer_qr, qr_kernel,
              "bprop"));
  r.add(la_op("lstsq", "Lstsq",
              "Least-squares / minimum-norm solution X of input X = A (LAPACK gelsd).",
              {{"input"}, {"A"}}, {}, infer_lstsq, lstsq_kernel, "bprop"));
  r.add(la_op("lu_factor", "LuFactor",
              "Packed LU factors of square matrices and their 1-based int32 pivots (P A = L U).",
              {{"A"}}, {}, infer_lu_factor, lu_factor_kernel, "bprop"));
  r.add(la_op("lu_unpack", "LuUnpack",
              "(P, L, U) with A = P L U from packed LU factors and pivots.",
              {{"LU_data"}, {"LU_pivots"}}, {}, infer_lu_unpack, lu_unpack_kernel, "bprop"));
  r.add(la_op("lu_solve", "LuSolve", "X with A X = b, A given by its packed LU factors and pivots.",
              {{"b"}, {"LU_data"}, {"LU_pivots"}}, {}, infer_lu_solve, lu_solve_kernel, "bprop"));
}

MYCEL_REGISTER_BPROPS(linalg) {
  b.add("inverse", inverse_bprop);
  b.add("det", det_bprop);
  b.add("slogdet", slogdet_bprop);
  b.add("cholesky", cholesky_bprop);
  b.add("cholesky_solve", cholesky_solve_bprop);
  b.add("matrix_solve", matrix_solve_bprop);
  b.add("eigh", eigh_bprop);
  b.add("eig", eig_bprop);
  b.add("svd", svd_bprop);
  b.add("qr", qr_bprop);
  b.add("lstsq", lstsq_bprop);
  b.add("lu_factor", lu_factor_bprop);
  b.add("lu_unpack", lu_unpack_bprop);
  b.add("lu_solve", lu_solve_bprop);
}

}  // namespace mycel

namespace mycel {
namespace {

// vmap: the ops already batch over leading dims, so the vmapped batch goes to the front of every
// input (an unbatched one is broadcast there) and one call covers it; outputs keep it at axis 0.
Batched batch_leading(BatchBuilder& g) {
  std::vector<GradVar> in;
  for (size_t i = 0; i < g.num_inputs(); ++i) in.push_back(batch::front(g, i));
  GradVar out = g.call_self(in);
  return {out, std::vector<int>(g.tuple_size(out), 0)};
}

}  // namespace

MYCEL_REGISTER_BATCH_RULES(linalg) {
  for (const char* name :
       {"inverse", "det", "slogdet", "cholesky", "cholesky_solve", "matrix_solve", "eigh", "svd",
        "qr", "lstsq", "lu_factor", "lu_unpack", "lu_solve", "eig",
        // ops/householder.cc
        "geqrf", "orgqr", "ormqr"})
    b.add(name, batch_leading);
}

}  // namespace mycel
