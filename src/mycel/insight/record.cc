// TFRecord framing of event files (the format of tensorboard/summary/writer/record_writer.py).
#include <cstring>

#include "mycel/insight/crc32c.h"
#include "mycel/insight/detail.h"

namespace mycel::insight::detail {

namespace {
void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
}  // namespace

void frame_record(const std::string& data, std::string& out) {
  const size_t start = out.size();
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(out.data() + start, 8), 4);
  out += data;
  put_le(out, masked_crc32c(data.data(), data.size()), 4);
}

}  // namespace mycel::insight::detail
