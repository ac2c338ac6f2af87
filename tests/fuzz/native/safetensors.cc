// libFuzzer target: io::load_safetensors on fuzzed files (JSON header, then the data). A valid
// dtype Mycel lacks (F8_E4M3, F8_E5M2) is NotSupported (Python NotImplementedError), as documented.
#include "fuzz_common.h"
#include "mycel/io/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  std::string path = fuzz::write_file("f.safetensors", fuzz::split(data, size).body);
  fuzz::check<ValueError, NotSupported>([&] { io::load_safetensors(path); });
  return 0;
}
