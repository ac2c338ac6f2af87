// CSR kernels: rows run in parallel wherever each output row depends on one CSR row (SpMM,
// SDDMM, gathers); the transposed SpMM scatters into rows shared between CSR rows, so its
// threads split the dense columns instead.
#include "mycel/kernels/cpu/sparse.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

// An index array (int32 or int64) read once as int64.
std::vector<int64_t> as_int64(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::int32) {
    const int32_t* p = t.data<int32_t>();
    std::copy(p, p + t.numel(), v.begin());
  } else if (t.dtype() == DType::int64) {
    if (t.numel()) std::memcpy(v.data(), t.data(), v.size() * sizeof(int64_t));
  } else {
    MYCEL_THROW(TypeError, "sparse index arrays must be int32 or int64, got ",
                dtype_name(t.dtype()));
  }
  return v;
}

struct Csr {
  std::vector<int64_t> ptr, col;
};

Csr read_csr(const Tensor& indptr, const Tensor& indices, int64_t rows, int64_t cols,
             const char* op) {
  Csr a{as_int64(indptr), as_int64(indices)};
  const int64_t nnz = static_cast<int64_t>(a.col.size());
  if (static_cast<int64_t>(a.ptr.size()) != rows + 1 || a.ptr[0] != 0 || a.ptr[rows] != nnz)
    MYCEL_THROW(ValueError, "[", op, "] indptr must have rows + 1 = ", rows + 1,
                " entries from 0 to nnz = ", nnz, ", got ", a.ptr.size(), " entries from ",
                a.ptr.empty() ? 0 : a.ptr.front(), " to ", a.ptr.empty() ? 0 : a.ptr.back());
  for (int64_t r = 0; r < rows; ++r)
    if (a.ptr[r + 1] < a.ptr[r])
      MYCEL_THROW(ValueError, "[", op, "] indptr must be non-decreasing, got indptr[", r,
                  "] = ", a.ptr[r], " > indptr[", r + 1, "] = ", a.ptr[r + 1]);
  for (int64_t j = 0; j < nnz; ++j)
    if (a.col[j] < 0 || a.col[j] >= cols)
      MYCEL_THROW(ValueError, "[", op, "] column index ", a.col[j], " (entry ", j,
                  ") is out of range for ", cols, " columns (expected 0 <= index < ", cols, ")");
  return a;
}

// Calls fn(T) for the value types the sparse ops register.
template <class Fn>
void visit_values(DType t, Fn&& fn) {
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>)
      fn(tag);
    else
      MYCEL_THROW(TypeError, "sparse kernels take float32, float64, int32 or int64 values, got ",
                  dtype_name(t));
  });
}

}  // namespace

void check_csr(const Tensor& indptr, const Tensor& indices, int64_t rows, int64_t cols,
               const char* op) {
  read_csr(indptr, indices, rows, cols, op);
}

void csr_spmm(const Tensor& indptr, const Tensor& indices, const Tensor& values,
              const Tensor& dense, Tensor& out, bool transpose) {
  const int64_t k = dense.shape()[1];
  const int64_t m = transpose ? dense.shape()[0] : out.shape()[0];
  const int64_t n = transpose ? out.shape()[0] : dense.shape()[0];
  const Csr a = read_csr(indptr, indices, m, n, "csr_spmm");
  const int64_t nnz = static_cast<int64_t>(a.col.size());
  visit_values(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = values.data<T>();
    const T* d = dense.data<T>();
    T* o = out.data<T>();
    if (!transpose) {
      // Row r of out: the sum of v_j * dense[col_j, :] over row r's entries.
      parallel_for(m, std::max<int64_t>(1, k * (nnz / std::max<int64_t>(m, 1) + 1)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t r = lo; r < hi; ++r) {
                       T* orow = o + r * k;
                       std::fill(orow, orow + k, T(0));
                       for (int64_t j = a.ptr[r]; j < a.ptr[r + 1]; ++j) {
                         const T vj = v[j];
                         const T* drow = d + a.col[j] * k;
                         for (int64_t c = 0; c < k; ++c) orow[c] += vj * drow[c];
                       }
                     }
                   });
      return;
    }
    // out[col_j, :] += v_j * dense[row_j, :]: each thread owns a band of the K columns.
    std::fill(o, o + n * k, T(0));
    parallel_for(k, std::max<int64_t>(1, nnz), [&](int64_t c0, int64_t c1) {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = a.ptr[r]; j < a.ptr[r + 1]; ++j) {
          const T vj = v[j];
          const T* drow = d + r * k;
          T* orow = o + a.col[j] * k;
          for (int64_t c = c0; c < c1; ++c) orow[c] += vj * drow[c];
        }
    });
  });
}

void csr_sddmm(const Tensor& indptr, const Tensor& indices, const Tensor& x, const Tensor& y,
               Tensor& out) {
  const int64_t m = x.shape()[0], n = y.shape()[0], k = x.shape()[1];
  const Csr a = read_csr(indptr, indices, m, n, "csr_sddmm");
  visit_values(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* o = out.data<T>();
    parallel_for(m, std::max<int64_t>(1, k * 4), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        for (int64_t j = a.ptr[r]; j < a.ptr[r + 1]; ++j) {
          const T* xr = px + r * k;
          const T* yr = py + a.col[j] * k;
          T s = T(0);
          for (int64_t c = 0; c < k; ++c) s += xr[c] * yr[c];
          o[j] = s;
        }
    });
  });
}

void csr_gather(const Tensor& indptr, const Tensor& indices, const Tensor& dense, Tensor& out) {
  const int64_t m = dense.shape()[0], n = dense.shape()[1];
  const Csr a = read_csr(indptr, indices, m, n, "csr_gather");
  visit_values(dense.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d = dense.data<T>();
    T* o = out.data<T>();
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = a.ptr[r]; j < a.ptr[r + 1]; ++j) o[j] = d[r * n + a.col[j]];
  });
}

void csr_scatter(const Tensor& indptr, const Tensor& indices, const Tensor& values, Tensor& out) {
  const int64_t m = out.shape()[0], n = out.shape()[1];
  const Csr a = read_csr(indptr, indices, m, n, "csr_scatter");
  visit_values(values.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = values.data<T>();
    T* o = out.data<T>();
    std::fill(o, o + m * n, T(0));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = a.ptr[r]; j < a.ptr[r + 1]; ++j) o[r * n + a.col[j]] += v[j];
  });
}

void csr2coo(const Tensor& indptr, Tensor& out) {
  const std::vector<int64_t> ptr = as_int64(indptr);
  const int64_t rows = static_cast<int64_t>(ptr.size()) - 1, nnz = out.numel();
  if (rows < 0 || ptr[0] != 0 || ptr[rows] != nnz)
    MYCEL_THROW(ValueError, "[csr2coo] indptr must run from 0 to length = ", nnz, ", got ",
                rows < 0 ? std::string("an empty indptr")
                         : "from " + std::to_string(ptr[0]) + " to " + std::to_string(ptr[rows]));
  for (int64_t r = 0; r < rows; ++r)
    if (ptr[r + 1] < ptr[r])
      MYCEL_THROW(ValueError, "[csr2coo] indptr must be non-decreasing, got indptr[", r,
                  "] = ", ptr[r], " > indptr[", r + 1, "] = ", ptr[r + 1]);
  visit_values(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = ptr[r]; j < ptr[r + 1]; ++j) o[j] = static_cast<T>(r);
  });
}

void coo2csr(const Tensor& rows, Tensor& out) {
  const std::vector<int64_t> row = as_int64(rows);
  const int64_t height = out.numel() - 1, nnz = static_cast<int64_t>(row.size());
  std::vector<int64_t> ptr(static_cast<size_t>(height + 1), 0);
  for (int64_t j = 0; j < nnz; ++j) {
    if (row[j] < 0 || row[j] >= height)
      MYCEL_THROW(ValueError, "[coo2csr] row index ", row[j], " (entry ", j,
                  ") is out of range for height ", height, " (expected 0 <= index < ", height, ")");
    if (j && row[j] < row[j - 1])
      MYCEL_THROW(ValueError, "[coo2csr] row indices must be sorted (non-decreasing), got ",
                  row[j - 1], " before ", row[j], " at entry ", j);
    ++ptr[row[j] + 1];
  }
  for (int64_t r = 0; r < height; ++r) ptr[r + 1] += ptr[r];
  visit_values(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (int64_t r = 0; r <= height; ++r) o[r] = static_cast<T>(ptr[r]);
  });
}

namespace {

// Writes int64 positions into an int32 or int64 index tensor.
void put_index(Tensor& t, const std::vector<int64_t>& v) {
  if (t.dtype() == DType::int32)
    std::copy(v.begin(), v.end(), t.data<int32_t>());
  else
    std::copy(v.begin(), v.end(), t.data<int64_t>());
}

}  // namespace

void csr_spgemm(const Tensor& a_ptr, const Tensor& a_ind, const Tensor& a_val, const Tensor& b_ptr,
                const Tensor& b_ind, const Tensor& b_val, int64_t m, int64_t n, int64_t k,
                Tensor& c_ptr, Tensor& c_ind, Tensor& c_val) {
  const Csr a = read_csr(a_ptr, a_ind, m, n, "csr_spgemm");
  const Csr b = read_csr(b_ptr, b_ind, n, k, "csr_spgemm");
  visit_values(a_val.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* av = a_val.data<T>();
    const T* bv = b_val.data<T>();
    std::vector<int64_t> ptr(static_cast<size_t>(m + 1), 0), col;
    std::vector<T> val, acc(static_cast<size_t>(k), T(0));
    std::vector<int64_t> seen(static_cast<size_t>(k), -1), row_cols;
    for (int64_t i = 0; i < m; ++i) {
      row_cols.clear();
      for (int64_t p = a.ptr[i]; p < a.ptr[i + 1]; ++p) {
        const int64_t mid = a.col[p];
        for (int64_t q = b.ptr[mid]; q < b.ptr[mid + 1]; ++q) {
          const int64_t c = b.col[q];
          if (seen[c] != i) {
            seen[c] = i;
            acc[c] = T(0);
            row_cols.push_back(c);
          }
          acc[c] += av[p] * bv[q];
        }
      }
      std::sort(row_cols.begin(), row_cols.end());
      for (int64_t c : row_cols) {
        col.push_back(c);
        val.push_back(acc[c]);
      }
      ptr[i + 1] = static_cast<int64_t>(col.size());
    }
    const int64_t nnz = static_cast<int64_t>(col.size());
    if (!c_ind.defined()) c_ind = Tensor::empty({nnz}, a_ind.dtype());
    if (!c_val.defined()) c_val = Tensor::empty({nnz}, a_val.dtype());
    MYCEL_CHECK(c_ind.numel() == nnz && c_val.numel() == nnz, RuntimeError,
                "[csr_spgemm] the product has ", nnz, " entries, its outputs hold ", c_ind.numel());
    put_index(c_ptr, ptr);
    put_index(c_ind, col);
    std::copy(val.begin(), val.end(), c_val.data<T>());
  });
}

void csr_spgemm_grad(const Tensor& a_ptr, const Tensor& a_ind, const Tensor& a_val,
                     const Tensor& b_ptr, const Tensor& b_ind, const Tensor& b_val,
                     const Tensor& c_ptr, const Tensor& c_ind, const Tensor& dc_val, int64_t m,
                     int64_t n, int64_t k, Tensor& da_val, Tensor& db_val) {
  const Csr a = read_csr(a_ptr, a_ind, m, n, "csr_spgemm_grad");
  const Csr b = read_csr(b_ptr, b_ind, n, k, "csr_spgemm_grad");
  const Csr c = read_csr(c_ptr, c_ind, m, k, "csr_spgemm_grad");
  visit_values(a_val.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *av = a_val.data<T>(), *bv = b_val.data<T>(), *dc = dc_val.data<T>();
    T* da = da_val.data<T>();
    T* db = db_val.data<T>();
    std::fill(da, da + da_val.numel(), T(0));
    std::fill(db, db + db_val.numel(), T(0));
    std::vector<T> row(static_cast<size_t>(k), T(0));  // dC's row i, dense
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = c.ptr[i]; p < c.ptr[i + 1]; ++p) row[c.col[p]] += dc[p];
      for (int64_t p = a.ptr[i]; p < a.ptr[i + 1]; ++p) {
        const int64_t mid = a.col[p];
        for (int64_t q = b.ptr[mid]; q < b.ptr[mid + 1]; ++q) {
          da[p] += row[b.col[q]] * bv[q];
          db[q] += av[p] * row[b.col[q]];
        }
      }
      for (int64_t p = c.ptr[i]; p < c.ptr[i + 1]; ++p) row[c.col[p]] = T(0);
    }
  });
}

}  // namespace mycel::cpu
