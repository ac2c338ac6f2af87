// CRC-32C (Castagnoli): the SSE4.2 instruction where the build has it, a byte table otherwise.
#include "mycel/core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace mycel {

#if !defined(__SSE4_2__)
namespace {
// Byte-at-a-time table for the reflected Castagnoli polynomial (used without SSE4.2).
std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
}  // namespace
#endif

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__SSE4_2__)
  // The CPU instruction runs at several GB/s, so checking a page costs far less than reading it.
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  crc = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) crc = _mm_crc32_u8(crc, *p);
#else
  static const std::array<uint32_t, 256> table = make_table();
  for (; n > 0; --n, ++p) crc = table[(crc ^ *p) & 0xFF] ^ (crc >> 8);
#endif
  return ~crc;
}

}  // namespace mycel
