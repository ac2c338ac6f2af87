// The global average pooling of a channel-blocked activation (n, c / block, hw, block) into
// (n, c), one loop for every element type: load widens an element to float, store narrows the
// mean back. Each output sums its positions in order, in 64 independent accumulators per pass.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mycel::cpu {

template <class T, class Load, class Store>
void mean_hw_blocked_of(const T* x, T* y, int64_t n, int64_t c, int64_t hw, int64_t block,
                        Load load, Store store) {
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
