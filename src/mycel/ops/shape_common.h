// Helpers private to the shape, index and creation op families.
#pragma once
#include <string>
#include <vector>

#include "mycel/ops/infer_util.h"

namespace mycel::detail {

/// An OpDef from its parts (the families register many ops with the same layout).
inline OpDef make_op(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
                     std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel,
                     std::vector<DType> dtypes, std::string grad = "todo") {
  OpDef d;
  d.name = std::move(name);
  d.class_name = std::move(cls);
  d.doc = std::move(doc);
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.infer = std::move(infer);
  d.kernel = std::move(kernel);
  d.dtypes = std::move(dtypes);
  d.grad = std::move(grad);
  return d;
}

/// A required or defaulted attribute (default monostate: required).
inline AttrDef attr(std::string name, AttrKind kind, AttrValue def = {},
                    std::vector<std::string> aliases = {}) {
  return AttrDef{std::move(name), kind, std::move(def), false, std::move(aliases)};
}
/// An attribute that may be absent (None): Attrs::has(name) is false then.
inline AttrDef optional_attr(std::string name, AttrKind kind, std::vector<std::string> aliases = {}) {
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
