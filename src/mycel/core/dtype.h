// Element types, numpy-style promotion, and the visitor that turns a runtime DType into a C++ type.
#pragma once
#include <complex>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "mycel/core/error.h"
#include "mycel/core/half.h"

namespace mycel {

/// The element types. The first ten are the core kernels' types, in promotion order within each
/// kind; the wider unsigned and the complex types came later (appended, so that the codes stored in
/// checkpoints and model files keep their meaning) and only the ops that list them take them.
enum class DType : uint8_t {
  bool_,
  int8,
  uint8,
  int16,
  int32,
  int64,
  float16,
  bfloat16,
  float32,
  float64,
  uint16,
  uint32,
  uint64,
  complex64,
  complex128
};
inline constexpr int kNumDTypes = 15;
/// The types every kernel family handles (all_dtypes() in the registry).
inline constexpr int kNumCoreDTypes = 10;

/// Bytes per element.
size_t itemsize(DType t);
/// MindSpore/numpy spelling: "bool", "int8", ..., "float64".
const char* dtype_name(DType t);
/// Parses a dtype name (also accepts numpy aliases such as "float" and "int").
DType dtype_from_name(std::string_view name);
inline bool is_floating(DType t) { return t >= DType::float16 && t <= DType::float64; }
inline bool is_integral(DType t) {
  return (t >= DType::int8 && t <= DType::int64) || (t >= DType::uint16 && t <= DType::uint64);
}
inline bool is_unsigned(DType t) {
  return t == DType::uint8 || (t >= DType::uint16 && t <= DType::uint64);
}
inline bool is_complex(DType t) { return t == DType::complex64 || t == DType::complex128; }
inline bool is_bool(DType t) { return t == DType::bool_; }
/// One of the five types only some ops take (uint16/32/64, complex64/128).
inline bool is_extended(DType t) { return static_cast<int>(t) >= kNumCoreDTypes; }
/// Result type of a binary operation on a and b (numpy's rules; bf16 ranks with f16).
DType promote_types(DType a, DType b);

template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::bool_;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::int8;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::uint8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = DType::int16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::int64;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = DType::float16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::bfloat16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::float64;
};
template <>
struct dtype_of<uint16_t> {
  static constexpr DType value = DType::uint16;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr DType value = DType::uint32;
};
template <>
struct dtype_of<uint64_t> {
  static constexpr DType value = DType::uint64;
};
template <>
struct dtype_of<std::complex<float>> {
  static constexpr DType value = DType::complex64;
};
template <>
struct dtype_of<std::complex<double>> {
  static constexpr DType value = DType::complex128;
};
template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

/// Type in which arithmetic on T is done: float for the 16-bit floats, T otherwise.
template <class T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<Half> {
  using type = float;
};
template <>
struct compute_type<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename compute_type<T>::type;

template <class T>
struct TypeTag {
  using type = T;
};

[[noreturn]] void throw_extended_dtype(DType t);

/// Calls fn(TypeTag<T>{}) with T the C++ type of `t`: dispatch once, then run a typed loop. Core
/// types only: the registry's dtype check keeps the others out of kernels that did not opt in
/// (those dispatch with visit_any_dtype).
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::bool_:
      return fn(TypeTag<bool>{});
    case DType::int8:
      return fn(TypeTag<int8_t>{});
    case DType::uint8:
      return fn(TypeTag<uint8_t>{});
    case DType::int16:
      return fn(TypeTag<int16_t>{});
    case DType::int32:
      return fn(TypeTag<int32_t>{});
    case DType::int64:
      return fn(TypeTag<int64_t>{});
    case DType::float16:
      return fn(TypeTag<Half>{});
    case DType::bfloat16:
      return fn(TypeTag<BFloat16>{});
    case DType::float32:
      return fn(TypeTag<float>{});
    case DType::float64:
      return fn(TypeTag<double>{});
    case DType::uint16:
    case DType::uint32:
    case DType::uint64:
    case DType::complex64:
    case DType::complex128:
      throw_extended_dtype(t);
  }
  MYCEL_THROW(TypeError, "unknown dtype code ", int(t));
}

/// visit_dtype over every type, the unsigned and complex ones included.
template <class Fn>
decltype(auto) visit_any_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::uint16:
      return fn(TypeTag<uint16_t>{});
    case DType::uint32:
      return fn(TypeTag<uint32_t>{});
    case DType::uint64:
      return fn(TypeTag<uint64_t>{});
    case DType::complex64:
      return fn(TypeTag<std::complex<float>>{});
    case DType::complex128:
      return fn(TypeTag<std::complex<double>>{});
    default:
      return visit_dtype(t, std::forward<Fn>(fn));
  }
}

template <class T>
inline constexpr bool is_complex_v = false;
template <class T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

/// Like visit_dtype, restricted to float16/bfloat16/float32/float64.
template <class Fn>
decltype(auto) visit_float_dtype(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::float16:
      return fn(TypeTag<Half>{});
    case DType::bfloat16:
      return fn(TypeTag<BFloat16>{});
    case DType::float32:
      return fn(TypeTag<float>{});
    case DType::float64:
      return fn(TypeTag<double>{});
    default:
      break;
  }
  MYCEL_THROW(TypeError, "[", op, "] expected a floating-point tensor, got ", dtype_name(t));
}

}  // namespace mycel
