#include "mycel/kernels/cpu/sort.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

template <class K>
struct Entry {
  K key;
  int64_t index;
};

template <class K>
bool is_nan(K x) {
  if constexpr (std::is_floating_point_v<K>)
    return x != x;
  else
    return false;
}

// numpy's order: numbers ascending, then NaN.
template <class K>
bool key_less(K a, K b) {
  return a < b || (is_nan(b) && !is_nan(a));
}

// Orders the first k of n entries along one axis of every row of x (x seen as (outer, n, inner)):
// writes values (if defined) and indices. Ties go to the lower index, so the result is stable.
// in_index_order: the k selected entries are written in their order in x instead (top_k with
// sorted=False: MindSpore's CPU kernel gives x itself when k is the whole axis).
void sort_along(const Tensor& x, int64_t axis, int64_t k, bool descending, Tensor* values,
                Tensor& indices, bool in_index_order = false) {
  if (x.numel() == 0 || k == 0) return;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (d < axis)
      outer *= x.shape()[d];
    else if (d == axis)
      n = x.shape()[d];
    else
      inner *= x.shape()[d];
  }
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = compute_t<T>;
    if constexpr (!is_complex_v<T>) {  // ordered types only (the registry keeps complex out)
      const T* px = x.data<T>();
      T* pv = values ? values->data<T>() : nullptr;
      int64_t* pi = indices.data<int64_t>();
      auto less = [descending](const Entry<K>& a, const Entry<K>& b) {
        if (descending ? key_less(b.key, a.key) : key_less(a.key, b.key)) return true;
        if (descending ? key_less(a.key, b.key) : key_less(b.key, a.key)) return false;
        return a.index < b.index;
      };
      parallel_for(outer * inner, n * 16, [&](int64_t b, int64_t e) {
        std::vector<Entry<K>> row(n);
        for (int64_t r = b; r < e; ++r) {
          const int64_t o = r / inner, i = r % inner;
          const T* src = px + o * n * inner + i;
          for (int64_t j = 0; j < n; ++j) row[j] = {K(src[j * inner]), j};
          if (k < n)
            std::partial_sort(row.begin(), row.begin() + k, row.end(), less);
          else if (!in_index_order)
            std::sort(row.begin(), row.end(), less);
          if (in_index_order)
            std::sort(row.begin(), row.begin() + k,
                      [](const Entry<K>& a, const Entry<K>& b) { return a.index < b.index; });
          const int64_t dst = o * k * inner + i;
          for (int64_t j = 0; j < k; ++j) {
            pi[dst + j * inner] = row[j].index;
            if (pv) pv[dst + j * inner] = src[row[j].index * inner];
          }
        }
      });
    }
  });
}

int64_t sort_axis(const KernelContext& ctx) {
  int64_t nd = ctx.in(0).ndim(), axis = ctx.attrs.get_int("axis");
  return nd == 0 ? 0 : (axis < 0 ? axis + nd : axis);
}

int64_t axis_len(const Tensor& x, int64_t axis) { return x.ndim() == 0 ? 1 : x.shape()[axis]; }

}  // namespace

void sort_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = sort_axis(ctx);
  sort_along(x, axis, axis_len(x, axis), ctx.attrs.get_bool("descending"), &ctx.out(0), ctx.out(1));
}

void argsort_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = sort_axis(ctx);
  sort_along(x, axis, axis_len(x, axis), ctx.attrs.get_bool("descending"), nullptr, ctx.out(0));
}

void top_k_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  sort_along(x, x.ndim() == 0 ? 0 : x.ndim() - 1, ctx.attrs.get_int("k"), true, &ctx.out(0),
             ctx.out(1), !ctx.attrs.get_bool("sorted"));
}

}  // namespace mycel::cpu
