// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TFRecord's mask of it (a CRC
// stored next to the data it covers is rotated and offset so a CRC of a CRC stays useful).
#pragma once
#include "mycel/core/crc32c.h"

namespace mycel::insight::detail {

using mycel::crc32c;  // core/crc32c.h
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace mycel::insight::detail
