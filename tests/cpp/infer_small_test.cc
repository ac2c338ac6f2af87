// infer_small.h's kernels against plain reference loops: dense over a few rows (every block
// count, ragged output counts, each activation), 2x2 max pooling and unblocking of blocked
// tensors (8 and 16 channels per block, padding channels, odd sizes).
#include "mycel/kernels/cpu/infer_small.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace mycel::cpu {
namespace {

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(InferSmall, DenseRowsMatchesReference) {
  std::mt19937 rng(3);
  for (int64_t n : {1, 7, 8, 10, 63, 64, 65, 120, 130})
    for (int64_t m : {1, 2, 4})
      for (SmallAct act : {SmallAct::kNone, SmallAct::kRelu, SmallAct::kRelu6}) {
        const int64_t k = 37;
        Tensor w = Tensor::empty({n, k}, DType::float32);
        std::vector<float> wv = random_floats(n * k, rng), x = random_floats(m * k, rng),
                           b = random_floats(n, rng);
        std::copy(wv.begin(), wv.end(), w.data<float>());
        Tensor packed = pack_dense_rows(w);
        std::vector<float> y(m * n);
        dense_rows(x.data(), packed.data<float>(), b.data(), y.data(), m, k, n, act);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t o = 0; o < n; ++o) {
            double want = b[o];
            for (int64_t j = 0; j < k; ++j) want += double(x[r * k + j]) * wv[o * k + j];
            if (act != SmallAct::kNone) want = std::max(want, 0.0);
            if (act == SmallAct::kRelu6) want = std::min(want, 6.0);
            EXPECT_NEAR(y[r * n + o], want, 1e-4 * (1 + std::abs(want)))
                << n << " " << r << " " << o;
          }
      }
}

TEST(InferSmall, PoolAndUnblockMatchReference) {
  std::mt19937 rng(4);
  for (int64_t block : {8, 16})
    for (int64_t c : {3, 8, 13}) {
      const int64_t n = 2, h = 7, w = 6, oh = h / 2, ow = w / 2, cb = (c + block - 1) / block;
      std::vector<float> x = random_floats(n * cb * h * w * block, rng);
      for (int64_t i = 0; i < n; ++i)  // padding channels are zero, as oneDNN keeps them
        for (int64_t p = 0; p < h * w; ++p)
          for (int64_t ch = c; ch < cb * block; ++ch)
            x[((i * cb + ch / block) * h * w + p) * block + ch % block] = 0;
      std::vector<float> y(n * cb * oh * ow * block), plain(n * c * oh * ow);
      max_pool2x2_blocked(x.data(), y.data(), n, cb, h, w, oh, ow, block);
      unblock_to_nchw(y.data(), plain.data(), n, c, oh * ow, block);
      auto at = [&](int64_t i, int64_t ch, int64_t r, int64_t col) {
        return x[((i * cb + ch / block) * h * w + r * w + col) * block + ch % block];
      };
      for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < cb * block; ++ch)
          for (int64_t r = 0; r < oh; ++r)
            for (int64_t col = 0; col < ow; ++col) {
              const float want =
                  std::max({at(i, ch, 2 * r, 2 * col), at(i, ch, 2 * r, 2 * col + 1),
                            at(i, ch, 2 * r + 1, 2 * col), at(i, ch, 2 * r + 1, 2 * col + 1)});
              EXPECT_EQ(y[((i * cb + ch / block) * oh * ow + r * ow + col) * block + ch % block],
                        want);
              if (ch < c) {
                EXPECT_EQ(plain[((i * c + ch) * oh + r) * ow + col], want);
              }
            }
    }
}

}  // namespace
}  // namespace mycel::cpu
