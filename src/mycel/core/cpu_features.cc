#include "mycel/core/cpu_features.h"

#include <cpuid.h>

#include <cctype>
#include <cstdlib>
#include <string>

namespace mycel {
namespace {

// MYCEL_MAX_CPU_ISA: "avx2" (or anything below AVX-512) caps our kernels at AVX2; unset or
// "avx512"/"all" leaves the choice to the CPU.
bool isa_cap_allows_avx512() {
  const char* v = std::getenv("MYCEL_MAX_CPU_ISA");
  if (!v || !*v) return true;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s.rfind("avx512", 0) == 0 || s == "all" || s.rfind("amx", 0) == 0;
}

bool detect_avx512() {
#if MYCEL_AVX512_KERNELS
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

// Zen 5 (family 0x1a) has full-width AVX-512 units: not counted.
bool detect_zen4() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d) || a < 7) return false;
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned family = ((a >> 8) & 0xf) + (((a >> 8) & 0xf) == 0xf ? (a >> 20) & 0xff : 0);
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx512f = (b >> 16) & 1;
  return family == 0x19 && avx512f;
}

}  // namespace

bool cpu_is_zen4() {
  static const bool zen4 = detect_zen4();
  return zen4;
}

bool cpu_prefers_direct_conv() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_CONV_DIRECT");
    return cpu_has_avx512() && (!v || !*v || std::string(v) != "0");
  }();
  return on;
}

bool cpu_has_avx512() {
  static const bool has = detect_avx512() && isa_cap_allows_avx512();
  return has;
}

bool cpu_has_avx512_bf16() {
  static const bool has = [] {
#if MYCEL_AVX512_KERNELS
    __builtin_cpu_init();
    return cpu_has_avx512() && __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
  }();
  return has;
}

}  // namespace mycel
