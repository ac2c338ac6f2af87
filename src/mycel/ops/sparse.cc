// Sparse (CSR) ops over the arrays of MindSpore's CSRTensor: SpMM and its transpose (CSRTensor.mv
// and .mm, ops.csr_mm), SDDMM, gathers of a dense matrix at the pattern and the scatter back
// (csr_gather / csr_scatter, each the other's gradient), and the row conversions csr2coo /
// coo2csr. The attribute `shape` is the dense (M, N); the index arrays are not differentiable.
// Gradients are written with these ops, so they differentiate again.
#include "mycel/kernels/cpu/sparse.h"
#include "mycel/ops/batch.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {

using detail::attr;
using detail::Ints;
using detail::make_op;

const std::vector<DType> kValueTypes = {DType::float32, DType::float64, DType::int32, DType::int64};

void check_index(const InferContext& c, size_t i) {
  const TensorMeta& m = c.in(i);
  if (m.dtype != DType::int32 && m.dtype != DType::int64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                "' must be int32 or int64, got ", dtype_name(m.dtype));
  if (m.shape.size() != 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, i),
                "' must be 1-d, got shape ", shape_str(m.shape));
}

// The dense (M, N) of attribute `shape`, after checking indptr (M + 1,) and indices (nnz,).
std::pair<int64_t, int64_t> csr_dims(const InferContext& c) {
  const Ints& s = c.attrs.get_ints("shape");
  if (s.size() != 2 || s[0] < 0 || s[1] < 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'shape' must be 2 non-negative ints ",
                "(rows, cols), got ", shape_str(s));
  check_index(c, 0);
  check_index(c, 1);
  if (c.in(0).shape[0] != s[0] + 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input 'indptr' must have rows + 1 = ", s[0] + 1,
                " entries for shape ", shape_str(s), ", got shape ", shape_str(c.in(0).shape));
  return {s[0], s[1]};
}

// Input i: values of shape (nnz,), nnz read from indices.
void check_values(const InferContext& c, size_t i) {
  if (c.in(i).shape != Shape{c.in(1).shape[0]})
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, i),
                "' must have shape (nnz,) = ", shape_str(c.in(1).shape), " like 'indices', got ",
                shape_str(c.in(i).shape));
}

void check_matrix(const InferContext& c, size_t i, int64_t rows, const char* what) {
  const Shape& s = c.in(i).shape;
  if (s.size() != 2 || s[0] != rows)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, i), "' must be 2-d with ",
                rows, " rows (", what, "), got shape ", shape_str(s));
}

std::vector<TensorMeta> infer_spmm(const InferContext& c) {
  auto [m, n] = csr_dims(c);
  check_values(c, 2);
  check_same_dtype(c, 2, 3);
  const bool t = c.attrs.get_bool("transpose_a");
  check_matrix(c, 3, t ? m : n, t ? "the rows of the sparse matrix, transposed" : "its columns");
  return {{Shape{t ? n : m, c.in(3).shape[1]}, c.in(2).dtype}};
}

std::vector<TensorMeta> infer_sddmm(const InferContext& c) {
  auto [m, n] = csr_dims(c);
  check_same_dtype(c, 2, 3);
  check_matrix(c, 2, m, "the sparse matrix's rows");
  check_matrix(c, 3, n, "the sparse matrix's columns");
  if (c.in(2).shape[1] != c.in(3).shape[1])
    MYCEL_THROW(ShapeError, "[csr_sddmm] inputs 'x' ", shape_str(c.in(2).shape), " and 'y' ",
                shape_str(c.in(3).shape), " must have the same number of columns");
  return {{Shape{c.in(1).shape[0]}, c.in(2).dtype}};
}

std::vector<TensorMeta> infer_gather(const InferContext& c) {
  auto [m, n] = csr_dims(c);
  if (c.in(2).shape != Shape{m, n})
    MYCEL_THROW(ShapeError, "[csr_gather] input 'dense' must have the sparse shape ",
                shape_str(Shape{m, n}), ", got ", shape_str(c.in(2).shape));
  return {{Shape{c.in(1).shape[0]}, c.in(2).dtype}};
}

std::vector<TensorMeta> infer_scatter(const InferContext& c) {
  auto [m, n] = csr_dims(c);
  check_values(c, 2);
  return {{Shape{m, n}, c.in(2).dtype}};
}

std::vector<TensorMeta> infer_csr2coo(const InferContext& c) {
  check_index(c, 0);
  const int64_t len = c.attrs.get_int("length");
  if (len < 0) MYCEL_THROW(ValueError, "[csr2coo] attribute 'length' must be >= 0, got ", len);
  if (c.in(0).shape[0] < 1)
    MYCEL_THROW(ValueError, "[csr2coo] input 'indptr' must have at least one entry, got shape ",
                shape_str(c.in(0).shape));
  return {{Shape{len}, c.in(0).dtype}};
}

std::vector<TensorMeta> infer_coo2csr(const InferContext& c) {
  check_index(c, 0);
  const int64_t h = c.attrs.get_int("height");
  if (h < 0) MYCEL_THROW(ValueError, "[coo2csr] attribute 'height' must be >= 0, got ", h);
  return {{Shape{h + 1}, c.in(0).dtype}};
}

// csr_spgemm: A (shape) times B (shape_b), both CSR; C's indptr is (M + 1,), its indices and
// values have the product's structural nnz, known only when the kernel has run.
std::pair<int64_t, int64_t> spgemm_dims(const InferContext& c) {
  auto [m, n] = csr_dims(c);
  check_values(c, 2);
  const Ints& sb = c.attrs.get_ints("shape_b");
  if (sb.size() != 2 || sb[0] != n || sb[1] < 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'shape_b' must be (", n,
                ", K): B's rows must be A's ", n, " columns, got ", shape_str(sb));
  check_index(c, 3);
  check_index(c, 4);
  if (c.in(3).shape[0] != n + 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input 'b_indptr' must have ", n + 1,
                " entries for shape_b ", shape_str(sb), ", got shape ", shape_str(c.in(3).shape));
  if (c.in(5).shape != Shape{c.in(4).shape[0]})
    MYCEL_THROW(ValueError, "[", c.op.name,
                "] input 'b_values' must have shape (nnz,) = ", shape_str(c.in(4).shape),
                " like 'b_indices', got ", shape_str(c.in(5).shape));
  check_same_dtype(c, 2, 5);
  return {m, sb[1]};
}

std::vector<TensorMeta> infer_spgemm(const InferContext& c) {
  const int64_t m = spgemm_dims(c).first;
  return {{Shape{m + 1}, c.in(0).dtype},
          {Shape{kDataDependent}, c.in(1).dtype},
          {Shape{kDataDependent}, c.in(2).dtype}};
}

std::vector<TensorMeta> infer_spgemm_grad(const InferContext& c) {
  spgemm_dims(c);
  check_same_dtype(c, 2, 8);
  return {c.in(2), c.in(5)};
}

void spgemm_kernel(const KernelContext& c) {
  const Ints &s = c.attrs.get_ints("shape"), &sb = c.attrs.get_ints("shape_b");
  cpu::csr_spgemm(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.in(5), s[0], s[1], sb[1], c.out(0),
                  c.out(1), c.out(2));
}
void spgemm_grad_kernel(const KernelContext& c) {
  const Ints &s = c.attrs.get_ints("shape"), &sb = c.attrs.get_ints("shape_b");
  cpu::csr_spgemm_grad(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.in(5), c.in(6), c.in(7),
                       c.in(8), s[0], s[1], sb[1], c.out(0), c.out(1));
}

void spmm_kernel(const KernelContext& c) {
  cpu::csr_spmm(c.in(0), c.in(1), c.in(2), c.in(3), c.out(0), c.attrs.get_bool("transpose_a"));
}
void sddmm_kernel(const KernelContext& c) {
  cpu::csr_sddmm(c.in(0), c.in(1), c.in(2), c.in(3), c.out(0));
}
void gather_kernel(const KernelContext& c) { cpu::csr_gather(c.in(0), c.in(1), c.in(2), c.out(0)); }
void scatter_kernel(const KernelContext& c) {
  cpu::csr_scatter(c.in(0), c.in(1), c.in(2), c.out(0));
}
void csr2coo_kernel(const KernelContext& c) { cpu::csr2coo(c.in(0), c.out(0)); }
void coo2csr_kernel(const KernelContext& c) { cpu::coo2csr(c.in(0), c.out(0)); }

OpDef selecting_on(OpDef d, int input) {
  d.dtype_input = input;
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(sparse) {
  const AttrDef shape = attr("shape", AttrKind::kInts, {});
  r.add(selecting_on(
      make_op("csr_spmm", "CSRSpMM",
              "The dense product of a CSR matrix (indptr, indices, values; dense shape (M, N)) "
              "with dense (N, K), or of its transpose with dense (M, K) when transpose_a.",
              {{"indptr"}, {"indices"}, {"values"}, {"dense"}},
              {shape, attr("transpose_a", AttrKind::kBool, false)}, infer_spmm, spmm_kernel,
              kValueTypes, "bprop"),
      2));
  r.add(selecting_on(make_op("csr_sddmm", "CSRSDDMM",
                             "dot(x[row j], y[col j]) for each entry j of a CSR pattern: the "
                             "values of x y^T where the pattern has entries.",
                             {{"indptr"}, {"indices"}, {"x"}, {"y"}}, {shape}, infer_sddmm,
                             sddmm_kernel, kValueTypes, "bprop"),
                     2));
  r.add(selecting_on(make_op("csr_gather", "CSRGather",
                             "dense[row j, col j] for each entry j of a CSR pattern (nnz,).",
                             {{"indptr"}, {"indices"}, {"dense"}}, {shape}, infer_gather,
                             gather_kernel, kValueTypes, "bprop"),
                     2));
  r.add(selecting_on(make_op("csr_scatter", "CSRScatter",
                             "The dense (M, N) matrix of CSR arrays (duplicates add up).",
                             {{"indptr"}, {"indices"}, {"values"}}, {shape}, infer_scatter,
                             scatter_kernel, kValueTypes, "bprop"),
                     2));
  const AttrDef shape_b = attr("shape_b", AttrKind::kInts, {});
  r.add(selecting_on(
      make_op(
          "csr_spgemm", "CSRSpGEMM",
          "The CSR product (indptr, indices, values) of CSR A (shape (M, N)) and CSR B "
          "(shape_b (N, K)): every (i, c) some A[i, k] B[k, c] reaches, columns ascending.",
          {{"a_indptr"}, {"a_indices"}, {"a_values"}, {"b_indptr"}, {"b_indices"}, {"b_values"}},
          {shape, shape_b}, infer_spgemm, spgemm_kernel, kValueTypes, "bprop"),
      2));
  r.add(selecting_on(
      make_op("csr_spgemm_grad", "CSRSpGEMMGrad",
              "csr_spgemm's gradients (dA values, dB values) from dC's values on C's pattern.",
              {{"a_indptr"},
               {"a_indices"},
               {"a_values"},
               {"b_indptr"},
               {"b_indices"},
               {"b_values"},
               {"c_indptr"},
               {"c_indices"},
               {"dc_values"}},
              {shape, shape_b}, infer_spgemm_grad, spgemm_grad_kernel, kValueTypes, "none"),
      2));
  const std::vector<DType> idx = {DType::int32, DType::int64};
  r.add(make_op("csr2coo", "CSR2COO",
                "The row index of each of the `length` entries of a CSR indptr.", {{"indptr"}},
                {attr("length", AttrKind::kInt, {})}, infer_csr2coo, csr2coo_kernel, idx, "none"));
  r.add(make_op("coo2csr", "COO2CSR", "The CSR indptr (height + 1,) of sorted COO row indices.",
                {{"row_indices"}}, {attr("height", AttrKind::kInt, {})}, infer_coo2csr,
                coo2csr_kernel, idx, "none"));
}

// The pattern is fixed: values and dense operands get gradients, indptr and indices none.
MYCEL_REGISTER_BPROPS(sparse) {
  using bprop::is_float;
  b.add("csr_spgemm", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(2))) return std::vector<GradVar>(6);
    GradVar grads = g.call(
        "csr_spgemm_grad",
        {g.input(0), g.input(1), g.input(2), g.input(3), g.input(4), g.input(5),
         g.tuple_get(g.out(), 0), g.tuple_get(g.out(), 1), g.tuple_get(g.dout(), 2)},
        {{"shape", g.attrs().get_ints("shape")}, {"shape_b", g.attrs().get_ints("shape_b")}});
    return {GradVar(), GradVar(), g.tuple_get(grads, 0),
            GradVar(), GradVar(), g.tuple_get(grads, 1)};
  });
  b.add("csr_spmm", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar ptr = g.input(0), ind = g.input(1), v = g.input(2), d = g.input(3), dy = g.dout();
    if (!is_float(g, v)) return {GradVar(), GradVar(), GradVar(), GradVar()};
    const Ints shape = g.attrs().get_ints("shape");
    const bool t = g.attrs().get_bool("transpose_a");
    // y = A d: dA_j = dot(dy[row j], d[col j]), dd = A^T dy (and the mirror image when t).
    GradVar dv = g.call("csr_sddmm", {ptr, ind, t ? d : dy, t ? dy : d}, {{"shape", shape}});
    GradVar dd = g.call("csr_spmm", {ptr, ind, v, dy}, {{"shape", shape}, {"transpose_a", !t}});
    return {GradVar(), GradVar(), dv, dd};
  });
  b.add("csr_sddmm", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar ptr = g.input(0), ind = g.input(1), x = g.input(2), y = g.input(3), dv = g.dout();
    if (!is_float(g, x)) return {GradVar(), GradVar(), GradVar(), GradVar()};
    const Ints shape = g.attrs().get_ints("shape");
    GradVar dx = g.call("csr_spmm", {ptr, ind, dv, y}, {{"shape", shape}, {"transpose_a", false}});
    GradVar dy = g.call("csr_spmm", {ptr, ind, dv, x}, {{"shape", shape}, {"transpose_a", true}});
    return {GradVar(), GradVar(), dx, dy};
  });
  b.add("csr_gather", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(2))) return {GradVar(), GradVar(), GradVar()};
    return {GradVar(), GradVar(),
            g.call("csr_scatter", {g.input(0), g.input(1), g.dout()},
                   {{"shape", g.attrs().get_ints("shape")}})};
  });
  b.add("csr_scatter", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(2))) return {GradVar(), GradVar(), GradVar()};
    return {GradVar(), GradVar(),
            g.call("csr_gather", {g.input(0), g.input(1), g.dout()},
                   {{"shape", g.attrs().get_ints("shape")}})};
  });
}

// vmap of an SpMM over a batch of dense operands with one pattern and one set of values: the
// batch joins the dense columns, (N, K, B) -> (N, K * B), so one SpMM serves every item. A
// batched pattern or batched values (nnz may differ per item) run once per item.
MYCEL_REGISTER_BATCH_RULES(sparse) {
  b.add("csr_spmm", [](BatchBuilder& g) -> Batched {
    if (g.bdim(0) != kNotBatched || g.bdim(1) != kNotBatched || g.bdim(2) != kNotBatched) return {};
    GradVar d = batch::move_axis(g, g.input(3), g.bdim(3), 2);
    const Shape s = g.meta(d).shape;  // (rows of the operand, K, B)
    GradVar y =
        g.call_self({g.input(0), g.input(1), g.input(2), g.reshape_to(d, {s[0], s[1] * s[2]})});
    return {g.reshape_to(y, {g.meta(y).shape[0], s[1], s[2]}), std::vector<int>{2}};
  });
}

}  // namespace mycel
