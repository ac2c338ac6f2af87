// matrix_exp (MindSpore's ops.matrix_exp): e**A of square matrices (..., N, N), float32/float64/
// complex64/complex128, by Pade scaling and squaring (kernels/cpu/matrix_exp.cc). Its gradient is
// the Frechet derivative L(A^H, dY), read from the exponential of the block matrix
// [[A^H, dY], [0, A^H]] (upper right block; Higham 2008, Theorem 3.6), so it differentiates again.
#include "mycel/kernels/cpu/linalg.h"
#include "mycel/ops/batch.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using Ints = std::vector<int64_t>;

std::vector<TensorMeta> infer_matrix_exp(const InferContext& c) {
  const TensorMeta& m = c.in(0);
  if (m.dtype != DType::float32 && m.dtype != DType::float64 && !is_complex(m.dtype))
    MYCEL_THROW(TypeError, "[matrix_exp] input 'A' must be float32, float64, complex64 or ",
                "complex128, got ", dtype_name(m.dtype));
  if (m.shape.size() < 2 || m.shape[m.shape.size() - 2] != m.shape.back())
    MYCEL_THROW(ValueError, "[matrix_exp] input 'A' must be a square matrix or a batch of them ",
                "(..., N, N), got shape ", shape_str(m.shape));
  return {m};
}

// P (2n x n) with the identity in rows [row0, row0 + n): P X P'^T places X in a block.
GradVar placement(BpropBuilder& g, int64_t n, int64_t row0, DType t) {
  Tensor p = Tensor::zeros({2 * n, n}, t);
  visit_any_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T> || std::is_floating_point_v<T>)
      for (int64_t i = 0; i < n; ++i) p.data<T>()[(row0 + i) * n + i] = T(1);
  });
  return g.constant(p);
}

std::vector<GradVar> matrix_exp_bprop(BpropBuilder& g) {
  GradVar a = g.input(0), dy = g.dout();
  const TensorMeta m = g.meta(a);
  const int64_t n = m.shape.back(), r = static_cast<int64_t>(m.shape.size());
  Ints perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[i] = i;
  std::swap(perm[r - 1], perm[r - 2]);
  GradVar ah = g.call("transpose", {a}, {{"perm", perm}});
  if (is_complex(m.dtype)) ah = g.call("conj", {ah});
  auto mm = [&g](GradVar x, GradVar y, bool tb = false) {
    return g.call("matmul", {x, y}, {{"transpose_a", false}, {"transpose_b", tb}});
  };
  GradVar top = placement(g, n, 0, m.dtype), bottom = placement(g, n, n, m.dtype);
  // [[A^H, dY], [0, A^H]] = T A^H T^T + B A^H B^T + T dY B^T.
  GradVar block = g.add(g.add(mm(mm(top, ah), top, true), mm(mm(bottom, ah), bottom, true)),
                        mm(mm(top, dy), bottom, true));
  GradVar e = g.call("matrix_exp", {block});
  // Its upper right block: T^T e B.
  GradVar rows = g.call("matmul", {top, e}, {{"transpose_a", true}, {"transpose_b", false}});
  return {mm(rows, bottom)};
}

}  // namespace

MYCEL_REGISTER_OPS(matrix_exp) {
  r.add(make_op("matrix_exp", "MatrixExp",
                "Matrix exponential of square matrices (..., N, N) by Pade scaling and squaring.",
                {{"A"}}, {}, infer_matrix_exp, cpu::matrix_exp_kernel,
                {DType::float32, DType::float64, DType::complex64, DType::complex128}, "bprop"));
}

MYCEL_REGISTER_BPROPS(matrix_exp) { b.add("matrix_exp", matrix_exp_bprop); }

MYCEL_REGISTER_BATCH_RULES(matrix_exp) {
  // The op batches over leading dims: the vmapped batch goes to the front.
  b.add("matrix_exp", [](BatchBuilder& g) -> Batched {
    return {g.call_self({batch::front(g, 0)}), std::vector<int>{0}};
  });
}

}  // namespace mycel
