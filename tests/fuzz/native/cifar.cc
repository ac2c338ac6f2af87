// libFuzzer target: the CIFAR-10/100 binary batch readers. Bit 1 of the variant byte picks
// CIFAR-100 (train.bin) over CIFAR-10 (data_batch_1.bin).
#include "datasets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mycel;
  static const std::string dir10 = fuzz::folder("cifar10"), dir100 = fuzz::folder("cifar100");
  fuzz::Input in = fuzz::split(data, size);
  if (in.flags & 2) {
    fuzz::write_file("cifar100/train.bin", in.body);
    fuzz::read_source("Cifar100Dataset", dir100);
  } else {
    fuzz::write_file("cifar10/data_batch_1.bin", in.body);
    fuzz::read_source("Cifar10Dataset", dir10);
  }
  return 0;
}
