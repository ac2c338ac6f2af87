// Per-element uniform draws for the sampled distributions: element i reads block i of a Philox
// stream, then that block's sub-streams (rejection sampling), so a sample depends on its index
// and the seeds only, never on the thread count.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>

#include "mycel/core/random.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Uniform draws for element i: four per Philox block, further blocks from its sub-streams.
class Draws {
 public:
  Draws(const PhiloxStream& s, uint64_t i) : s_(s), i_(i) {}
  /// Uniform in the open interval (0, 1) (never 0 or 1: logs stay finite).
  double open() { return (double(next()) + 0.5) * 0x1.0p-32; }
  /// A standard normal (Box-Muller from two draws).
  double normal() {
    const double r = std::sqrt(-2.0 * std::log(open()));
    return r * std::cos(6.283185307179586 * open());
  }

 private:
  uint32_t next() {
    if (k_ == 4) {
      w_ = s_.block(i_, sub_++);
      k_ = 0;
    }
    return w_[k_++];
  }
  PhiloxStream s_;
  uint64_t i_;
  uint32_t sub_ = 0;
  int k_ = 4;
  std::array<uint32_t, 4> w_{};
};

/// The stream of n elements under the op's seed and seed2 attributes.
inline PhiloxStream draw_stream(const KernelContext& ctx, int64_t n) {
  return op_stream(ctx.attrs.get_int("seed"), ctx.attrs.get_int("seed2"), uint64_t(n));
}

}  // namespace mycel::cpu
