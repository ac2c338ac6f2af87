// MindSpore's sparse primitives (ops.operations.sparse_ops) whose output sizes are read from the
// input values, so no composite of fixed-size ops can build them: SparseCountSparseOutput (the
// number of counted values), SparseSegmentMeanWithNumSegments (num_segments is a tensor),
// SparseTensorToCSRSparseMatrix and SparseMatrixTranspose (pointer arrays sized by the dense
// shape's values). Their infer gives kDataDependent for those dims (ops/data_dependent.h); the
// kernels check the index values and allocate. The rest of sparse_ops is composites
// (python/mycel/ops/operations/sparse_ops.py).
#include "mycel/kernels/cpu/sparse_arrays.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {

using detail::attr;
using detail::make_op;

// The value dtypes of the CSR conversions (MindSpore's CPU kernels: real and complex floats, ints).
const std::vector<DType> kValues = {DType::float32, DType::float64,   DType::int32,
                                    DType::int64,   DType::complex64, DType::complex128};

// Input i: an int32/int64 index array of rank `rank` (-1: 0-d or 1-d).
void check_index_input(const InferContext& c, size_t i, int rank) {
  const TensorMeta& m = c.in(i);
  MYCEL_CHECK(m.dtype == DType::int32 || m.dtype == DType::int64, TypeError, "[", c.op.name,
              "] input '", input_name(c, i), "' must be int32 or int64, got ", dtype_name(m.dtype));
  const bool ok = rank < 0 ? m.shape.size() <= 1 : m.shape.size() == static_cast<size_t>(rank);
  MYCEL_CHECK(ok, ValueError, "[", c.op.name, "] input '", input_name(c, i), "' must be ",
              rank < 0 ? "0-d or 1-d" : std::to_string(rank) + "-d", ", got shape ",
              shape_str(m.shape));
}

// Dims a and b agree unless one is unknown until run time.
void check_same_dim(const InferContext& c, size_t i, size_t di, size_t j, size_t dj) {
  const int64_t a = c.in(i).shape[di], b = c.in(j).shape[dj];
  MYCEL_CHECK(a < 0 || b < 0 || a == b, ValueError, "[", c.op.name, "] input '", input_name(c, i),
              "' has ", a, " entries but '", input_name(c, j), "' has ", b);
}

std::vector<TensorMeta> count_infer(const InferContext& c) {
  check_index_input(c, 0, 2);
  check_index_input(c, 1, 1);
  check_index_input(c, 2, 1);
  MYCEL_CHECK(c.in(3).shape.size() == 1, ValueError, "[", c.op.name,
              "] input 'weights' must be 1-d, got shape ", shape_str(c.in(3).shape));
  check_same_dim(c, 0, 0, 1, 0);
  check_same_dim(c, 0, 1, 2, 0);
  if (c.in(3).shape[0] != 0) check_same_dim(c, 3, 0, 1, 0);  // empty weights count 1 each
  const int64_t rank = c.in(0).shape[1];
  return {{{kDataDependent, rank}, DType::int64},
          {{kDataDependent}, c.in(3).dtype},
          {{rank}, DType::int64}};
}

std::vector<TensorMeta> segment_mean_infer(const InferContext& c) {
  check_float(c, 0);
  MYCEL_CHECK(!c.in(0).shape.empty(), ValueError, "[", c.op.name,
              "] input 'x' must have rank >= 1, got a 0-d tensor");
  check_index_input(c, 1, 1);
  check_index_input(c, 2, 1);
  check_index_input(c, 3, -1);
  check_same_dim(c, 1, 0, 2, 0);
  Shape s = c.in(0).shape;
  s[0] = kDataDependent;
  return {{s, c.in(0).dtype}};
}

std::vector<TensorMeta> segment_mean_grad_infer(const InferContext& c) {
  check_index_input(c, 1, 1);
  check_index_input(c, 2, 1);
  return {{c.in(3).shape, c.in(0).dtype}};
}

std::vector<TensorMeta> to_csr_infer(const InferContext& c) {
  check_index_input(c, 0, 2);
  check_index_input(c, 2, 1);
  MYCEL_CHECK(c.in(1).shape.size() == 1, ValueError, "[", c.op.name,
              "] input 'x_values' must be 1-d, got shape ", shape_str(c.in(1).shape));
  // the rank (2 or 3) is checked by the kernel: a dynamic length reaches infer as a placeholder
  check_same_dim(c, 0, 0, 1, 0);
  check_same_dim(c, 0, 1, 2, 0);
  MYCEL_CHECK(c.in(0).dtype == c.in(2).dtype, TypeError, "[", c.op.name, "] x_indices (",
              dtype_name(c.in(0).dtype), ") and x_dense_shape (", dtype_name(c.in(2).dtype),
              ") must have one dtype");
  const DType it = c.in(0).dtype;
  const int64_t n = c.in(1).shape[0];
  return {c.in(2), {{kDataDependent}, it}, {{kDataDependent}, it}, {{n}, it}, c.in(1)};
}

std::vector<TensorMeta> to_csr_grad_infer(const InferContext& c) {
  check_index_input(c, 0, 2);
  check_index_input(c, 1, 1);
  check_same_dim(c, 0, 0, 2, 0);
  return {c.in(2)};
}

std::vector<TensorMeta> transpose_grad_infer(const InferContext& c) {
  for (size_t i = 0; i < 4; ++i) check_index_input(c, i, 1);
  check_same_dim(c, 3, 0, 4, 0);
  return {c.in(4)};
}

std::vector<TensorMeta> transpose_infer(const InferContext& c) {
  for (size_t i = 0; i < 4; ++i) check_index_input(c, i, 1);
  MYCEL_CHECK(c.in(4).shape.size() == 1, ValueError, "[", c.op.name,
              "] input 'x_values' must be 1-d, got shape ", shape_str(c.in(4).shape));
  check_same_dim(c, 3, 0, 4, 0);
  return {c.in(0), c.in(1), {{kDataDependent}, c.in(2).dtype}, c.in(3), c.in(4)};
}

OpDef selecting_on(OpDef d, int input) {
  d.dtype_input = input;
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(sparse_arrays) {
  using namespace cpu;
  const std::vector<DType> floats = {DType::float32, DType::float64};
  r.add(selecting_on(
      make_op("sparse_count_sparse_output", "SparseCountSparseOutput",
              "Counts (or sums the weights of) each value per batch of a rank-1 or rank-2 COO "
              "tensor of int values: (int64 [batch,] value indices, the sums, int64 dense "
              "shape); values >= maxlength (when > 0) are dropped.",
              {{"indices"}, {"values"}, {"dense_shape"}, {"weights"}},
              {attr("binary_output", AttrKind::kBool, {}),
               attr("minlength", AttrKind::kInt, int64_t{-1}),
               attr("maxlength", AttrKind::kInt, int64_t{-1})},
              count_infer, sparse_count_sparse_output_kernel,
              {DType::int32, DType::int64, DType::float32, DType::float64}, "none"),
      3));
  r.add(make_op("sparse_segment_mean_with_num_segments", "SparseSegmentMeanWithNumSegments",
                "(num_segments, x.shape[1:]): the mean of the rows x[indices[j]] whose sorted "
                "segment_ids[j] is s (empty segments are 0).",
                {{"x"}, {"indices"}, {"segment_ids"}, {"num_segments"}}, {}, segment_mean_infer,
                sparse_segment_mean_with_num_segments_kernel, floats, "bprop"));
  r.add(make_op("sparse_segment_mean_grad", "SparseSegmentMeanGrad",
                "Shaped like x: dout[segment_ids[j]] / (the segment's size) added into row "
                "indices[j] (the segment mean's gradient).",
                {{"dout"}, {"indices"}, {"segment_ids"}, {"x"}}, {}, segment_mean_grad_infer,
                sparse_segment_mean_grad_kernel, floats, "none"));
  r.add(selecting_on(
      make_op("sparse_tensor_to_csr_sparse_matrix", "SparseTensorToCSRSparseMatrix",
              "The batched CSR arrays (dense_shape, batch_pointers, row_pointers, col_indices, "
              "values) of a rank-2 or rank-3 COO tensor, entries in row-major order.",
              {{"x_indices"}, {"x_values"}, {"x_dense_shape"}}, {}, to_csr_infer,
              sparse_tensor_to_csr_sparse_matrix_kernel, kValues, "bprop"),
      1));
  r.add(selecting_on(
      make_op("sparse_tensor_to_csr_sparse_matrix_grad", "SparseTensorToCSRSparseMatrixGrad",
              "The values' sensitivity of SparseTensorToCSRSparseMatrix put back in the COO "
              "entries' order.",
              {{"x_indices"}, {"x_dense_shape"}, {"dvalues"}}, {}, to_csr_grad_infer,
              sparse_tensor_to_csr_sparse_matrix_grad_kernel, kValues, "none"),
      2));
  r.add(selecting_on(
      make_op("sparse_matrix_transpose", "SparseMatrixTranspose",
              "The batched CSR arrays of each batch's transpose (values conjugated with "
              "`conjugate`).",
              {{"x_dense_shape"},
               {"x_batch_pointers"},
               {"x_row_pointers"},
               {"x_col_indices"},
               {"x_values"}},
              {attr("conjugate", AttrKind::kBool, false)}, transpose_infer,
              sparse_matrix_transpose_kernel, kValues, "bprop"),
      4));
  r.add(selecting_on(
      make_op("sparse_matrix_transpose_grad", "SparseMatrixTransposeGrad",
              "The values' sensitivity of SparseMatrixTranspose put back in the input's entry "
              "order (conjugated with `conjugate`).",
              {{"x_dense_shape"},
               {"x_batch_pointers"},
               {"x_row_pointers"},
               {"x_col_indices"},
               {"dvalues"}},
              {attr("conjugate", AttrKind::kBool, false)}, transpose_grad_infer,
              sparse_matrix_transpose_grad_kernel, kValues, "none"),
      4));
}

// The mean of a segment sends dout / size back to each row it read; the CSR conversions move
// each value's sensitivity back to the entry it came from.
MYCEL_REGISTER_BPROPS(sparse_arrays) {
  b.add("sparse_tensor_to_csr_sparse_matrix", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dv = g.call("sparse_tensor_to_csr_sparse_matrix_grad",
                        {g.input(0), g.input(2), g.tuple_get(g.dout(), 4)});
    return {GradVar(), dv, GradVar()};
  });
  b.add("sparse_matrix_transpose", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dv = g.call("sparse_matrix_transpose_grad",
                        {g.input(0), g.input(1), g.input(2), g.input(3), g.tuple_get(g.dout(), 4)},
                        {{"conjugate", g.attrs().get_bool("conjugate")}});
    return {GradVar(), GradVar(), GradVar(), GradVar(), dv};
  });
  b.add("sparse_segment_mean_with_num_segments", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dx = g.call("sparse_segment_mean_grad", {g.dout(), g.input(1), g.input(2), g.input(0)});
    return {dx, GradVar(), GradVar(), GradVar()};
  });
}

}  // namespace mycel
