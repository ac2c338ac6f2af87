#include "mycel/core/cpu_features.h"

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

}  // namespace

bool cpu_has_avx512() {
  static const bool has = detect_avx512() && isa_cap_allows_avx512();
  return has;
}

}  // namespace mycel
