#include "mycel/core/dtype.h"

#include <algorithm>

namespace mycel {

size_t itemsize(DType t) {
  switch (t) {
    case DType::bool_:
    case DType::int8:
    case DType::uint8:
      return 1;
    case DType::int16:
    case DType::uint16:
    case DType::float16:
    case DType::bfloat16:
      return 2;
    case DType::int32:
    case DType::uint32:
    case DType::float32:
      return 4;
    case DType::int64:
    case DType::uint64:
    case DType::float64:
    case DType::complex64:
      return 8;
    case DType::complex128:
      return 16;
  }
  return 0;
}

const char* dtype_name(DType t) {
  static const char* names[] = {"bool",   "int8",    "uint8",    "int16",     "int32",
                                "int64",  "float16", "bfloat16", "float32",   "float64",
                                "uint16", "uint32",  "uint64",   "complex64", "complex128"};
  int i = static_cast<int>(t);
  return i < kNumDTypes ? names[i] : "unknown";
}

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  if (name == "bool_") return DType::bool_;
  if (name == "half") return DType::float16;
  if (name == "float" || name == "double") return DType::float64;
  if (name == "int" || name == "long") return DType::int64;
  if (name == "complex" || name == "cdouble") return DType::complex128;
  if (name == "cfloat" || name == "csingle") return DType::complex64;
  MYCEL_THROW(TypeError, "unknown dtype '", name, "'; expected one of bool, int8, uint8, int16, ",
              "uint16, int32, uint32, int64, uint64, float16, bfloat16, float32, float64, ",
              "complex64, complex128");
}

void throw_extended_dtype(DType t) {
  MYCEL_THROW(TypeError, "dtype ", dtype_name(t), " is not supported by this kernel");
}

namespace {
int int_bits(DType t) { return static_cast<int>(itemsize(t)) * 8; }
int float_rank(DType t) {  // f16 and bf16 share a rank: combining them needs float32
  return t == DType::float64 ? 3 : t == DType::float32 ? 2 : 1;
}
DType signed_of_bits(int bits) {
  return bits <= 8    ? DType::int8
         : bits == 16 ? DType::int16
         : bits == 32 ? DType::int32
                      : DType::int64;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  if (is_complex(a) || is_complex(b)) {
    // complex64 holds what float32 holds; anything needing float64 makes complex128 (numpy).
    DType ra = a == DType::complex64 ? DType::float32 : a == DType::complex128 ? DType::float64 : a;
    DType rb = b == DType::complex64 ? DType::float32 : b == DType::complex128 ? DType::float64 : b;
    return promote_types(promote_types(ra, rb), DType::float32) == DType::float64
               ? DType::complex128
               : DType::complex64;
  }
  if (is_integral(a) && is_integral(b)) {
    bool ua = is_unsigned(a), ub = is_unsigned(b);
    if (ua == ub) return int_bits(a) >= int_bits(b) ? a : b;
    // unsigned with signed: a signed type wider than the unsigned one (uint64: none, float64)
    DType u = ua ? a : b, s = ua ? b : a;
    if (int_bits(s) > int_bits(u)) return s;
    if (int_bits(u) >= 64) return DType::float64;
    return signed_of_bits(int_bits(u) * 2);
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
