// Householder QR in LAPACK's packed form (MindSpore's Geqrf, Orgqr, Ormqr; torch.geqrf, ...):
// geqrf gives R on and above the diagonal with the reflectors' vectors below it and their
// scales tau; orgqr forms Q's first n columns from them; ormqr applies Q (or Q^T) to a matrix.
// float32/float64 over leading batch dims. Not differentiable (as MindSpore's).
#include "mycel/kernels/cpu/householder.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

std::vector<DType> real_floats() { return {DType::float32, DType::float64}; }

// The shape of input i, which must be a batch of matrices of a real float dtype.
const Shape& matrices(const InferContext& c, size_t i) {
  const Shape& s = c.in(i).shape;
  if (s.size() < 2)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, i),
                "' must have rank >= 2 (a batch of matrices), got shape ", shape_str(s));
  DType t = c.in(i).dtype;
  if (t != DType::float32 && t != DType::float64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                "' must be float32 or float64, got ", dtype_name(t));
  return s;
}

Shape batch_of(const Shape& s, size_t tail) { return Shape(s.begin(), s.end() - tail); }

// tau: (batch..., k) with the batch dims of matrix input `of` and k <= kmax.
void check_tau(const InferContext& c, size_t tau, size_t of, int64_t kmax) {
  check_same_dtype(c, of, tau);
  const Shape& t = c.in(tau).shape;
  const Shape& a = c.in(of).shape;
  if (t.empty() || batch_of(t, 1) != batch_of(a, 2) || t.back() > kmax)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, tau), "' shape ",
                shape_str(t), " must be (", shape_str(batch_of(a, 2)),
                " batch dims, k) with k <= ", kmax, " for input '", input_name(c, of), "' shape ",
                shape_str(a));
}

std::vector<TensorMeta> infer_geqrf(const InferContext& c) {
  const Shape& s = matrices(c, 0);
  Shape tau = batch_of(s, 2);
  tau.push_back(std::min(s[s.size() - 2], s.back()));
  return {c.in(0), {tau, c.in(0).dtype}};
}

std::vector<TensorMeta> infer_orgqr(const InferContext& c) {
  const Shape& s = matrices(c, 0);
  const int64_t m = s[s.size() - 2], n = s.back();
  if (m < n)
    MYCEL_THROW(ValueError, "[orgqr] input 'input' shape ", shape_str(s),
                " must have at least as many rows as columns (m >= n)");
  check_tau(c, 1, 0, n);
  return {c.in(0)};
}

std::vector<TensorMeta> infer_ormqr(const InferContext& c) {
  const Shape& a = matrices(c, 0);
  const Shape& o = matrices(c, 2);
  check_same_dtype(c, 0, 2);
  const bool left = c.attrs.get_bool("left");
  const int64_t mn = left ? o[o.size() - 2] : o.back();
  if (batch_of(o, 2) != batch_of(a, 2) || a[a.size() - 2] != mn)
    MYCEL_THROW(ValueError, "[ormqr] input 'input' shape ", shape_str(a), " must have ", mn,
                " rows (the ", left ? "rows" : "columns", " of input 'other' shape ", shape_str(o),
                ") and its batch dims");
  check_tau(c, 1, 0, std::min(mn, a.back()));
  return {c.in(2)};
}

}  // namespace

MYCEL_REGISTER_OPS(householder) {
  r.add(make_op("geqrf", "Geqrf",
                "Householder QR in LAPACK's packed form: (r and the reflectors, tau).", {{"input"}},
                {}, infer_geqrf, cpu::geqrf_kernel, real_floats(), "unsupported"));
  r.add(make_op(
      "orgqr", "Orgqr", "The first n columns of Q = H_1 ... H_k from geqrf's reflectors (m >= n).",
      {{"input"}, {"input2"}}, {}, infer_orgqr, cpu::orgqr_kernel, real_floats(), "unsupported"));
  r.add(make_op("ormqr", "Ormqr",
                "Q other, other Q (left=False) or with Q^T (transpose=True), Q from geqrf's "
                "reflectors.",
                {{"input"}, {"tau"}, {"other"}},
                {attr("left", AttrKind::kBool, true), attr("transpose", AttrKind::kBool, false)},
                infer_ormqr, cpu::ormqr_kernel, real_floats(), "unsupported"));
}

}  // namespace mycel
