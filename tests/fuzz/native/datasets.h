// Shared by the MNIST and CIFAR targets: builds a registered dataset source over a folder and
// reads up to 64 rows, as a training loop would.
#pragma once
#include <sys/stat.h>
#include <algorithm>

#include "fuzz_common.h"
#include "mycel/data/source.h"

namespace mycel::fuzz {

/// scratch()/name, created once.
inline std::string folder(const std::string& name) {
  std::string dir = scratch() + "/" + name;
  mkdir(dir.c_str(), 0700);
  return dir;
}

inline void read_source(const std::string& source, const std::string& dir) {
  check<ValueError, RuntimeError>([&] {
    auto src = data::make_source(
        source, data::Params(source, {{"dataset_dir", dir}, {"usage", std::string("train")}}));
    for (int64_t i = 0; i < std::min<int64_t>(src->size(), 64); ++i) src->get(i);
  });
}

}  // namespace mycel::fuzz
