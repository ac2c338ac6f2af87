// libFuzzer target: the MindRecord reader (open-time validation of one shard, then up to 64 rows)
// on fuzzed shard files. Bit 0 of the variant byte re-checksums the header, pages, index and
// footer wherever the fuzzed offsets lie inside the file (layout: data/mindrecord/format.h), as
// tests/fuzz/targets.py does for the Python target.
#include <algorithm>
#include <cstring>

#include "fuzz_common.h"
#include "mycel/core/crc32c.h"
#include "mycel/data/mindrecord/reader.h"

namespace {

uint64_t u64_at(const std::string& b, uint64_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
uint32_t u32_at(const std::string& b, uint64_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
void put_crc(std::string& b, uint64_t at, uint64_t from, uint64_t len) {
  uint32_t crc = mycel::crc32c(b.data() + from, len);
  std::memcpy(b.data() + at, &crc, 4);
}

void fix_crcs(std::string& b) {
  const uint64_t n = b.size();
  if (n < 16 + 64 || n > (1u << 16)) return;
  const uint64_t foot = n - 64;
  const uint64_t data_offset = u64_at(b, foot), num_pages = u64_at(b, foot + 8);
  const uint64_t index_offset = u64_at(b, foot + 16), index_len = u64_at(b, foot + 24);
  const uint64_t header_end = 16 + uint64_t(u32_at(b, 12));
  if (header_end <= foot) put_crc(b, foot + 40, 0, header_end);
  if (header_end >= 36) {
    const uint64_t page_size = u32_at(b, 32);
    uint64_t span, end;
    if (__builtin_mul_overflow(num_pages, page_size, &span) ||
        __builtin_add_overflow(data_offset, span, &end))
      end = UINT64_MAX;
    for (uint64_t p = data_offset; page_size && p <= foot - 16 && p + 16 <= std::min(end, foot);) {
      uint64_t unit, stop;
      if (__builtin_mul_overflow(std::max<uint64_t>(1, u32_at(b, p + 8)), page_size, &unit) ||
          __builtin_add_overflow(p, unit, &stop) || stop > foot)
        break;
      put_crc(b, p + 4, p + 8, unit > 8 ? unit - 8 : 0);  // a fuzzed page size may be tiny
      p = stop;
    }
  }
  uint64_t index_end;
  if (!__builtin_add_overflow(index_offset, index_len, &index_end) && index_end <= foot)
    put_crc(b, foot + 44, index_offset, index_len);
  put_crc(b, foot + 48, foot, 48);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  fuzz::Input in = fuzz::split(data, size);
  if (in.flags & 1) fix_crcs(in.body);
  std::string path = fuzz::write_file("f.mindrecord", in.body);
  fuzz::check<ValueError, RuntimeError>([&] {
    data::mr::Reader reader({path}, true, {});
    for (int64_t i = 0; i < std::min<int64_t>(reader.size(), 64); ++i) reader.get(i);
  });
  return 0;
}
