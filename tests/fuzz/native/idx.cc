// libFuzzer target: MnistDataset's IDX parsing. Bit 1 of the variant byte says whether the bytes
// are the labels file (beside a valid images file) or the images file (beside valid labels).
#include <cstdint>
#include <string>

#include "datasets.h"

namespace {

std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  static const std::string dir = fuzz::folder("mnist");
  // A valid pair of two 28 x 28 images and their labels (values as MNIST's: bytes, labels < 10).
  static const std::string images = [] {
    std::string s = be32(0x803) + be32(2) + be32(28) + be32(28);
    for (int i = 0; i < 2 * 28 * 28; ++i) s += char(i * 37);
    return s;
  }();
  static const std::string labels = be32(0x801) + be32(2) + std::string("\x03\x07", 2);
  fuzz::Input in = fuzz::split(data, size);
  const bool is_labels = in.flags & 2;
  fuzz::write_file("mnist/train-images-idx3-ubyte", is_labels ? images : in.body);
  fuzz::write_file("mnist/train-labels-idx1-ubyte", is_labels ? in.body : labels);
  fuzz::read_source("MnistDataset", dir);
  return 0;
}
