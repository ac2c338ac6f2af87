// libFuzzer target: io::load_ckpt on fuzzed ".ckpt" files. Bit 0 of the variant byte recomputes
// the trailing CRC-32, so mutants also reach the header and data checks behind it.
#include <zlib.h>

#include <cstring>

#include "fuzz_common.h"
#include "mycel/io/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  fuzz::Input in = fuzz::split(data, size);
  if ((in.flags & 1) && in.body.size() >= 4) {
    const size_t n = in.body.size() - 4;
    uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(in.body.data()), static_cast<uInt>(n)));
    std::memcpy(in.body.data() + n, &crc, 4);  // little-endian, as the format stores it
  }
  std::string path = fuzz::write_file("f.ckpt", in.body);
  fuzz::check<ValueError>([&] { io::load_ckpt(path); });
  return 0;
}
