#include "mycel/kernels/cpu/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "mycel/kernels/cpu/elementwise.h"

namespace mycel::cpu {
namespace {

enum class Reduction { kNone, kMean, kSum };

Reduction reduction(const KernelContext& ctx) {
  const std::string& r = ctx.attrs.get_str("reduction");  // infer checked the spelling
  return r == "none" ? Reduction::kNone : r == "sum" ? Reduction::kSum : Reduction::kMean;
}

// n values of C in a per-thread buffer that only grows, one per use alive at once (`Slot`): a
// warm graph-mode step allocates nothing. Every caller writes all n before reading them.
template <class C, int Slot>
C* scratch(int64_t n) {
  thread_local std::vector<C> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

// Sum in double over fixed chunks: the same result for any thread count.
template <class C>
double chunked_sum(const C* v, int64_t n) {
  constexpr int64_t kChunk = 4096;
  const int64_t nc = (n + kChunk - 1) / kChunk;
  double* part = scratch<double, 2>(nc);
  parallel_for(nc, kChunk, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      double s = 0;
      for (int64_t i = c * kChunk, end = std::min(n, i + kChunk); i < end; ++i) s += double(v[i]);
      part[c] = s;
    }
  });
  double s = 0;
  for (int64_t c = 0; c < nc; ++c) s += part[c];
  return s;
}

void store_scalar(double v, Tensor& out) {
  convert_elements(&v, DType::float64, out.data(), out.dtype(), 1);
}

// Writes per-element losses L (n values of compute type C) to out: as is, summed or averaged.
// `divisor`, when given, replaces n for the mean (nll_loss divides by the total weight, which
// class weights can make zero or negative: any value given is used as it is).
template <class C>
void write_reduced(const C* L, int64_t n, Reduction r, Tensor& out,
                   std::optional<double> divisor = {}) {
  if (r == Reduction::kNone) {
    convert_elements(L, dtype_v<C>, out.data(), out.dtype(), n);
    return;
  }
  double s = chunked_sum(L, n);
  if (r == Reduction::kMean) s /= divisor ? *divisor : double(n);
  store_scalar(s, out);
}

// Calls fn(TypeTag<int32_t or int64_t>) for a label tensor (infer checked the dtype).
template <class Fn>
void visit_label_dtype(DType t, Fn&& fn) {
  if (t == DType::int32)
    fn(TypeTag<int32_t>{});
  else
    fn(TypeTag<int64_t>{});
}

// Checks every label before anything is written: an IndexError leaves the outputs untouched.
template <class L>
void check_labels(const KernelContext& ctx, const L* lab, int64_t n, int64_t classes,
                  const char* arg, int64_t ignore = std::numeric_limits<int64_t>::min()) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = int64_t(lab[i]);
    if (v != ignore && (v < 0 || v >= classes))
      MYCEL_THROW(IndexError, "[", ctx.op.name, "] input '", arg, "' has ", arg, "[", i, "] = ", v,
                  ", out of range for ", classes, " classes (valid: [0, ", classes, "))");
  }
}

// log(sum(exp(x))) of one row, shifted by its max.
template <class T, class C = compute_t<T>>
C log_sum_exp(const T* x, int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, C(x[j]));
  if (!std::isfinite(m)) return m;  // all -inf, or an inf/nan somewhere: propagates
  C s = 0;
  for (int64_t j = 0; j < n; ++j) s += std::exp(C(x[j]) - m);
  return m + std::log(s);
}

template <class T>
using Acc = compute_t<T>;  // per-element loss type: float for 16-bit floats and float32

}  // namespace

void softmax_cross_entropy_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t n = x.dim(0), c = x.dim(1);
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* px = x.data<T>();
    const T* py = ctx.in(1).data<T>();
    T* loss = ctx.out(0).data<T>();
    T* grad = ctx.out(1).data<T>();
    parallel_for(n, 8 * c, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* xr = px + i * c;
        const T* yr = py + i * c;
        T* gr = grad + i * c;
        const C lse = log_sum_exp(xr, c);
        C l = 0;
        for (int64_t j = 0; j < c; ++j) {
          const C xj = C(xr[j]), yj = C(yr[j]);
          l += yj * (lse - xj);
          gr[j] = T(std::exp(xj - lse) - yj);
        }
        loss[i] = T(l);
      }
    });
  });
}

void sparse_softmax_cross_entropy_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t n = x.dim(0), c = x.dim(1);
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Acc<T>;
    visit_label_dtype(ctx.in(1).dtype(), [&](auto ltag) {
      using L = typename decltype(ltag)::type;
      const L* lab = ctx.in(1).data<L>();
      check_labels(ctx, lab, n, c, "labels");
      const T* px = x.data<T>();
      C* per = scratch<C, 0>(n);
      parallel_for(n, 4 * c, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          per[i] = log_sum_exp(px + i * c, c) - C(px[i * c + int64_t(lab[i])]);
      });
      write_reduced(per, n, reduction(ctx), ctx.out(0));
    });
  });
}

void nll_loss_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t ignore = ctx.attrs.get_int("ignore_index");
  const bool has_w = ctx.inputs.size() > 2 && ctx.in(2).defined();
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Acc<T>;
    visit_label_dtype(ctx.in(1).dtype(), [&](auto ltag) {
      using L = typename decltype(ltag)::type;
      const L* tgt = ctx.in(1).data<L>();
      check_labels(ctx, tgt, n, c, "target", ignore);
      const T* px = x.data<T>();
      const T* pw = has_w ? ctx.in(2).data<T>() : nullptr;
      C* per = scratch<C, 0>(n);
      C* wt = scratch<C, 1>(n);
      for (int64_t i = 0; i < n; ++i) {  // one multiply per row: not worth threads
        const int64_t t = int64_t(tgt[i]);
        const C w = t == ignore ? C(0) : pw ? C(pw[t]) : C(1);
        wt[i] = w;
        per[i] = t == ignore ? C(0) : -w * C(px[i * c + t]);
      }
      const double total = chunked_sum(wt, n);
      write_reduced(per, n, reduction(ctx), ctx.out(0), total);
      store_scalar(total, ctx.out(1));
    });
  });
}

namespace {
// Per-element losses f(x, y) into a compute-type tensor shaped like out's (unreduced) shape,
// multiplied by the optional weight input `w_index`; then reduced into out.
template <class T, class L>
void reduce_elementwise(const KernelContext& ctx, Tensor& losses, int w_index, L&& compute) {
  using C = Acc<T>;
  compute(losses);
  if (w_index >= 0 && ctx.inputs.size() > size_t(w_index) && ctx.in(w_index).defined())
    binary_map<C, T, C>(losses, ctx.in(w_index), losses, [](auto a, auto b) { return a * b; });
  write_reduced(losses.data<C>(), losses.numel(), reduction(ctx), ctx.out(0));
}
}  // namespace

void binary_cross_entropy_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Acc<T>;
    Tensor losses = Tensor::empty(x.shape(), dtype_v<C>);
    reduce_elementwise<T>(ctx, losses, 2, [&](Tensor& l) {
      binary_map<T, T, C>(x, ctx.in(1), l, [](auto p, auto y) {
        using V = decltype(p);
        const V lp = std::max(std::log(p), V(-100)), lq = std::max(std::log(V(1) - p), V(-100));
        return -(y * lp + (V(1) - y) * lq);
      });
    });
  });
}

void bce_with_logits_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const bool has_pw = ctx.inputs.size() > 3 && ctx.in(3).defined();
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Acc<T>;
    Tensor losses = Tensor::empty(x.shape(), dtype_v<C>);
    reduce_elementwise<T>(ctx, losses, 2, [&](Tensor& l) {
      if (has_pw) {
        // (1 - y) x + (1 + (pw - 1) y) (log1p(exp(-|x|)) + max(-x, 0))
        ternary_map<T, T, T, C>(x, ctx.in(1), ctx.in(3), l, [](auto v, auto y, auto pw) {
          using V = decltype(v);
          const V sp = std::log1p(std::exp(-std::abs(v))) + std::max(-v, V(0));
          return (V(1) - y) * v + (V(1) + (pw - V(1)) * y) * sp;
        });
      } else {
        binary_map<T, T, C>(x, ctx.in(1), l, [](auto v, auto y) {
          using V = decltype(v);
          return std::max(v, V(0)) - v * y + std::log1p(std::exp(-std::abs(v)));
        });
      }
    });
  });
}

void mse_loss_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Acc<T>;
    Shape s = broadcast_shapes(x.shape(), ctx.in(1).shape(), "mse_loss");
    Tensor losses = Tensor::empty(s, dtype_v<C>);
    reduce_elementwise<T>(ctx, losses, -1, [&](Tensor& l) {
      binary_map<T, T, C>(x, ctx.in(1), l, [](auto a, auto b) { return (a - b) * (a - b); });
    });
  });
}

}  // namespace mycel::cpu
