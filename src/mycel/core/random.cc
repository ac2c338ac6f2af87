#include "mycel/core/random.h"

namespace mycel {

namespace {
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = uint64_t(a) * b;
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

// splitmix64 finalizer: mixes (seed, seed2) into an op-level key.
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // bump the key between rounds
      k[0] += kW0;
      k[1] += kW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c[0], hi0, lo0);
    mulhilo(kM1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

Generator& Generator::global() {
  static auto* g = new Generator();
  return *g;
}

void Generator::set_seed(uint64_t seed) { set_state(seed, 0); }

void Generator::set_state(uint64_t seed, uint64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  offset_ = offset;
}

std::array<uint64_t, 2> Generator::state() {
  std::lock_guard<std::mutex> lock(mu_);
  return {seed_, offset_};
}

PhiloxStream Generator::reserve(uint64_t n_blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  PhiloxStream s{seed_, offset_};
  offset_ += n_blocks;
  return s;
}

PhiloxStream op_stream(int64_t seed, int64_t seed2, uint64_t n_blocks) {
  if (seed == 0 && seed2 == 0) return Generator::global().reserve(n_blocks);
  return {mix64(mix64(uint64_t(seed)) ^ uint64_t(seed2)), 0};
}

}  // namespace mycel
