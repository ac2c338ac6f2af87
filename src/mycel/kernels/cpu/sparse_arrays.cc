#include "mycel/kernels/cpu/sparse_arrays.h"

#include <algorithm>
#include <complex>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

namespace mycel::cpu {
namespace {

// The values of an int32/int64 tensor, widened.
std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const T* p = t.data<T>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
    }
  });
  return v;
}

// Output k: the given tensor, or (data-dependent) a new one of `shape` when it came undefined.
Tensor& output(const KernelContext& ctx, size_t k, const Shape& shape, DType dtype) {
  Tensor& o = ctx.out(k);
  if (!o.defined()) o = Tensor::empty(shape, dtype);
  MYCEL_CHECK(o.shape() == shape, RuntimeError, "[", ctx.op.name, "] output ", k, " has shape ",
              shape_str(o.shape()), ", the values need ", shape_str(shape));
  return o;
}

// Writes int64 values into an int32 or int64 output.
void put_ints(Tensor& o, const std::vector<int64_t>& v) {
  visit_dtype(o.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      T* p = o.data<T>();
      for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
    }
  });
}

// Copies the elements `order` names from src (1-d) into dst.
void gather_1d(const Tensor& src, const std::vector<int64_t>& order, Tensor& dst, bool conj) {
  visit_any_dtype(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>();
    T* d = dst.data<T>();
    for (size_t i = 0; i < order.size(); ++i) {
      if constexpr (is_complex_v<T>)
        d[i] = conj ? std::conj(s[order[i]]) : s[order[i]];
      else
        d[i] = s[order[i]];
    }
  });
}

}  // namespace

void sparse_count_sparse_output_kernel(const KernelContext& ctx) {
  const char* op = ctx.op.name.c_str();
  const Tensor& weights = ctx.in(3);
  const std::vector<int64_t> idx = ints(ctx.in(0)), val = ints(ctx.in(1)), dims = ints(ctx.in(2));
  const int64_t n = ctx.in(1).numel(), rank = ctx.in(0).ndim() == 2 ? ctx.in(0).shape()[1] : 0;
  MYCEL_CHECK(ctx.in(0).ndim() == 2 && ctx.in(0).shape()[0] == n, RuntimeError, "[", op,
              "] indices must have shape (", n, ", rank) for ", n, " values, got ",
              shape_str(ctx.in(0).shape()));
  MYCEL_CHECK((rank == 1 || rank == 2) && static_cast<int64_t>(dims.size()) == rank, RuntimeError,
              "[", op, "] indices of rank ", rank, " need a dense_shape of ", rank,
              " values (rank 1 or 2), got ", dims.size());
  MYCEL_CHECK(weights.numel() == 0 || weights.numel() == n, RuntimeError, "[", op,
              "] weights must be empty or have one weight per value (", n, "), got ",
              weights.numel());
  const int64_t maxlength = ctx.attrs.get_int("maxlength");
  const int64_t minlength = ctx.attrs.get_int("minlength");
  const bool binary = ctx.attrs.get_bool("binary_output");
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < rank; ++d)
      MYCEL_CHECK(idx[i * rank + d] >= 0 && idx[i * rank + d] < dims[d], RuntimeError, "[", op,
                  "] indices[", i, "][", d, "] = ", idx[i * rank + d],
                  " is out of bounds of dense_shape[", d, "] = ", dims[d]);
    MYCEL_CHECK(val[i] >= 0, RuntimeError, "[", op, "] values must be >= 0, got values[", i,
                "] = ", val[i]);
  }
  const DType wt = weights.dtype();
  visit_dtype(wt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = compute_t<T>;
    const T* w = weights.numel() ? weights.data<T>() : nullptr;
    std::map<std::pair<int64_t, int64_t>, K> sums;  // (batch, value) in row-major order
    int64_t max_value = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (maxlength > 0 && val[i] >= maxlength) continue;
      const int64_t batch = rank == 2 ? idx[i * rank] : 0;
      K& s = sums[{batch, val[i]}];
      s = binary ? K(1) : s + (w ? K(w[i]) : K(1));
      max_value = std::max(max_value, val[i]);
    }
    const int64_t width = maxlength > 0 ? maxlength : std::max(max_value + 1, minlength);
    const int64_t k = static_cast<int64_t>(sums.size());
    int64_t* oi = output(ctx, 0, {k, rank}, DType::int64).template data<int64_t>();
    T* ov = output(ctx, 1, {k}, wt).template data<T>();
    for (const auto& [key, s] : sums) {
      if (rank == 2) *oi++ = key.first;
      *oi++ = key.second;
      *ov++ = static_cast<T>(s);
    }
    int64_t* os = output(ctx, 2, {rank}, DType::int64).template data<int64_t>();
    if (rank == 2) *os++ = dims[0];
    *os = width;
  });
}

namespace {

// Checks indices (k,) in [0, rows) and segment_ids (k,) sorted in [0, segments).
void check_segments(const char* op, const std::vector<int64_t>& index,
                    const std::vector<int64_t>& seg, int64_t rows, int64_t segments) {
  MYCEL_CHECK(index.size() == seg.size(), RuntimeError, "[", op, "] indices (", index.size(),
              ") and segment_ids (", seg.size(), ") must have one length");
  for (size_t j = 0; j < seg.size(); ++j) {
    MYCEL_CHECK(index[j] >= 0 && index[j] < rows, RuntimeError, "[", op, "] indices[", j,
                "] = ", index[j], " is out of range [0, ", rows, ")");
    MYCEL_CHECK(seg[j] >= 0 && seg[j] < segments, RuntimeError, "[", op, "] segment_ids[", j,
                "] = ", seg[j], " is out of range [0, num_segments = ", segments, ")");
    MYCEL_CHECK(j == 0 || seg[j - 1] <= seg[j], RuntimeError, "[", op,
                "] segment_ids must be sorted in ascending order, got ", seg[j - 1], " before ",
                seg[j]);
  }
}

}  // namespace

void sparse_segment_mean_with_num_segments_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::vector<int64_t> index = ints(ctx.in(1)), seg = ints(ctx.in(2)), ns = ints(ctx.in(3));
  const char* op = ctx.op.name.c_str();
  MYCEL_CHECK(ns.size() == 1 && ns[0] >= 0, RuntimeError, "[", op,
              "] num_segments must hold one value >= 0, got ", ns.size(), " values",
              ns.empty() ? "" : " starting ", ns.empty() ? 0 : ns[0]);
  const int64_t rows = x.shape()[0], inner = rows ? x.numel() / rows : 0;
  check_segments(op, index, seg, rows, ns[0]);
  Shape shape = x.shape();
  shape[0] = ns[0];
  Tensor& o = output(ctx, 0, shape, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = compute_t<T>;
    if constexpr (std::is_floating_point_v<K>) {  // the registry admits float32/float64 only
      std::vector<K> acc(static_cast<size_t>(ns[0] * inner), K(0));
      std::vector<int64_t> count(static_cast<size_t>(ns[0]), 0);
      const T* px = x.data<T>();
      for (size_t j = 0; j < seg.size(); ++j) {
        ++count[seg[j]];
        for (int64_t e = 0; e < inner; ++e) acc[seg[j] * inner + e] += K(px[index[j] * inner + e]);
      }
      T* po = o.data<T>();
      for (int64_t s = 0; s < ns[0]; ++s)
        for (int64_t e = 0; e < inner; ++e)
          po[s * inner + e] = static_cast<T>(count[s] ? acc[s * inner + e] / K(count[s]) : K(0));
    }
  });
}

void sparse_segment_mean_grad_kernel(const KernelContext& ctx) {
  const Tensor& dout = ctx.in(0);
  const std::vector<int64_t> index = ints(ctx.in(1)), seg = ints(ctx.in(2));
  const int64_t segments = dout.shape()[0], rows = ctx.in(3).shape()[0];
  const int64_t inner = segments ? dout.numel() / segments : 0;
  check_segments(ctx.op.name.c_str(), index, seg, rows, segments);
  Tensor& o = ctx.out(0);
  visit_dtype(dout.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = compute_t<T>;
    if constexpr (std::is_floating_point_v<K>) {
      std::vector<int64_t> count(static_cast<size_t>(segments), 0);
      for (int64_t s : seg) ++count[s];
      std::vector<K> acc(static_cast<size_t>(rows * inner), K(0));
      const T* pd = dout.data<T>();
      for (size_t j = 0; j < seg.size(); ++j)
        for (int64_t e = 0; e < inner; ++e)
          acc[index[j] * inner + e] += K(pd[seg[j] * inner + e]) / K(count[seg[j]]);
      T* po = o.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) po[i] = static_cast<T>(acc[i]);
    }
  });
}

namespace {

// The batched CSR structure of COO indices (n, rank) under a rank-2/3 dense shape, and the
// row-major order of the entries (order[i]: the COO entry at CSR position i).
struct CsrOfCoo {
  std::vector<int64_t> dims, order, bp, rp, col;
  int64_t batches = 0, rows = 0;
};

CsrOfCoo csr_of_coo(const char* op, const Tensor& indices, const Tensor& dense_shape, int64_t n) {
  CsrOfCoo o;
  const std::vector<int64_t> idx = ints(indices);
  o.dims = ints(dense_shape);
  const int64_t rank = static_cast<int64_t>(o.dims.size());
  MYCEL_CHECK((rank == 2 || rank == 3) && indices.ndim() == 2 && indices.shape()[0] == n &&
                  indices.shape()[1] == rank,
              RuntimeError, "[", op, "] x_indices must have shape (", n, ", ", rank,
              ") for a rank-2 or rank-3 x_dense_shape and ", n, " values, got ",
              shape_str(indices.shape()));
  for (int64_t d = 0; d < rank; ++d)
    MYCEL_CHECK(o.dims[d] >= 0, RuntimeError, "[", op, "] x_dense_shape must be >= 0, got ",
                o.dims[d]);
  o.batches = rank == 3 ? o.dims[0] : 1;
  o.rows = o.dims[rank - 2];
  std::vector<int64_t> b(n), r(n), c(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < rank; ++d)
      MYCEL_CHECK(idx[i * rank + d] >= 0 && idx[i * rank + d] < o.dims[d], RuntimeError, "[", op,
                  "] x_indices[", i, "][", d, "] = ", idx[i * rank + d],
                  " is out of bounds of x_dense_shape[", d, "] = ", o.dims[d]);
    b[i] = rank == 3 ? idx[i * rank] : 0;
    r[i] = idx[i * rank + rank - 2];
    c[i] = idx[i * rank + rank - 1];
  }
  o.order.resize(n);
  std::iota(o.order.begin(), o.order.end(), 0);
  std::stable_sort(o.order.begin(), o.order.end(), [&](int64_t p, int64_t q) {
    return std::tie(b[p], r[p], c[p]) < std::tie(b[q], r[q], c[q]);
  });
  o.bp.assign(o.batches + 1, 0);
  o.rp.assign(o.batches * (o.rows + 1), 0);
  for (int64_t i = 0; i < n; ++i) {
    ++o.bp[b[i] + 1];
    ++o.rp[b[i] * (o.rows + 1) + r[i] + 1];
  }
  for (int64_t k = 0; k < o.batches; ++k) {
    o.bp[k + 1] += o.bp[k];
    for (int64_t j = 0; j < o.rows; ++j)
      o.rp[k * (o.rows + 1) + j + 1] += o.rp[k * (o.rows + 1) + j];
  }
  o.col.resize(n);
  for (int64_t i = 0; i < n; ++i) o.col[i] = c[o.order[i]];
  return o;
}

// Each batch's transpose of a batched CSR matrix: its pointers and columns, and order[at] = the
// entry of the input at position `at` of the transpose.
struct TransposeOfCsr {
  std::vector<int64_t> dims, trp, tcol, order;
};

TransposeOfCsr transpose_of_csr(const KernelContext& ctx, int64_t n) {
  const char* op = ctx.op.name.c_str();
  TransposeOfCsr o;
  o.dims = ints(ctx.in(0));
  const std::vector<int64_t> bp = ints(ctx.in(1)), rp = ints(ctx.in(2)), col = ints(ctx.in(3));
  const int64_t rank = static_cast<int64_t>(o.dims.size());
  MYCEL_CHECK(rank == 2 || rank == 3, RuntimeError, "[", op,
              "] x_dense_shape must hold 2 or 3 values, got ", rank);
  const int64_t batches = rank == 3 ? o.dims[0] : 1, rows = o.dims[rank - 2],
                cols = o.dims[rank - 1];
  MYCEL_CHECK(static_cast<int64_t>(bp.size()) == batches + 1 && bp.front() == 0 && bp.back() == n &&
                  static_cast<int64_t>(col.size()) == n,
              RuntimeError, "[", op, "] x_batch_pointers must be ", batches + 1,
              " offsets from 0 to nnz = ", n, " (x_col_indices and x_values of that length)");
  MYCEL_CHECK(static_cast<int64_t>(rp.size()) == batches * (rows + 1), RuntimeError, "[", op,
              "] x_row_pointers must have batch * (rows + 1) = ", batches * (rows + 1),
              " values, got ", rp.size());
  o.trp.assign(batches * (cols + 1), 0);
  o.tcol.resize(n);
  o.order.resize(n);
  for (int64_t k = 0; k < batches; ++k) {
    const int64_t base = bp[k], *ptr = rp.data() + k * (rows + 1);
    MYCEL_CHECK(ptr[0] == 0 && ptr[rows] == bp[k + 1] - bp[k], RuntimeError, "[", op,
                "] the row pointers of batch ", k, " must run from 0 to its ", bp[k + 1] - bp[k],
                " entries");
    int64_t* t = o.trp.data() + k * (cols + 1);
    for (int64_t j = base; j < bp[k + 1]; ++j) {
      MYCEL_CHECK(col[j] >= 0 && col[j] < cols, RuntimeError, "[", op, "] x_col_indices[", j,
                  "] = ", col[j], " is out of range [0, ", cols, ")");
      ++t[col[j] + 1];
    }
    for (int64_t c = 0; c < cols; ++c) t[c + 1] += t[c];
    std::vector<int64_t> next(t, t + cols);
    for (int64_t r = 0; r < rows; ++r) {
      MYCEL_CHECK(ptr[r] <= ptr[r + 1], RuntimeError, "[", op,
                  "] x_row_pointers must not decrease within a batch");
      for (int64_t j = base + ptr[r]; j < base + ptr[r + 1]; ++j) {
        const int64_t at = base + next[col[j]]++;
        o.tcol[at] = r;
        o.order[at] = j;
      }
    }
  }
  std::swap(o.dims[rank - 1], o.dims[rank - 2]);
  return o;
}

// dst[order[i]] = src[i] (conjugated with `conj`): a gather's gradient, a permutation's inverse.
void scatter_1d(const Tensor& src, const std::vector<int64_t>& order, Tensor& dst, bool conj) {
  visit_any_dtype(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>();
    T* d = dst.data<T>();
    for (size_t i = 0; i < order.size(); ++i) {
      if constexpr (is_complex_v<T>)
        d[order[i]] = conj ? std::conj(s[i]) : s[i];
      else
        d[order[i]] = s[i];
    }
  });
}

}  // namespace

void sparse_tensor_to_csr_sparse_matrix_kernel(const KernelContext& ctx) {
  const int64_t n = ctx.in(1).numel();
  const CsrOfCoo o = csr_of_coo(ctx.op.name.c_str(), ctx.in(0), ctx.in(2), n);
  const DType it = ctx.in(0).dtype();
  put_ints(output(ctx, 0, {static_cast<int64_t>(o.dims.size())}, ctx.in(2).dtype()), o.dims);
  put_ints(output(ctx, 1, {o.batches + 1}, it), o.bp);
  put_ints(output(ctx, 2, {o.batches * (o.rows + 1)}, it), o.rp);
  put_ints(output(ctx, 3, {n}, it), o.col);
  gather_1d(ctx.in(1), o.order, output(ctx, 4, {n}, ctx.in(1).dtype()), false);
}

void sparse_tensor_to_csr_sparse_matrix_grad_kernel(const KernelContext& ctx) {
  const int64_t n = ctx.in(2).numel();
  const CsrOfCoo o = csr_of_coo(ctx.op.name.c_str(), ctx.in(0), ctx.in(1), n);
  scatter_1d(ctx.in(2), o.order, ctx.out(0), false);
}

void sparse_matrix_transpose_kernel(const KernelContext& ctx) {
  const int64_t n = ctx.in(4).numel();
  const TransposeOfCsr o = transpose_of_csr(ctx, n);
  const int64_t rank = static_cast<int64_t>(o.dims.size());
  put_ints(output(ctx, 0, {rank}, ctx.in(0).dtype()), o.dims);
  Tensor& bp = output(ctx, 1, ctx.in(1).shape(), ctx.in(1).dtype());
  put_ints(bp, ints(ctx.in(1)));
  put_ints(output(ctx, 2, {static_cast<int64_t>(o.trp.size())}, ctx.in(2).dtype()), o.trp);
  put_ints(output(ctx, 3, {n}, ctx.in(3).dtype()), o.tcol);
  gather_1d(ctx.in(4), o.order, output(ctx, 4, {n}, ctx.in(4).dtype()),
            ctx.attrs.get_bool("conjugate"));
}

void sparse_matrix_transpose_grad_kernel(const KernelContext& ctx) {
  const TransposeOfCsr o = transpose_of_csr(ctx, ctx.in(4).numel());
  scatter_1d(ctx.in(4), o.order, ctx.out(0), ctx.attrs.get_bool("conjugate"));
}

}  // namespace mycel::cpu
