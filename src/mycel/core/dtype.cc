#include "mycel/core/dtype.h"

#include <algorithm>

namespace mycel {

size_t itemsize(DType t) {
  switch (t) {
    case DType::bool_: case DType::int8: case DType::uint8: return 1;
    case DType::int16: case DType::float16: case DType::bfloat16: return 2;
    case DType::int32: case DType::float32: return 4;
    case DType::int64: case DType::float64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  static const char* names[] = {"bool", "int8", "uint8", "int16", "int32",
                                "int64", "float16", "bfloat16", "float32", "float64"};
  return names[static_cast<int>(t)];
}

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  if (name == "bool_") return DType::bool_;
  if (name == "half") return DType::float16;
  if (name == "float" || name == "double") return DType::float64;
  if (name == "int" || name == "long") return DType::int64;
  MYCEL_THROW(TypeError, "unknown dtype '", name, "'; expected one of bool, int8, uint8, int16, int32, ",
              "int64, float16, bfloat16, float32, float64");
}

namespace {
int int_bits(DType t) { return static_cast<int>(itemsize(t)) * 8; }
int float_rank(DType t) {  // f16 and bf16 share a rank: combining them needs float32
  return t == DType::float64 ? 3 : t == DType::float32 ? 2 : 1;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  if (is_integral(a) && is_integral(b)) {
    bool ua = a == DType::uint8, ub = b == DType::uint8;
    if (ua || ub) {  // uint8 with a signed type: need a signed type wider than 8 bits
      DType s = ua ? b : a;
      return s == DType::int8 ? DType::int16 : s;
    }
    return int_bits(a) >= int_bits(b) ? a : b;
  }
  if (is_floating(a) && is_floating(b)) {
    int ra = float_rank(a), rb = float_rank(b);
    if (ra == rb) return DType::float32;  // float16 with bfloat16
    return ra > rb ? a : b;
  }
  // One integer, one float: the float must hold the integer's values (numpy's safe casting).
  DType f = is_floating(a) ? a : b, i = is_floating(a) ? b : a;
  int need = int_bits(i) <= 8 ? 1 : int_bits(i) == 16 ? 2 : 3;
  if (float_rank(f) >= need) return f;
  return need == 2 ? DType::float32 : DType::float64;
}

}  // namespace mycel
