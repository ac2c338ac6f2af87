// The global average pooling of a channel-blocked activation (n, c / block, hw, block) into
// (n, c), one loop for every element type: load widens an element to float, store narrows the
// mean back. Each output sums its positions in order, in 64 independent accumulators per pass.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mycel::cpu {

// A block width known when compiling (8 on AVX2, 16 on AVX-512): the lanes' loop becomes one
// vector add, and four channel blocks go through the positions together, four independent
// chains of adds instead of one (MobileNetV2's 7x7x1280 pooling was bound by the latency of a
// single chain). Each channel still sums its positions in order: the result is unchanged.
template <int64_t kBlock, class T, class Load, class Store>
void mean_hw_fixed(const T* x, T* y, int64_t n, int64_t c, int64_t hw, Load load, Store store) {
  const int64_t cb = (c + kBlock - 1) / kBlock;
  constexpr int64_t kWays = 4;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b0 = 0; b0 < cb; b0 += kWays) {
      const int64_t ways = std::min(kWays, cb - b0);
      float acc[kWays][kBlock] = {};
      const T* xb = x + (i * cb + b0) * hw * kBlock;
      if (ways == kWays) {
        for (int64_t p = 0; p < hw; ++p)
          for (int64_t j = 0; j < kWays; ++j)
            for (int64_t l = 0; l < kBlock; ++l) acc[j][l] += load(xb[(j * hw + p) * kBlock + l]);
      } else {
        for (int64_t j = 0; j < ways; ++j)
          for (int64_t p = 0; p < hw; ++p)
            for (int64_t l = 0; l < kBlock; ++l) acc[j][l] += load(xb[(j * hw + p) * kBlock + l]);
      }
      for (int64_t j = 0; j < ways; ++j)
        for (int64_t l = 0; l < kBlock; ++l) {
          const int64_t ch = (b0 + j) * kBlock + l;
          if (ch < c) y[i * c + ch] = store(acc[j][l] / static_cast<float>(hw));
        }
    }
}

template <class T, class Load, class Store>
void mean_hw_blocked_of(const T* x, T* y, int64_t n, int64_t c, int64_t hw, int64_t block,
                        Load load, Store store) {
  if (block == 8) return mean_hw_fixed<8>(x, y, n, c, hw, load, store);
  if (block == 16) return mean_hw_fixed<16>(x, y, n, c, hw, load, store);
  const int64_t cb = (c + block - 1) / block;
  constexpr int64_t kLanes = 64;  // accumulators per pass over the positions
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < cb; ++b) {
      const T* xb = x + (i * cb + b) * hw * block;
      for (int64_t l0 = 0; l0 < block; l0 += kLanes) {
        const int64_t lanes = std::min(kLanes, block - l0);
        float acc[kLanes] = {};
        for (int64_t p = 0; p < hw; ++p) {
          const T* xp = xb + p * block + l0;
          for (int64_t l = 0; l < lanes; ++l) acc[l] += load(xp[l]);
        }
        for (int64_t l = 0; l < lanes; ++l) {
          const int64_t ch = b * block + l0 + l;
          if (ch < c) y[i * c + ch] = store(acc[l] / static_cast<float>(hw));
        }
      }
    }
}

}  // namespace mycel::cpu
