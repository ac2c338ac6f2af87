// CRC-32C (Castagnoli), shared by MindRecord pages and TensorBoard event records.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mycel {

/// CRC-32C of n bytes, continuing from `crc` (0 to start).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace mycel
