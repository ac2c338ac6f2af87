#include "mycel/kernels/cpu/dynamic_shape.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

namespace mycel::cpu {
namespace {

template <class K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return v != v;
  else
    return false;
}

// numpy's order (NaN last) and equality with NaNs equal, as np.unique's equal_nan.
template <class K>
bool key_less(K a, K b) {
  return a < b || (is_nan(b) && !is_nan(a));
}
template <class K>
bool key_equal(K a, K b) {
  return a == b || (is_nan(a) && is_nan(b));
}

// Output k: the given tensor, or (data-dependent) a new one of `shape` when it came undefined.
Tensor& output(const KernelContext& ctx, size_t k, const Shape& shape, DType dtype) {
  Tensor& o = ctx.out(k);
  if (!o.defined()) o = Tensor::empty(shape, dtype);
  MYCEL_CHECK(o.shape() == shape, RuntimeError, "[", ctx.op.name, "] output ", k, " has shape ",
              shape_str(o.shape()), ", the values need ", shape_str(shape));
  return o;
}

// mask covers x's leading dims: (number of true entries, elements per row).
std::pair<int64_t, int64_t> mask_rows(const Tensor& x, const Tensor& mask) {
  const bool* m = mask.data<bool>();
  const int64_t rows = mask.numel();
  int64_t count = 0;
  for (int64_t i = 0; i < rows; ++i) count += m[i] ? 1 : 0;
  return {count, rows == 0 ? 0 : x.numel() / rows};
}

Shape row_shape(int64_t count, const Tensor& x, const Tensor& mask) {
  Shape s{count};
  s.insert(s.end(), x.shape().begin() + mask.ndim(), x.shape().end());
  return s;
}

}  // namespace

void unique_with_counts_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const bool consecutive = ctx.attrs.get_bool("consecutive");
  const bool sorted = ctx.attrs.get_bool("sorted");
  const int64_t n = x.numel();
  std::vector<int64_t> order(n), inverse(n), counts;
  std::iota(order.begin(), order.end(), int64_t{0});
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = compute_t<T>;
    if constexpr (!is_complex_v<T>) {  // ordered types only (the registry keeps complex out)
      const T* px = x.data<T>();
      if (!consecutive)
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return key_less(K(px[a]), K(px[b])); });
      std::vector<int64_t> firsts;  // position in `order` of each unique value's first element
      for (int64_t i = 0; i < n; ++i) {
        if (i == 0 || !key_equal(K(px[order[i]]), K(px[order[i - 1]]))) {
          firsts.push_back(order[i]);
          counts.push_back(0);
        }
        inverse[order[i]] = static_cast<int64_t>(counts.size()) - 1;
        ++counts.back();
      }
      const int64_t u = static_cast<int64_t>(counts.size());
      if (!consecutive && !sorted) {
        // Order of first appearance (MindSpore's Unique on CPU): the stable sort put each value's
        // earliest element first in its run, so firsts[j] is where value j first appears; rank
        // the values by it and renumber.
        std::vector<int64_t> by_first(u), new_id(u), new_counts(u), new_firsts(u);
        std::iota(by_first.begin(), by_first.end(), int64_t{0});
        std::sort(by_first.begin(), by_first.end(),
                  [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
        for (int64_t k = 0; k < u; ++k) {
          new_id[by_first[k]] = k;
          new_counts[k] = counts[by_first[k]];
          new_firsts[k] = firsts[by_first[k]];
        }
        for (int64_t& v : inverse) v = new_id[v];
        counts.swap(new_counts);
        firsts.swap(new_firsts);
      }
      T* pv = output(ctx, 0, {u}, x.dtype()).template data<T>();
      for (int64_t j = 0; j < u; ++j) pv[j] = px[firsts[j]];
    }
  });
  const int64_t u = static_cast<int64_t>(counts.size());
  Tensor& inv = output(ctx, 1, x.shape(), DType::int64);
  Tensor& cnt = output(ctx, 2, {u}, DType::int64);
  if (n == 0) return;  // (no memcpy with null pointers: UBSan)
  std::memcpy(inv.data(), inverse.data(), sizeof(int64_t) * n);
  std::memcpy(cnt.data(), counts.data(), sizeof(int64_t) * u);
}

void masked_select_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& mask = ctx.in(1);
  const auto [count, inner] = mask_rows(x, mask);
  Tensor& out = output(ctx, 0, row_shape(count, x, mask), x.dtype());
  const size_t row_bytes = static_cast<size_t>(inner) * itemsize(x.dtype());
  if (row_bytes == 0 || count == 0) return;
  const bool* m = mask.data<bool>();
  const auto* src = static_cast<const std::byte*>(x.data());
  auto* dst = static_cast<std::byte*>(out.data());
  for (int64_t i = 0, j = 0; i < mask.numel(); ++i)
    if (m[i]) std::memcpy(dst + row_bytes * j++, src + row_bytes * i, row_bytes);
}

void nonzero_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t n = x.numel(), nd = x.ndim();
  std::vector<char> hit(n);
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    if constexpr (is_complex_v<T>) {
      for (int64_t i = 0; i < n; ++i) hit[i] = px[i] != T(0);
    } else {
      using K = compute_t<T>;
      for (int64_t i = 0; i < n; ++i) hit[i] = K(px[i]) != K(0);
    }
  });
  const int64_t count = std::count(hit.begin(), hit.end(), char{1});
  int64_t* po = output(ctx, 0, {count, nd}, DType::int64).data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (!hit[i]) continue;
    for (int64_t d = nd - 1, rest = i; d >= 0; --d) {  // row-major coordinates of i
      po[d] = rest % x.shape()[d];
      rest /= x.shape()[d];
    }
    po += nd;
  }
}

void masked_scatter_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& mask = ctx.in(1);
  const Tensor& source = ctx.in(2);
  const auto [count, inner] = mask_rows(x, mask);
  MYCEL_CHECK(source.numel() >= count * inner, ValueError, "[", ctx.op.name, "] mask selects ",
              count * inner, " elements but source (shape ", shape_str(source.shape()),
              ") has only ", source.numel());
  Tensor& out = output(ctx, 0, x.shape(), x.dtype());
  const size_t row_bytes = static_cast<size_t>(inner) * itemsize(x.dtype());
  if (row_bytes == 0) return;
  std::memcpy(out.data(), x.data(), x.nbytes());
  const bool* m = mask.data<bool>();
  const auto* src = static_cast<const std::byte*>(source.data());
  auto* dst = static_cast<std::byte*>(out.data());
  for (int64_t i = 0, j = 0; i < mask.numel(); ++i)
    if (m[i]) std::memcpy(dst + row_bytes * i, src + row_bytes * j++, row_bytes);
}

void masked_scatter_grad_kernel(const KernelContext& ctx) {
  const Tensor& dout = ctx.in(0);
  const Tensor& mask = ctx.in(1);
  const auto [count, inner] = mask_rows(dout, mask);
  Tensor& out = output(ctx, 0, ctx.in(2).shape(), dout.dtype());
  MYCEL_CHECK(out.numel() >= count * inner, ValueError, "[", ctx.op.name, "] mask selects ",
              count * inner, " elements but source (shape ", shape_str(out.shape()), ") has only ",
              out.numel());
  const size_t row_bytes = static_cast<size_t>(inner) * itemsize(dout.dtype());
  if (out.nbytes() == 0) return;
  const bool* m = mask.data<bool>();
  const auto* src = static_cast<const std::byte*>(dout.data());
  auto* dst = static_cast<std::byte*>(out.data());
  int64_t j = 0;
  for (int64_t i = 0; i < mask.numel() && row_bytes > 0; ++i)
    if (m[i]) std::memcpy(dst + row_bytes * j++, src + row_bytes * i, row_bytes);
  if (out.nbytes() > row_bytes * j)
    std::memset(dst + row_bytes * j, 0, out.nbytes() - row_bytes * j);
}

}  // namespace mycel::cpu
