// The random generator: counter-based Philox4x32-10 (Salmon et al., SC'11), as in JAX, PyTorch and
// MindSpore. A stream is (key, first counter); block j of a stream is one Philox call and yields
// four 32-bit words. Random ops reserve a range of blocks from the global generator and fill
// their output in parallel with element i depending only on its own block(s), so the result is
// the same for any thread count.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>

namespace mycel {

/// One Philox4x32-10 evaluation: 128-bit counter and 64-bit key to 128 random bits.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

/// A range of Philox blocks: block(j, sub) = philox(counter = {offset + j (64 bits), sub, 0}, key).
/// `sub` gives each block further independent draws (rejection sampling) without moving offsets.
struct PhiloxStream {
  uint64_t key = 0;
  uint64_t offset = 0;
  std::array<uint32_t, 4> block(uint64_t j, uint32_t sub = 0) const {
    uint64_t c = offset + j;
    return philox4x32_10({uint32_t(c), uint32_t(c >> 32), sub, 0},
                         {uint32_t(key), uint32_t(key >> 32)});
  }
};

/// The process-wide generator state (seed, offset in blocks): mycel.set_seed resets both.
class Generator {
 public:
  static Generator& global();
  /// Resets the seed and the offset (the next draw starts at counter 0).
  void set_seed(uint64_t seed);
  /// Restores a state returned by state().
  void set_state(uint64_t seed, uint64_t offset);
  /// (seed, offset).
  std::array<uint64_t, 2> state();
  /// Reserves n blocks: returns the stream starting at the current offset and advances it.
  PhiloxStream reserve(uint64_t n_blocks);

 private:
  std::mutex mu_;
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

/// The stream a random op draws n blocks from. seed == seed2 == 0: the global generator (the
/// offset advances, so each call differs). Otherwise an op-level stream keyed by (seed, seed2)
/// that starts at offset 0 on every call: the same numbers each call, as TF/MindSpore op seeds do.
PhiloxStream op_stream(int64_t seed, int64_t seed2, uint64_t n_blocks);

}  // namespace mycel
