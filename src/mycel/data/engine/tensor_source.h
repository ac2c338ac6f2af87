// A Source over in-memory column tensors (NumpySlicesDataset).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mycel/data/source.h"

namespace mycel::data::engine {

/// Row i = slice i of every column (views sharing the column tensors); all columns need equal
/// first dimensions.
std::shared_ptr<Source> tensor_source(std::vector<Tensor> columns, std::vector<std::string> names);

}  // namespace mycel::data::engine
