// Helpers private to the shape, index and creation op families.
#pragma once
#include <string>
#include <vector>

#include "mycel/ops/infer_util.h"

namespace mycel::detail {

using ::mycel::attr;
using ::mycel::make_op;
/// An attribute that may be absent (None): Attrs::has(name) is false then.
inline AttrDef optional_attr(std::string name, AttrKind kind,
                             std::vector<std::string> aliases = {}) {
  return AttrDef{std::move(name), kind, {}, true, std::move(aliases)};
}

/// "(1, 2, 3)" for an int list in messages.
inline std::string ints_str(const std::vector<int64_t>& v) { return shape_str(v); }

/// Throws ValueError unless every entry of a shape attribute is >= 0.
inline void check_dims(const std::vector<int64_t>& shape, const std::string& op, const char* arg) {
  for (int64_t d : shape)
    if (d < 0)
      MYCEL_THROW(ValueError, "[", op, "] ", arg, " ", shape_str(shape),
                  " has a negative dimension ", d);
}

/// Throws ValueError if a result shape's element count overflows (or exceeds 2**48 elements).
inline void check_size(const Shape& shape, const std::string& op) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 48))
      MYCEL_THROW(ValueError, "[", op, "] result shape ", shape_str(shape),
                  d < 0 ? " has a negative dimension" : " has too many elements");
}

using Ints = std::vector<int64_t>;

}  // namespace mycel::detail
