// The keyword spellings an op accepts, for "did you mean" in errors about unknown keywords
// (kept out of registry.h, which every op and kernel file includes).
#pragma once
#include <string>
#include <vector>

#include "mycel/ops/registry.h"

namespace mycel {

/// Attribute names and their aliases, in schema order.
std::vector<std::string> attr_names(const OpDef& op);
/// Input names, then attr_names(op).
std::vector<std::string> keyword_names(const OpDef& op);

}  // namespace mycel
