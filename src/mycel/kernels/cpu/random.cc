#include "mycel/kernels/cpu/random.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "mycel/core/parallel.h"
#include "mycel/core/random.h"

namespace mycel::cpu {
namespace {

using Words = std::array<uint32_t, 4>;
constexpr double k2Pow32 = 4294967296.0;

// Uniform in [0, 1) with as many bits as T's mantissa holds, so rounding never reaches 1.
template <class T>
float unit_float(uint32_t x) {
  if constexpr (std::is_same_v<T, Half>)
    return float(x >> 21) * 0x1.0p-11f;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return float(x >> 24) * 0x1.0p-8f;
  else
    return float(x >> 8) * 0x1.0p-24f;
}
inline double unit_double(uint32_t lo, uint32_t hi) {
  return double(((uint64_t(hi) << 32) | lo) >> 11) * 0x1.0p-53;
}

// Element group j (K elements) reads block j only: results are the same for any thread count.
template <int K, class Fn>
void fill_blocks(int64_t n, const PhiloxStream& s, int64_t cost, Fn fn) {
  const int64_t nb = (n + K - 1) / K;
  parallel_for(nb, K * cost, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t i0 = j * K;
      fn(i0, std::min<int64_t>(K, n - i0), j, s.block(uint64_t(j)));
    }
  });
}

PhiloxStream stream_for(const KernelContext& ctx, int64_t n, int k) {
  return op_stream(ctx.attrs.get_int("seed"), ctx.attrs.get_int("seed2"),
                   uint64_t((n + k - 1) / k));
}

}  // namespace

void uniform_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const double lo = ctx.attrs.get_float("minval"), hi = ctx.attrs.get_float("maxval");
  const int64_t n = out.numel();
  visit_float_dtype(out.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    if constexpr (std::is_same_v<T, double>) {
      const double below = std::nextafter(hi, lo);
      auto group = [&](int64_t i0, int64_t cnt, int64_t, const Words& w) {
        for (int64_t k = 0; k < cnt; ++k)
          o[i0 + k] = std::min(lo + unit_double(w[2 * k], w[2 * k + 1]) * (hi - lo), below);
      };
      fill_blocks<2>(n, stream_for(ctx, n, 2), 4, group);
    } else {
      const float fhi = float(hi), below = std::nextafter(fhi, float(lo));
      auto group = [&](int64_t i0, int64_t cnt, int64_t, const Words& w) {
        for (int64_t k = 0; k < cnt; ++k) {
          float v = float(lo + double(unit_float<T>(w[k])) * (hi - lo));
          if constexpr (std::is_same_v<T, float>) v = std::min(v, below);
          o[i0 + k] = T(v);
        }
      };
      fill_blocks<4>(n, stream_for(ctx, n, 4), 2, group);
    }
  });
}

void normal_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const double mean = ctx.attrs.get_float("mean"), stddev = ctx.attrs.get_float("stddev");
  const int64_t n = out.numel();
  visit_float_dtype(out.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    if constexpr (std::is_same_v<T, double>) {
      // One block: two 53-bit uniforms -> one Box-Muller pair.
      auto group = [&](int64_t i0, int64_t cnt, int64_t, const Words& w) {
        const double u1 = 1.0 - unit_double(w[0], w[1]);  // (0, 1]: log is finite
        const double th = 2.0 * std::numbers::pi * unit_double(w[2], w[3]);
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double z[2] = {r * std::cos(th), r * std::sin(th)};
        for (int64_t k = 0; k < cnt; ++k) o[i0 + k] = mean + stddev * z[k];
      };
      fill_blocks<2>(n, stream_for(ctx, n, 2), 40, group);
    } else {
      // One block: four 24-bit uniforms -> two Box-Muller pairs.
      const float m = float(mean), sd = float(stddev);
      auto group = [&](int64_t i0, int64_t cnt, int64_t, const Words& w) {
        float z[4];
        for (int p = 0; p < 2; ++p) {
          const float u1 = 1.0f - float(w[2 * p] >> 8) * 0x1.0p-24f;
          const float th =
              2.0f * std::numbers::pi_v<float> * (float(w[2 * p + 1] >> 8) * 0x1.0p-24f);
          const float r = std::sqrt(-2.0f * std::log(u1));
          z[2 * p] = r * std::cos(th);
          z[2 * p + 1] = r * std::sin(th);
        }
        for (int64_t k = 0; k < cnt; ++k) o[i0 + k] = T(m + sd * z[k]);
      };
      fill_blocks<4>(n, stream_for(ctx, n, 4), 20, group);
    }
  });
}

void randint_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const int64_t low = ctx.attrs.get_int("low"), high = ctx.attrs.get_int("high");
  const uint64_t range = uint64_t(high) - uint64_t(low);  // infer checks high > low
  const uint64_t threshold = (0 - range) % range;         // x >= threshold: x % range is unbiased
  const int64_t n = out.numel();
  PhiloxStream s = stream_for(ctx, n, 2);
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    // Two 64-bit candidates per block; a rejected one retries in the same block's sub-stream.
    auto group = [&](int64_t i0, int64_t cnt, int64_t j, Words w) {
      for (int64_t k = 0; k < cnt; ++k) {
        uint64_t x = (uint64_t(w[2 * k + 1]) << 32) | w[2 * k];
        for (uint32_t sub = 1; x < threshold; ++sub) {
          Words r = s.block(uint64_t(j), sub);
          x = (uint64_t(r[2 * k + 1]) << 32) | r[2 * k];
        }
        o[i0 + k] = static_cast<T>(static_cast<int64_t>(uint64_t(low) + x % range));
      }
    };
    fill_blocks<2>(n, s, 8, group);
  });
}

void bernoulli_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const double thr = ctx.attrs.get_float("p") * k2Pow32;  // P(word < thr) = p
  const int64_t n = out.numel();
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = out.data<T>();
    auto group = [&](int64_t i0, int64_t cnt, int64_t, const Words& w) {
      for (int64_t k = 0; k < cnt; ++k) o[i0 + k] = T(C(double(w[k]) < thr ? 1 : 0));
    };
    fill_blocks<4>(n, stream_for(ctx, n, 4), 1, group);
  });
}

void dropout_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const double keep = ctx.attrs.get_float("keep_prob");
  const double thr = keep * k2Pow32;
  const int64_t n = x.numel();
  visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* a = x.data<T>();
    T* y = ctx.out(0).data<T>();
    T* mask = ctx.out(1).data<T>();
    const C kp = C(keep);
    auto group = [&](int64_t i0, int64_t cnt, int64_t, const Words& w) {
      for (int64_t k = 0; k < cnt; ++k) {
        const C m = double(w[k]) < thr ? C(1) : C(0);
        mask[i0 + k] = T(m);
        y[i0 + k] = T(C(a[i0 + k]) * m / kp);
      }
    };
    fill_blocks<4>(n, stream_for(ctx, n, 4), 2, group);
  });
}

}  // namespace mycel::cpu
