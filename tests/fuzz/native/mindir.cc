// libFuzzer target: lite::load (verify and decode a MINDIR model file against the op registry)
// on fuzzed files. Bit 0 of the variant byte re-checksums the graph and weight sections when
// their fuzzed bounds lie inside the file, as tests/fuzz/targets.py does.
#include <cstring>

#include "fuzz_common.h"
#include "mycel/core/crc32c.h"
#include "mycel/lite/model_file.h"

namespace {

void fix_crcs(std::string& b) {
  if (b.size() < 56) return;
  uint64_t f[4];  // graph offset, graph size, data offset, data size
  std::memcpy(f, b.data() + 16, sizeof f);
  uint64_t graph_end, data_end, both;
  if (__builtin_add_overflow(f[0], f[1], &graph_end) || graph_end > b.size() ||
      __builtin_add_overflow(f[2], f[3], &data_end) || data_end > b.size() ||
      __builtin_add_overflow(f[1], f[3], &both) || both > (1u << 16))
    return;
  uint32_t crc[2] = {mycel::crc32c(b.data() + f[0], f[1]), mycel::crc32c(b.data() + f[2], f[3])};
  std::memcpy(b.data() + 48, crc, sizeof crc);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  fuzz::Input in = fuzz::split(data, size);
  if (in.flags & 1) fix_crcs(in.body);
  std::string path = fuzz::write_file("f.mindir", in.body);
  fuzz::check<ValueError>([&] { lite::load(path); });
  return 0;
}
