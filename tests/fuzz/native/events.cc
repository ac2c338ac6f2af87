// libFuzzer target: insight::read_event_file (TFRecord framing, then each Event's summary values:
// scalars, histograms, images, tensors) and decode_graph_def on every graph event, the reader
// behind the dashboard (python/mycel/insight/logdir.py). Bit 0 of the variant byte re-checksums
// every record whose length fits, as tests/fuzz/targets.py does, so mutants reach the protobuf
// decoding behind the CRC checks.
#include <cstring>

#include "fuzz_common.h"
#include "mycel/insight/crc32c.h"
#include "mycel/insight/insight.h"

namespace {

void fix_crcs(std::string& b) {
  size_t pos = 0;
  while (b.size() - pos >= 16) {
    uint64_t n;
    std::memcpy(&n, b.data() + pos, 8);
    if (n > b.size() - pos - 16) return;
    uint32_t c = mycel::insight::detail::masked_crc32c(b.data() + pos, 8);
    std::memcpy(b.data() + pos + 8, &c, 4);
    c = mycel::insight::detail::masked_crc32c(b.data() + pos + 12, n);
    std::memcpy(b.data() + pos + 12 + n, &c, 4);
    pos += 16 + n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  fuzz::Input in = fuzz::split(data, size);
  if (in.flags & 1) fix_crcs(in.body);
  std::string path = fuzz::write_file("events.out.tfevents", in.body);
  fuzz::check<ValueError>([&] {
    for (const insight::ReadEvent& e : insight::read_event_file(path))
      if (!e.graph_def.empty()) insight::decode_graph_def(e.graph_def);
  });
  return 0;
}
