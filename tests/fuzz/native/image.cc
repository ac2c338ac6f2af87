// libFuzzer target: the Decode transform (JPEG through TurboJPEG, PNG through libpng) on fuzzed
// file bytes, as a dataset map calls it.
#include <cstring>

#include "fuzz_common.h"
#include "mycel/data/transform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  static const std::shared_ptr<data::Transform> decode =
      data::make_transform("Decode", data::Params("Decode", {}), {});
  fuzz::Input in = fuzz::split(data, size);
  Tensor bytes = Tensor::empty({static_cast<int64_t>(in.body.size())}, DType::uint8);
  if (!in.body.empty()) std::memcpy(bytes.data(), in.body.data(), in.body.size());
  data::RowRng rng(0, 0, 0);
  fuzz::check<ValueError, RuntimeError>([&] { decode->apply({bytes}, rng); });
  return 0;
}
