#include "mycel/kernels/cpu/shape.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

// Copies move bits only, so the loops are instantiated per element size, not per dtype.
struct Bytes16 {
  uint64_t lo, hi;
};

template <class Fn>
void visit_size(size_t n, Fn&& fn) {  // elements moved as opaque bytes of their size
  switch (n) {
    case 1:
      return fn(TypeTag<uint8_t>{});
    case 2:
      return fn(TypeTag<uint16_t>{});
    case 4:
      return fn(TypeTag<uint32_t>{});
    case 16:
      return fn(TypeTag<Bytes16>{});  // complex128
    default:
      return fn(TypeTag<uint64_t>{});
  }
}

// A multi-index of up to kInline dims on the stack, zeroed (a vector was a heap allocation per
// thread and launch); deeper ranks, rare, take the heap.
class Index {
 public:
  explicit Index(int64_t n) : heap_(n > kInline ? static_cast<size_t>(n) : 0, 0) {
    if (n <= kInline) std::fill(inline_, inline_ + kInline, int64_t{0});
    p_ = n > kInline ? heap_.data() : inline_;
  }
  int64_t& operator[](int64_t d) { return p_[d]; }

 private:
  static constexpr int64_t kInline = 12;
  int64_t inline_[kInline];
  std::vector<int64_t> heap_;
  int64_t* p_;
};

template <class U>
void gather_impl(const U* src, U* dst, const Shape& shape, const OffsetTables& t, int64_t base,
                 U fill) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd == 0) {
    dst[0] = src[base];
    return;
  }
  const int64_t inner = shape.back();
  const int64_t total = numel(shape);
  if (total == 0) return;
  const int64_t outer = total / inner;
  const std::vector<int64_t>& last = t.back();
  // The innermost table is usually an arithmetic progression: copy with a fixed step then.
  const int64_t step = inner > 1 ? last[1] - last[0] : 1;
  bool arithmetic = true, inner_pad = false;
  for (int64_t i = 0; i < inner; ++i) {
    if (last[i] == kPadOffset) inner_pad = true;
    if (last[i] != last[0] + i * step) arithmetic = false;
  }
  arithmetic = arithmetic && !inner_pad;
  const bool contiguous = arithmetic && step == 1;
  bool outer_pad = false;
  for (int64_t d = 0; d + 1 < nd; ++d)
    for (int64_t v : t[d]) outer_pad |= v == kPadOffset;
  if (contiguous && !outer_pad && nd >= 2) {
    // Rows copied whole (a transpose that keeps the last axis: attention's head split): the
    // offset of the dims above the last outer one is summed once per run of it, and short rows
    // are copied by an inlined loop instead of a memcpy call (128-byte rows: 3x a streaming op
    // before, on two cores).
    const int64_t n_last = shape[nd - 2];
    const std::vector<int64_t>& tl = t[nd - 2];
    parallel_for(outer, inner, [&](int64_t b, int64_t e) {
      Index idx(nd - 1);
      for (int64_t d = nd - 2, rem = b; d >= 0; --d) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
      }
      int64_t o = b;
      while (o < e) {
        int64_t hi = base + last[0];
        for (int64_t d = 0; d + 2 < nd; ++d) hi += t[d][idx[d]];
        const int64_t j0 = idx[nd - 2], j1 = std::min(n_last, j0 + (e - o));
        U* y = dst + o * inner;
        for (int64_t j = j0; j < j1; ++j, y += inner) {
          const U* x = src + hi + tl[j];
          if (inner <= 64)
            for (int64_t i = 0; i < inner; ++i) y[i] = x[i];
          else
            std::memcpy(y, x, static_cast<size_t>(inner) * sizeof(U));
        }
        o += j1 - j0;
        idx[nd - 2] = 0;
        for (int64_t d = nd - 3; d >= 0; --d) {
          if (++idx[d] < shape[d]) break;
          idx[d] = 0;
        }
      }
    });
    return;
  }
  parallel_for(outer, inner, [&](int64_t b, int64_t e) {
    Index idx(nd - 1);
    for (int64_t d = nd - 2, rem = b; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (int64_t o = b; o < e; ++o) {
      int64_t off = base;
      bool pad = false;
      for (int64_t d = 0; d + 1 < nd; ++d) {
        int64_t v = t[d][idx[d]];
        pad |= v == kPadOffset;
        off += v;
      }
      U* y = dst + o * inner;
      if (pad) {
        std::fill(y, y + inner, fill);
      } else if (contiguous) {
        std::memcpy(y, src + off + last[0], static_cast<size_t>(inner) * sizeof(U));
      } else if (arithmetic) {
        const U* x = src + off + last[0];
        for (int64_t i = 0; i < inner; ++i) y[i] = x[i * step];
      } else if (!inner_pad) {
        for (int64_t i = 0; i < inner; ++i) y[i] = src[off + last[i]];
      } else {
        for (int64_t i = 0; i < inner; ++i)
          y[i] = last[i] == kPadOffset ? fill : src[off + last[i]];
      }
      for (int64_t d = nd - 2; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

// (outer, inner) split of a shape around `axis`: outer = prod(shape[:axis]), inner = the rest.
int64_t outer_of(const Shape& s, int64_t axis) {
  int64_t n = 1;
  for (int64_t d = 0; d < axis; ++d) n *= s[d];
  return n;
}

}  // namespace

void gather_offsets(const Tensor& src, Tensor& out, const OffsetTables& tables, int64_t base,
                    double fill) {
  // The fill value in out's dtype, converted on the stack (a scalar tensor was a heap allocation
  // per launch).
  alignas(16) unsigned char f[16] = {};
  convert_elements(&fill, DType::float64, f, out.dtype(), 1);
  visit_size(itemsize(out.dtype()), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U fv;
    std::memcpy(&fv, f, sizeof(U));
    gather_impl<U>(out.numel() && src.numel() ? src.data<U>() : nullptr, out.data<U>(), out.shape(),
                   tables, base, fv);
  });
}

void scatter_add_offsets(const Tensor& src, Tensor& out, const OffsetTables& tables, int64_t base) {
  const Shape& shape = src.shape();
  const int64_t nd = static_cast<int64_t>(shape.size()), total = src.numel();
  if (out.numel() == 0) return;
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = total ? src.data<T>() : nullptr;
    T* y = out.data<T>();
    // Sums build up in the compute type (float for float16/bfloat16), rounded once at the end:
    // in out itself where that is the compute type, else in this thread's buffer, which only
    // grows (graph mode allocates nothing per launch). Serial: targets may repeat, and these
    // backward kernels move little data per element.
    const auto* xb = reinterpret_cast<const char*>(x);
    const auto* yb = reinterpret_cast<const char*>(y);
    const bool overlap = x && xb < yb + out.nbytes() && yb < xb + src.nbytes();
    C* acc = nullptr;
    if constexpr (std::is_same_v<T, C>)
      if (!overlap) acc = y;
    if (!acc) {
      thread_local std::vector<unsigned char> buffer;  // bytes: C may be bool
      const size_t bytes = static_cast<size_t>(out.numel()) * sizeof(C);
      if (buffer.size() < bytes) buffer.resize(bytes);
      acc = reinterpret_cast<C*>(buffer.data());
    }
    std::fill(acc, acc + out.numel(), C(0));
    Index idx(nd);
    for (int64_t i = 0; i < total; ++i) {  // (no iteration for an empty src: out stays 0)
      int64_t off = base;
      bool pad = false;
      for (int64_t d = 0; d < nd; ++d) {
        int64_t v = tables[d][idx[d]];
        pad |= v == kPadOffset;
        off += v;
      }
      if (!pad) {
        if constexpr (std::is_same_v<T, bool>)
          acc[off] = acc[off] || x[i];
        else
          acc[off] += C(x[i]);
      }
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    if (static_cast<const void*>(acc) != static_cast<const void*>(y))
      for (int64_t k = 0; k < out.numel(); ++k) y[k] = static_cast<T>(acc[k]);
  });
}

std::vector<int64_t> strided_table(int64_t n, int64_t start, int64_t step, int64_t stride) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[i] = (start + i * step) * stride;
  return t;
}

void concat_blocks(const std::vector<Tensor>& inputs, Tensor& out, int64_t axis) {
  const int64_t outer = outer_of(out.shape(), axis);
  const size_t row = out.numel() && outer ? out.nbytes() / outer : 0;
  if (row == 0) return;
  char* dst = static_cast<char*>(out.data());
  parallel_for(outer, static_cast<int64_t>(row / 4 + 1), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* y = dst + o * row;
      for (const Tensor& t : inputs) {
        const size_t size = t.nbytes() / static_cast<size_t>(outer);
        if (size) std::memcpy(y, static_cast<const char*>(t.data()) + o * size, size);
        y += size;
      }
    }
  });
}

void split_blocks(const Tensor& in, std::vector<Tensor>& outputs, int64_t axis) {
  const int64_t outer = outer_of(in.shape(), axis);
  const size_t row = in.numel() && outer ? in.nbytes() / outer : 0;
  if (row == 0) return;
  const char* src = static_cast<const char*>(in.data());
  parallel_for(outer, static_cast<int64_t>(row / 4 + 1), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const char* x = src + o * row;
      for (Tensor& t : outputs) {
        const size_t size = t.nbytes() / static_cast<size_t>(outer);
        if (size) std::memcpy(static_cast<char*>(t.data()) + o * size, x, size);
        x += size;
      }
    }
  });
}

void copy_all(const Tensor& in, Tensor& out) {
  if (out.nbytes()) std::memcpy(out.data(), in.data(), out.nbytes());
}

void fill_value(Tensor& out, double v) {
  visit_any_dtype(
      out.dtype(), [&](auto tag) {  // every type: zeros/ones/fill of uint32, complex64, ...
        using T = typename decltype(tag)::type;
        T x;
        convert_elements(&v, DType::float64, &x, out.dtype(), 1);
        T* p = out.data<T>();
        parallel_for(out.numel(), 1, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, x); });
      });
}

void triangle(const Tensor& x, Tensor& y, int64_t diagonal, bool lower) {
  const Shape& s = x.shape();
  const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  if (rows == 0 || cols == 0) return;
  const size_t isz = itemsize(x.dtype());
  const auto* src = static_cast<const char*>(x.data());
  auto* dst = static_cast<char*>(y.data());
  // Each row keeps one contiguous range of columns: [0, i + diagonal] (lower) or
  // [i + diagonal, cols) (upper); it is copied and the rest zeroed. A diagonal past the matrix
  // acts as the matrix's edge does, so it is clamped first (i + diagonal must not overflow).
  diagonal = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);
  parallel_for(x.numel() / cols, cols, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t i = r % rows;
      const int64_t lo = lower ? 0 : std::clamp<int64_t>(i + diagonal, 0, cols);
      const int64_t hi = lower ? std::clamp<int64_t>(i + diagonal + 1, 0, cols) : cols;
      char* out = dst + r * cols * isz;
      std::memset(out, 0, cols * isz);
      if (hi > lo) std::memcpy(out + lo * isz, src + (r * cols + lo) * isz, (hi - lo) * isz);
    }
  });
}

}  // namespace mycel::cpu
