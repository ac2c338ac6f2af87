// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TFRecord's mask of it (a CRC
// stored next to the data it covers is rotated and offset so a CRC of a CRC stays useful).
#pragma once
#include <cstddef>
#include <cstdint>

namespace mycel::insight::detail {

/// CRC-32C of n bytes (table-driven, one byte at a time: records are small).
uint32_t crc32c(const void* data, size_t n);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace mycel::insight::detail
