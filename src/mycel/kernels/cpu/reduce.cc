#include "mycel/kernels/cpu/reduce.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <type_traits>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/norm_nhwc.h"

namespace mycel::cpu {

// ---- the (outer, reduce, inner) view ----

std::vector<ReduceStage> plan_reduce(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<bool> red(shape.size(), false);
  for (int64_t a : axes) red[a] = true;
  if (numel(shape) == 0) {  // nothing to read: one stage that only sizes the output
    ReduceStage s;
    for (size_t d = 0; d < shape.size(); ++d) (red[d] ? s.reduce : s.outer) *= shape[d];
    return {s};
  }
  // Groups of adjacent non-unit dims with the same role.
  std::vector<std::pair<bool, int64_t>> groups;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!groups.empty() && groups.back().first == red[d])
      groups.back().second *= shape[d];
    else
      groups.push_back({red[d], shape[d]});
  }
  std::vector<ReduceStage> stages;
  for (size_t j = groups.size(); j-- > 0;) {
    if (!groups[j].first) continue;
    ReduceStage s;
    s.reduce = groups[j].second;
    for (size_t i = 0; i < groups.size(); ++i) {
      if (i < j)
        s.outer *= groups[i].second;
      else if (i > j)
        s.inner *= groups[i].second;
    }
    stages.push_back(s);
    groups.erase(groups.begin() + j);
  }
  if (stages.empty()) stages.push_back({numel(shape), 1, 1});  // only unit axes reduced
  return stages;
}

namespace {

template <class C>
bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return x != x;
  else
    return false;
}

// Casts a compute value to a storage type (the 16-bit floats construct from float).
template <class O, class V>
O to_out(V v) {
  if constexpr (std::is_same_v<O, Half> || std::is_same_v<O, BFloat16>)
    return O(static_cast<float>(v));
  else
    return static_cast<O>(v);
}

// ---- the loop family ----

// A buffer of n accumulators set to v (std::vector<bool> has no data()): one growing buffer per
// thread, accumulator type and use (`Slot`; uses alive at once differ), so warm runs allocate
// nothing.
template <class A, int Slot>
struct AccBuffer {
  A* p;
  AccBuffer(int64_t n, A v) {
    thread_local std::unique_ptr<A[]> buf;
    thread_local int64_t cap = 0;
    if (cap < n || !buf) {
      buf.reset(new A[std::max<int64_t>(n, 1)]);
      cap = std::max<int64_t>(n, 1);
    }
    p = buf.get();
    std::fill_n(p, n, v);
  }
  A* data() { return p; }
  A& operator[](int64_t i) { return p[i]; }
};

constexpr int kLanes = 32;          // independent accumulators in a contiguous run (vectorizes)
constexpr int64_t kLeaf = 1024;     // pairwise-summation leaf along a contiguous run
constexpr int64_t kRowLeaf = 32;    // pairwise leaf along a strided (row) reduction
constexpr int64_t kColBlock = 256;  // output columns per work item in the strided case
constexpr int64_t kRowSplitMaxOut = 4096;  // row split of a bias gradient: at most this many
constexpr int64_t kRowSplitMinRows = 64;   // outputs, and at least this many rows

// Reduces p[0..n) (element i has reduction index base + i) pairwise over kLanes lanes.
template <class T, class Op>
typename Op::Acc reduce_run(const T* p, int64_t n, int64_t base, const Op& op) {
  using Acc = typename Op::Acc;
  using C = compute_t<T>;
  if (n > kLeaf) {
    int64_t h = n / 2 / kLanes * kLanes;
    return op.merge(reduce_run(p, h, base, op), reduce_run(p + h, n - h, base + h, op));
  }
  Acc a[kLanes];
  for (auto& v : a) v = op.init();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) a[j] = op.step(a[j], C(p[i + j]), base + i + j);
  for (; i < n; ++i) a[0] = op.step(a[0], C(p[i]), base + i);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) a[j] = op.merge(a[j], a[j + w]);
  return a[0];
}

// acc[0..w) op= rows [0, n) of p (row r at p + r * stride, reduction index r0 + r), pairwise over
// rows; scratch holds w accumulators per recursion level.
template <class T, class Op>
void reduce_rows(const T* p, int64_t n, int64_t stride, int64_t w, int64_t r0,
                 typename Op::Acc* acc, typename Op::Acc* scratch, const Op& op) {
  using C = compute_t<T>;
  if (n > kRowLeaf) {
    int64_t h = n / 2;
    reduce_rows(p, h, stride, w, r0, acc, scratch + w, op);
    for (int64_t i = 0; i < w; ++i) scratch[i] = op.init();
    reduce_rows(p + h * stride, n - h, stride, w, r0 + h, scratch, scratch + w, op);
    for (int64_t i = 0; i < w; ++i) acc[i] = op.merge(acc[i], scratch[i]);
    return;
  }
  for (int64_t r = 0; r < n; ++r) {
    const T* row = p + r * stride;
    for (int64_t i = 0; i < w; ++i) acc[i] = op.step(acc[i], C(row[i]), r0 + r);
  }
}

// Scratch levels reduce_rows needs for n rows.
int64_t row_levels(int64_t n) {
  int64_t levels = 1;
  for (; n > kRowLeaf; n -= n / 2) ++levels;
  return levels;
}

// y[o, i] = finalize(reduce over r of x[o, r, i]).
template <class T, class Op>
void reduce_3d(const T* x, typename Op::Out* y, int64_t outer, int64_t R, int64_t inner,
               const Op& op) {
  using Acc = typename Op::Acc;
  const int64_t m = outer * inner;
  if (m == 0) return;
  if (R == 0) {
    const auto v = op.finalize(op.init(), 0);
    for (int64_t i = 0; i < m; ++i) y[i] = v;
    return;
  }
  const int nt = num_threads();
  const int64_t nblk = inner == 1 ? outer : outer * ((inner + kColBlock - 1) / kColBlock);
  // A bias gradient (R rows of at most kRowSplitMaxOut outputs) is split by rows too: its input
  // was just written by an elementwise kernel whose threads each wrote a contiguous run of rows,
  // so each thread sums what sits in its own cache. Split by columns, each thread read half its
  // data from the other core: the MLP's 128x512 bias gradients took 17 and 12 us.
  const bool rows_split = outer == 1 && inner > 1 && m <= kRowSplitMaxOut && R >= kRowSplitMinRows;
  if ((nblk < nt || rows_split) && m * R >= kParallelGrain && R >= 2 * nt) {
    // Few outputs, long reductions: split the rows across threads and merge the partials.
    AccBuffer<Acc, 0> part(nt * m, op.init());
    parallel_for(nt, R / nt * m, [&](int64_t b, int64_t e) {
      AccBuffer<Acc, 1> scratch(inner == 1 ? 0 : inner * row_levels(R), op.init());
      for (int64_t c = b; c < e; ++c) {
        int64_t r0 = R * c / nt, r1 = R * (c + 1) / nt;
        Acc* pc = part.data() + c * m;
        for (int64_t o = 0; o < outer; ++o) {
          const T* xo = x + (o * R + r0) * inner;
          if (inner == 1)
            pc[o] = reduce_run(xo, r1 - r0, r0, op);
          else
            reduce_rows(xo, r1 - r0, inner, inner, r0, pc + o * inner, scratch.data(), op);
        }
      }
    });
    for (int64_t i = 0; i < m; ++i) {
      Acc a = part[i];
      for (int c = 1; c < nt; ++c) a = op.merge(a, part[c * m + i]);
      y[i] = op.finalize(a, R);
    }
    return;
  }
  if (inner == 1) {
    // Runs shorter than kLanes (a mean over a small plane: ResNet-18's final 4x4 pooling of
    // (32, 512) planes): reduce_run adds them in order into one accumulator and merges it with
    // kLanes - 1 identities. For sums that merge changes nothing (x + 0 is x: an accumulator
    // started at +0 never holds -0), so kG outputs go together, kG independent chains of adds
    // instead of one chain plus 31 merges per output: 0.30 -> 0.05 ms for that pooling in bf16.
    if constexpr (requires { Op::kAddsInOrder; }) {
      if (R < kLanes) {
        using C = compute_t<T>;
        constexpr int64_t kG = 16;
        parallel_for(outer, R, [&](int64_t b, int64_t e) {
          int64_t o = b;
          for (; o + kG <= e; o += kG) {
            Acc a[kG];
            for (auto& v : a) v = op.init();
            const T* xo = x + o * R;
            for (int64_t i = 0; i < R; ++i)
              for (int64_t g = 0; g < kG; ++g) a[g] = op.step(a[g], C(xo[g * R + i]), i);
            for (int64_t g = 0; g < kG; ++g) y[o + g] = op.finalize(a[g], R);
          }
          for (; o < e; ++o) y[o] = op.finalize(reduce_run(x + o * R, R, 0, op), R);
        });
        return;
      }
    }
    parallel_for(outer, R, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = op.finalize(reduce_run(x + o * R, R, 0, op), R);
    });
    return;
  }
  const int64_t cols = (inner + kColBlock - 1) / kColBlock;
  parallel_for(outer * cols, R * std::min(inner, kColBlock), [&](int64_t b, int64_t e) {
    AccBuffer<Acc, 2> scratch(kColBlock * (row_levels(R) + 1), op.init());
    for (int64_t item = b; item < e; ++item) {
      const int64_t o = item / cols, c0 = item % cols * kColBlock;
      const int64_t w = std::min(kColBlock, inner - c0);
      Acc* acc = scratch.data();
      for (int64_t i = 0; i < w; ++i) acc[i] = op.init();
      reduce_rows(x + o * R * inner + c0, R, inner, w, 0, acc, acc + kColBlock, op);
      for (int64_t i = 0; i < w; ++i) y[o * inner + c0 + i] = op.finalize(acc[i], R);
    }
  });
}

// ---- accumulators: init / step(acc, x, index) / merge / finalize(acc, count) ----

template <class T>
constexpr bool kFloat = std::is_floating_point_v<compute_t<T>>;
// Sums and products of integers and bools are int64, as in numpy (accumulated as uint64 so
// that overflow wraps without undefined behaviour).
// Complex values sum, multiply and average as themselves (kInexact); uint16/32/64 sum to uint64.
template <class T>
constexpr bool kInexact = kFloat<T> || is_complex_v<T>;
template <class T>
constexpr bool kWideUnsigned = std::is_unsigned_v<T> && !std::is_same_v<T, bool> && sizeof(T) >= 2;
template <class T>
using int64_promoted_t =
    std::conditional_t<kInexact<T>, T, std::conditional_t<kWideUnsigned<T>, uint64_t, int64_t>>;
template <class T>
using sum_acc_t = std::conditional_t<kInexact<T>, compute_t<T>, uint64_t>;
// Float results (mean, var, logsumexp) of integers and bools are float64.
template <class T>
using float_out_t = std::conditional_t<kInexact<T>, T, double>;
template <class T>
using float_acc_t = std::conditional_t<kInexact<T>, compute_t<T>, double>;
// The real type of a complex T (var and std of complex values are real).
template <class T>
struct real_of {
  using type = T;
};
template <class V>
struct real_of<std::complex<V>> {
  using type = V;
};
template <class T>
using real_of_t = typename real_of<T>::type;

template <class T>
struct Sum {
  using Acc = sum_acc_t<T>;
  using Out = int64_promoted_t<T>;
  static constexpr bool kAddsInOrder = true;  // merge(a, init()) == a (reduce_3d's short runs)
  Acc init() const { return Acc(0); }
  template <class C>
  Acc step(Acc a, C x, int64_t) const {
    return a + Acc(x);
  }
  Acc merge(Acc a, Acc b) const { return a + b; }
  Out finalize(Acc a, int64_t) const { return to_out<Out>(a); }
};

template <class T>
struct Prod {
  using Acc = sum_acc_t<T>;
  using Out = int64_promoted_t<T>;
  Acc init() const { return Acc(1); }
  template <class C>
  Acc step(Acc a, C x, int64_t) const {
    return a * Acc(x);
  }
  Acc merge(Acc a, Acc b) const { return a * b; }
  Out finalize(Acc a, int64_t) const { return to_out<Out>(a); }
};

template <class T>
struct Mean {
  using Acc = float_acc_t<T>;
  using Out = float_out_t<T>;
  static constexpr bool kAddsInOrder = true;
  Acc init() const { return Acc(0); }
  template <class C>
  Acc step(Acc a, C x, int64_t) const {
    return a + Acc(x);
  }
  Acc merge(Acc a, Acc b) const { return a + b; }
  Out finalize(Acc a, int64_t n) const { return to_out<Out>(a / Acc(n)); }
};

// max (kMax) or min; NaN propagates as in numpy.
template <class T, bool kMax>
struct Extremum {
  using Acc = compute_t<T>;
  using Out = T;
  Acc init() const {
    if constexpr (std::is_floating_point_v<Acc>)
      return kMax ? -std::numeric_limits<Acc>::infinity() : std::numeric_limits<Acc>::infinity();
    else
      return kMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
  }
  Acc step(Acc a, Acc x, int64_t) const {
    bool take = (kMax ? x > a : x < a) | is_nan(x);  // no short circuit: keeps it vectorizable
    return take ? x : a;
  }
  Acc merge(Acc a, Acc b) const { return step(a, b, 0); }
  Out finalize(Acc a, int64_t) const { return to_out<Out>(a); }
};

// all (kAll) or any: truth of x != 0 (NaN is true, as in numpy).
template <class T, bool kAll>
struct Logical {
  using Acc = bool;
  using Out = bool;
  Acc init() const { return kAll; }
  template <class C>
  Acc step(Acc a, C x, int64_t) const {
    return kAll ? (a & (x != C(0))) : (a | (x != C(0)));
  }
  Acc merge(Acc a, Acc b) const { return kAll ? (a & b) : (a | b); }
  Out finalize(Acc a, int64_t) const { return a; }
};

// log(sum(exp(x))) in one pass: the running max m and sum(exp(x - m)).
template <class T>
struct LogSumExp {
  using F = float_acc_t<T>;
  struct Acc {
    F m, s;
  };
  using Out = float_out_t<T>;
  static constexpr F kNegInf = -std::numeric_limits<F>::infinity();
  Acc init() const { return {kNegInf, F(0)}; }
  template <class C>
  Acc step(Acc a, C x, int64_t) const {
    F v = F(x);
    if (v < a.m) return {a.m, a.s + std::exp(v - a.m)};  // the common case
    if (v == kNegInf) return a;
    if (v > a.m) return {v, a.s * std::exp(a.m - v) + F(1)};
    if (v == a.m) return {a.m, a.s + F(1)};  // also +inf twice
    return {a.m, a.s + std::exp(v - a.m)};   // NaN poisons s
  }
  Acc merge(Acc a, Acc b) const {
    if (b.s == F(0)) return a;
    if (a.s == F(0)) return b;
    if (a.m == b.m) return {a.m, a.s + b.s};
    if (a.m > b.m) return {a.m, a.s + b.s * std::exp(b.m - a.m)};
    return {b.m, b.s + a.s * std::exp(a.m - b.m)};
  }
  Out finalize(Acc a, int64_t) const { return to_out<Out>(a.m + std::log(a.s)); }
};

// Variance (or its square root) by Welford's update and Chan's merge, in float64; divisor
// max(count - ddof, 0) as in numpy, so ddof >= count gives inf or nan. Complex values (numpy's
// var of complex) give the real mean of |x - mean|^2: the mean is complex, m2 real.
template <class T, bool kStd>
struct Variance {
  using M = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;
  struct Acc {
    double n;
    M mean;
    double m2;
  };
  using Out = std::conditional_t<is_complex_v<T>, real_of_t<T>, float_out_t<T>>;
  double ddof = 0;
  Acc init() const { return {0, M(0), 0}; }
  // Re(conj(a) b): a * b for reals.
  static double dot(M a, M b) {
    if constexpr (is_complex_v<M>)
      return a.real() * b.real() + a.imag() * b.imag();
    else
      return a * b;
  }
  template <class C>
  Acc step(Acc a, C x, int64_t) const {
    M v = to_m(x);
    double n = a.n + 1;
    M d = v - a.mean, mean = a.mean + d / n;
    return {n, mean, a.m2 + dot(d, v - mean)};
  }
  Acc merge(Acc a, Acc b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    double n = a.n + b.n;
    M d = b.mean - a.mean;
    return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + dot(d, d) * (a.n * b.n / n)};
  }
  Out finalize(Acc a, int64_t count) const {
    double var = a.m2 / std::max(double(count) - ddof, 0.0);
    return to_out<Out>(kStd ? std::sqrt(var) : var);
  }

 private:
  template <class C>
  static M to_m(C x) {
    if constexpr (is_complex_v<C>)
      return M(double(x.real()), double(x.imag()));
    else
      return M(double(x));
  }
};

// Index of the first maximum (kMax) or minimum; the first NaN wins, as in numpy.
template <class T, bool kMax>
struct ArgExtremum {
  using C = compute_t<T>;
  struct Acc {
    C v;
    int64_t i;
  };
  using Out = int64_t;
  static bool better(C x, C y) { return kMax ? x > y : x < y; }
  Acc init() const { return {C(), -1}; }
  Acc step(Acc a, C x, int64_t i) const {
    if (a.i < 0 || (!is_nan(a.v) && (is_nan(x) || better(x, a.v)))) return {x, i};
    return a;
  }
  Acc merge(Acc a, Acc b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    bool an = is_nan(a.v), bn = is_nan(b.v);
    if (an != bn) return an ? a : b;
    if (!an) {
      if (better(a.v, b.v)) return a;
      if (better(b.v, a.v)) return b;
    }
    return a.i < b.i ? a : b;
  }
  Out finalize(Acc a, int64_t) const { return a.i; }
};

// ---- kernels ----

// Adapters for multi-stage reductions: the first stage keeps accumulators (Partial), later
// stages merge them (Combine), the last one finalizes with the total count.
template <class Op>
struct Partial {
  using Acc = typename Op::Acc;
  using Out = Acc;
  Op op;
  Acc init() const { return op.init(); }
  template <class C>
  Acc step(Acc a, C x, int64_t i) const {
    return op.step(a, x, i);
  }
  Acc merge(Acc a, Acc b) const { return op.merge(a, b); }
  Out finalize(Acc a, int64_t) const { return a; }
};

template <class Op, bool kLast>
struct Combine {
  using Acc = typename Op::Acc;
  using Out = std::conditional_t<kLast, typename Op::Out, Acc>;
  Op op;
  int64_t total;
  Acc init() const { return op.init(); }
  Acc step(Acc a, Acc x, int64_t) const { return op.merge(a, x); }
  Acc merge(Acc a, Acc b) const { return op.merge(a, b); }
  Out finalize(Acc a, int64_t) const {
    if constexpr (kLast)
      return op.finalize(a, total);
    else
      return a;
  }
};

template <class T, class Op>
void reduce_stages(const T* x, typename Op::Out* y, const std::vector<ReduceStage>& st,
                   const Op& op) {
  using Acc = typename Op::Acc;
  if (st.size() == 1) return reduce_3d(x, y, st[0].outer, st[0].reduce, st[0].inner, op);
  int64_t total = 1;
  for (const auto& s : st) total *= s.reduce;
  // Stage results alternate between two buffers.
  Acc* cur = AccBuffer<Acc, 3>(st[0].outer * st[0].inner, op.init()).data();
  reduce_3d(x, cur, st[0].outer, st[0].reduce, st[0].inner, Partial<Op>{op});
  for (size_t k = 1; k + 1 < st.size(); ++k) {
    Acc* next = k % 2 ? AccBuffer<Acc, 4>(st[k].outer * st[k].inner, op.init()).data()
                      : AccBuffer<Acc, 3>(st[k].outer * st[k].inner, op.init()).data();
    reduce_3d(cur, next, st[k].outer, st[k].reduce, st[k].inner, Combine<Op, false>{op, total});
    cur = next;
  }
  const ReduceStage& s = st.back();
  reduce_3d(cur, y, s.outer, s.reduce, s.inner, Combine<Op, true>{op, total});
}

// Runs the reducer make(TypeTag<T>) over the planned stages of input 0 into output 0. Every
// dtype reaches here that the op's registry entry lists; kComplex says whether the reducer is
// built for complex values at all (sum, prod, mean: the others order or take logs).
template <bool kComplex = false, class Make>
void run_stages(const KernelContext& ctx, const std::vector<ReduceStage>& stages, Make make) {
  const Tensor& x = ctx.in(0);
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T> && !kComplex) {
      MYCEL_THROW(TypeError, "[", ctx.op.name, "] does not take ", dtype_name(x.dtype()));
    } else {
      auto op = make(tag);
      using Out = typename decltype(op)::Out;
      if (dtype_v<Out> != ctx.out(0).dtype())
        MYCEL_THROW(RuntimeError, "[", ctx.op.name, "] internal: kernel output dtype ",
                    dtype_name(dtype_v<Out>), " != inferred ", dtype_name(ctx.out(0).dtype()));
      reduce_stages(x.data<T>(), ctx.out(0).data<Out>(), stages, op);
    }
  });
}

// Runs the reducer make(TypeTag<T>) over `axes` of input 0 into output 0.
template <bool kComplex = false, class Make>
void run_reduction(const KernelContext& ctx, const std::vector<int64_t>& axes, Make make) {
  run_stages<kComplex>(ctx, plan_reduce(ctx.in(0).shape(), axes), make);
}

// The stages of a reduction over the `axis` attribute, planned once per input shape (graph mode
// keeps them in the instruction's prepared state: a warm launch plans and allocates nothing).
struct ReducePrepared : KernelPrepared {
  Shape shape;
  std::vector<ReduceStage> stages;
};

template <bool kComplex = false, class Make>
void reduce_axes(const KernelContext& ctx, Make make) {
  std::unique_ptr<ReducePrepared> local;
  const ReducePrepared& p = prepared_state<ReducePrepared>(
      ctx.prepared, local, [&](const ReducePrepared& q) { return q.shape == ctx.in(0).shape(); },
      [&] {
        auto q = std::make_unique<ReducePrepared>();
        q->shape = ctx.in(0).shape();
        q->stages = plan_reduce(
            q->shape, normalize_axes(ctx.attrs.get_ints("axis"), ctx.in(0).ndim(), ctx.op.name));
        return q;
      });
  run_stages<kComplex>(ctx, p.stages, make);
}

// Single-axis ops (argmax, cumsum): a 0-d input acts as a 1-element vector.
std::vector<int64_t> single_axis(const KernelContext& ctx) {
  int64_t nd = ctx.in(0).ndim();
  if (nd == 0) return {};
  return {normalize_axis(ctx.attrs.get_int("axis"), nd, ctx.op.name.c_str())};
}

template <class T>
using tag_t = typename T::type;

}  // namespace

void sum_kernel(const KernelContext& c) {
  reduce_axes<true>(c, [](auto t) { return Sum<tag_t<decltype(t)>>{}; });
}
void mean_kernel(const KernelContext& c) {
  if (c.params && mean_hw_nhwc_launch(c)) return;  // the layout step's NHWC activations
  reduce_axes<true>(c, [](auto t) { return Mean<tag_t<decltype(t)>>{}; });
}
void prod_kernel(const KernelContext& c) {
  reduce_axes<true>(c, [](auto t) { return Prod<tag_t<decltype(t)>>{}; });
}
void max_kernel(const KernelContext& c) {
  reduce_axes(c, [](auto t) { return Extremum<tag_t<decltype(t)>, true>{}; });
}
void min_kernel(const KernelContext& c) {
  reduce_axes(c, [](auto t) { return Extremum<tag_t<decltype(t)>, false>{}; });
}
void all_kernel(const KernelContext& c) {
  reduce_axes(c, [](auto t) { return Logical<tag_t<decltype(t)>, true>{}; });
}
void any_kernel(const KernelContext& c) {
  reduce_axes(c, [](auto t) { return Logical<tag_t<decltype(t)>, false>{}; });
}
void logsumexp_kernel(const KernelContext& c) {
  reduce_axes(c, [](auto t) { return LogSumExp<tag_t<decltype(t)>>{}; });
}
void var_kernel(const KernelContext& c) {
  double ddof = static_cast<double>(c.attrs.get_int("ddof"));
  reduce_axes<true>(c, [ddof](auto t) { return Variance<tag_t<decltype(t)>, false>{ddof}; });
}
void std_kernel(const KernelContext& c) {
  double ddof = static_cast<double>(c.attrs.get_int("ddof"));
  reduce_axes<true>(c, [ddof](auto t) { return Variance<tag_t<decltype(t)>, true>{ddof}; });
}
namespace {
// The contiguous-rows case of arg_extremum: the extremum, then its first position.
template <class T, bool kMax>
void arg_rows(const Tensor& x, Tensor& out, int64_t outer, int64_t R) {
  using C = compute_t<T>;
  const T* px = x.data<T>();
  int64_t* py = out.data<int64_t>();
  parallel_for(outer, R, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* row = px + o * R;
      const C m = reduce_run(row, R, 0, Extremum<T, kMax>{});
      const bool nan = is_nan(m);
      int64_t j = 0;
      while (j + 1 < R && !(nan ? is_nan(C(row[j])) : C(row[j]) == m)) ++j;
      py[o] = j;
    }
  });
}

// argmax/argmin. Contiguous rows take two vectorizable passes (arg_rows); other layouts use the
// generic (value, index) accumulator. Complex values have no order (the registry keeps them out).
template <bool kMax>
void arg_extremum(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<ReduceStage> st = plan_reduce(x.shape(), single_axis(ctx));
  if (st.size() != 1 || st[0].inner != 1 || x.numel() == 0) {
    run_reduction(ctx, single_axis(ctx),
                  [](auto t) { return ArgExtremum<tag_t<decltype(t)>, kMax>{}; });
    return;
  }
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!is_complex_v<T>) arg_rows<T, kMax>(x, ctx.out(0), st[0].outer, st[0].reduce);
  });
}
}  // namespace

void argmax_kernel(const KernelContext& c) { arg_extremum<true>(c); }
void argmin_kernel(const KernelContext& c) { arg_extremum<false>(c); }

namespace {
// A scan along the one axis: the input seen as (outer, n, inner), each work item a block of up to
// kColBlock adjacent inner columns; body(o, c0, w) runs the scan of columns [c0, c0 + w) of outer
// row o, step s of the scan reading element offset(o, s, c0) (reverse scans walk s backwards).
struct ScanView {
  int64_t outer = 1, n = 1, inner = 1;
  bool reverse = false;
  int64_t offset(int64_t o, int64_t s, int64_t c0) const {
    return (o * n + (reverse ? n - 1 - s : s)) * inner + c0;
  }
};

ScanView scan_view(const KernelContext& ctx) {
  ScanView v;
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> axes = single_axis(ctx);
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (axes.empty() || d < axes[0])
      v.outer *= x.shape()[d];
    else if (d == axes[0])
      v.n = x.shape()[d];
    else
      v.inner *= x.shape()[d];
  }
  v.reverse = ctx.attrs.get_bool("reverse");
  return v;
}

template <class Body>
void for_each_scan_block(const ScanView& v, Body body) {
  const int64_t cols = (v.inner + kColBlock - 1) / kColBlock;
  parallel_for(v.outer * cols, v.n * std::min(v.inner, kColBlock), [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t o = item / cols, c0 = item % cols * kColBlock;
      body(o, c0, std::min(kColBlock, v.inner - c0));
    }
  });
}

// Running sums (kProd false) or products along the axis; exclusive scans start from the identity.
template <bool kProd>
void scan_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.numel() == 0) return;
  const ScanView v = scan_view(ctx);
  const bool exclusive = ctx.attrs.get_bool("exclusive");
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    using Acc = sum_acc_t<T>;
    using Out = int64_promoted_t<T>;
    const T* px = x.data<T>();
    Out* py = ctx.out(0).data<Out>();
    for_each_scan_block(v, [&](int64_t o, int64_t c0, int64_t w) {
      Acc acc[kColBlock];
      for (int64_t i = 0; i < w; ++i) acc[i] = Acc(kProd ? 1 : 0);
      for (int64_t s = 0; s < v.n; ++s) {
        const int64_t off = v.offset(o, s, c0);
        const T* xr = px + off;
        Out* yr = py + off;
        for (int64_t i = 0; i < w; ++i) {
          Acc next = kProd ? Acc(acc[i] * Acc(C(xr[i]))) : Acc(acc[i] + Acc(C(xr[i])));
          yr[i] = to_out<Out>(exclusive ? acc[i] : next);
          acc[i] = next;
        }
      }
    });
  });
}
}  // namespace

void cumsum_kernel(const KernelContext& ctx) { scan_kernel<false>(ctx); }
void cumprod_kernel(const KernelContext& ctx) { scan_kernel<true>(ctx); }

// dx of y = cumprod(x) given dy, exact where x has zeros (no division): along the scan order, with
// e = 1 for an exclusive scan, dx_k = prefix_k * S_k where prefix_k = prod_{i<k} x_i and
// S_k = sum_{j>=k+e} dy_j prod_{k<i<=j-e} x_i, which runs backwards as
// S_k = dy_{k+e} + x_{k+1} S_{k+1} (dy past the end is 0).
void cumprod_grad_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.numel() == 0) return;
  const ScanView v = scan_view(ctx);
  const int64_t e = ctx.attrs.get_bool("exclusive") ? 1 : 0;
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* px = x.data<T>();
    const T* pd = ctx.in(1).data<T>();
    T* pg = ctx.out(0).data<T>();
    for_each_scan_block(v, [&](int64_t o, int64_t c0, int64_t w) {
      C acc[kColBlock];
      // Backward pass: S_k into dx_k.
      for (int64_t i = 0; i < w; ++i) acc[i] = C(0);
      for (int64_t k = v.n - 1; k >= 0; --k) {
        T* gr = pg + v.offset(o, k, c0);
        const T* dr = k + e < v.n ? pd + v.offset(o, k + e, c0) : nullptr;
        const T* xn = k + 1 < v.n ? px + v.offset(o, k + 1, c0) : nullptr;
        for (int64_t i = 0; i < w; ++i) {
          acc[i] = (dr ? C(dr[i]) : C(0)) + (xn ? C(xn[i]) * acc[i] : C(0));
          gr[i] = T(acc[i]);
        }
      }
      // Forward pass: times the exclusive prefix product (S_k rounded to T once: a T result).
      for (int64_t i = 0; i < w; ++i) acc[i] = C(1);
      for (int64_t k = 0; k < v.n; ++k) {
        const int64_t off = v.offset(o, k, c0);
        for (int64_t i = 0; i < w; ++i) {
          pg[off + i] = T(C(pg[off + i]) * acc[i]);
          acc[i] *= C(px[off + i]);
        }
      }
    });
  });
}

}  // namespace mycel::cpu
