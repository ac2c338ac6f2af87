// CTC in log space over the extended label sequence l' = (blank, l1, blank, l2, ..., blank) of
// length 2L+1: alpha[t][s] sums the probabilities of the path prefixes that end in l'[s] at time
// t, beta[t][s] those of the suffixes that start there; both include y_t(l'[s]).
#include "mycel/kernels/cpu/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double lse(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// One batch item's view: its log-probabilities lp(t, c), label sequence and lengths.
struct Item {
  const void* lp;  // (T, N, C) base
  DType dtype;
  int64_t n, batch, classes, input_len, target_len, blank;
  std::vector<int64_t> ext;  // l'
  double at(int64_t t, int64_t c) const {
    const int64_t i = (t * batch + n) * classes + c;
    return dtype == DType::float64 ? static_cast<const double*>(lp)[i]
                                   : double(static_cast<const float*>(lp)[i]);
  }
  // Whether a path may skip from l'[s-2] to l'[s] (a label different from the one before).
  bool skip(int64_t s) const { return s >= 2 && ext[s] != blank && ext[s] != ext[s - 2]; }
};

int64_t int_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::int64 ? t.data<int64_t>()[i] : int64_t(t.data<int32_t>()[i]);
}

// Reads and checks item n's lengths and labels (errors name the input and the item); ctc_loss's
// inputs start at input `first` (ctc_loss_grad has dout before them).
Item make_item(const KernelContext& c, int64_t n, size_t first) {
  const Tensor &lp = c.in(first), &tg = c.in(first + 1);
  const int64_t T = lp.shape()[0], N = lp.shape()[1], C = lp.shape()[2], S = tg.shape()[1];
  const int64_t blank = c.attrs.get_int("blank");
  Item it{lp.data(), lp.dtype(), n, N, C, int_at(c.in(first + 2), n), int_at(c.in(first + 3), n),
          blank,     {}};
  const std::string& op = c.op.name;
  if (it.input_len < 0 || it.input_len > T)
    MYCEL_THROW(ValueError, "[", op, "] input_lengths[", n, "] = ", it.input_len,
                " must be in [0, T] with T = log_probs.shape[0] = ", T);
  if (it.target_len < 0 || it.target_len > S)
    MYCEL_THROW(ValueError, "[", op, "] target_lengths[", n, "] = ", it.target_len,
                " must be in [0, S] with S = targets.shape[1] = ", S);
  it.ext.assign(2 * it.target_len + 1, blank);
  for (int64_t k = 0; k < it.target_len; ++k) {
    const int64_t v = int_at(tg, n * S + k);
    if (v < 0 || v >= C || v == blank)
      MYCEL_THROW(ValueError, "[", op, "] targets[", n, ", ", k, "] = ", v,
                  " must be a class in [0, ", C, ") other than blank (", blank, ")");
    it.ext[2 * k + 1] = v;
  }
  return it;
}

// alpha (input_len x |l'|, row-major) and the negative log likelihood.
double forward(const Item& it, std::vector<double>& alpha) {
  const int64_t L = static_cast<int64_t>(it.ext.size()), T = it.input_len;
  alpha.assign(T * L, kNegInf);
  if (T == 0) return it.target_len == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  alpha[0] = it.at(0, it.blank);
  if (L > 1) alpha[1] = it.at(0, it.ext[1]);
  for (int64_t t = 1; t < T; ++t)
    for (int64_t s = 0; s < L; ++s) {
      const double* prev = &alpha[(t - 1) * L];
      double a = prev[s];
      if (s >= 1) a = lse(a, prev[s - 1]);
      if (it.skip(s)) a = lse(a, prev[s - 2]);
      alpha[t * L + s] = a == kNegInf ? kNegInf : a + it.at(t, it.ext[s]);
    }
  const double* last = &alpha[(T - 1) * L];
  return -(L > 1 ? lse(last[L - 1], last[L - 2]) : last[L - 1]);
}

// beta, the mirror image of forward().
void backward(const Item& it, std::vector<double>& beta) {
  const int64_t L = static_cast<int64_t>(it.ext.size()), T = it.input_len;
  beta.assign(T * L, kNegInf);
  if (T == 0) return;
  beta[(T - 1) * L + L - 1] = it.at(T - 1, it.blank);
  if (L > 1) beta[(T - 1) * L + L - 2] = it.at(T - 1, it.ext[L - 2]);
  for (int64_t t = T - 2; t >= 0; --t)
    for (int64_t s = 0; s < L; ++s) {
      const double* next = &beta[(t + 1) * L];
      double b = next[s];
      if (s + 1 < L) b = lse(b, next[s + 1]);
      if (s + 2 < L && it.skip(s + 2)) b = lse(b, next[s + 2]);
      beta[t * L + s] = b == kNegInf ? kNegInf : b + it.at(t, it.ext[s]);
    }
}

template <class T>
void store(Tensor& t, int64_t i, double v) {
  t.data<T>()[i] = static_cast<T>(v);
}

void put(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::float64)
    store<double>(t, i, v);
  else
    store<float>(t, i, v);
}

// The per-item factor of the reduction: d loss / d nll_n for loss from the per-item nll.
double reduction_scale(const std::string& r, int64_t target_len, int64_t batch) {
  if (r == "mean") return 1.0 / double(std::max<int64_t>(target_len, 1)) / double(batch);
  return 1.0;
}

}  // namespace

void ctc_loss_kernel(const KernelContext& c) {
  const Tensor& lp = c.in(0);
  const int64_t T = lp.shape()[0], N = lp.shape()[1];
  const int64_t L = 2 * c.in(1).shape()[1] + 1;
  const bool zero_inf = c.attrs.get_bool("zero_infinity");
  const std::string& red = c.attrs.get_str("reduction");
  Tensor& log_alpha = c.out(1);
  std::vector<Item> items;
  for (int64_t n = 0; n < N; ++n) items.push_back(make_item(c, n, 0));  // all checks before writing
  std::vector<double> nll(N);
  parallel_for(N, T * L * 8, [&](int64_t b, int64_t e) {
    std::vector<double> alpha;
    for (int64_t n = b; n < e; ++n) {
      const Item& it = items[n];
      const int64_t l = static_cast<int64_t>(it.ext.size());
      double v = forward(it, alpha);
      if (zero_inf && std::isinf(v)) v = 0;
      nll[n] = v;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < L; ++s)
          put(log_alpha, (n * T + t) * L + s,
              t < it.input_len && s < l ? alpha[t * l + s] : kNegInf);
    }
  });
  if (red == "none") {
    for (int64_t n = 0; n < N; ++n) put(c.out(0), n, nll[n]);
    return;
  }
  double sum = 0;
  for (int64_t n = 0; n < N; ++n) sum += nll[n] * reduction_scale(red, items[n].target_len, N);
  put(c.out(0), 0, sum);
}

void ctc_loss_grad_kernel(const KernelContext& c) {
  const Tensor& dout = c.in(0);
  const Tensor& lp = c.in(1);
  const int64_t T = lp.shape()[0], N = lp.shape()[1], C = lp.shape()[2];
  const bool zero_inf = c.attrs.get_bool("zero_infinity");
  const std::string& red = c.attrs.get_str("reduction");
  Tensor& dx = c.out(0);
  std::vector<Item> items;
  for (int64_t n = 0; n < N; ++n) items.push_back(make_item(c, n, 1));
  auto dout_at = [&](int64_t n) {
    const int64_t i = red == "none" ? n : 0;
    return dout.dtype() == DType::float64 ? dout.data<double>()[i] : double(dout.data<float>()[i]);
  };
  parallel_for(N, T * C * 16, [&](int64_t b, int64_t e) {
    std::vector<double> alpha, beta, acc(C);
    for (int64_t n = b; n < e; ++n) {
      const Item& it = items[n];
      const int64_t l = static_cast<int64_t>(it.ext.size());
      const double nll = forward(it, alpha);
      const double scale = dout_at(n) * reduction_scale(red, it.target_len, N);
      const bool inf = std::isinf(nll);
      if (!inf) backward(it, beta);
      for (int64_t t = 0; t < T; ++t) {
        // d nll / d lp[t, c] = -sum_{s: l'[s] = c} alpha beta / (y_t(c) p), in log space.
        std::fill(acc.begin(), acc.end(), kNegInf);
        if (!inf && t < it.input_len)
          for (int64_t s = 0; s < l; ++s)
            acc[it.ext[s]] = lse(acc[it.ext[s]], alpha[t * l + s] + beta[t * l + s]);
        for (int64_t k = 0; k < C; ++k) {
          double g = 0;
          if (inf)
            g = zero_inf || t >= it.input_len ? 0.0 : std::numeric_limits<double>::quiet_NaN();
          else if (acc[k] != kNegInf)
            g = -std::exp(acc[k] - it.at(t, k) + nll) * scale;
          put(dx, (t * N + n) * C + k, g);
        }
      }
    }
  });
}

}  // namespace mycel::cpu
