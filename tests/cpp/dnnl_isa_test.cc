// onednn_uses_amx: true only on a CPU whose flags list AMX tiles, and then Mycel's own
// AVX512-BF16 matmul kernels stand aside for oneDNN's.
#include "mycel/kernels/cpu/dnnl_isa.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "mycel/kernels/cpu/matmul_bf16_atb.h"
#include "mycel/kernels/cpu/matmul_heads_bf16.h"

namespace mycel::cpu {
namespace {

// The kernel's view of the CPU, independent of oneDNN's: the first "flags" line of /proc/cpuinfo.
bool cpuinfo_has(const std::string& flag) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

TEST(OneDnnIsa, AmxOnlyWhereTheCpuHasTiles) {
  const bool tiles = cpuinfo_has("amx_bf16") && cpuinfo_has("amx_tile");
  if (!tiles) {
    EXPECT_FALSE(onednn_uses_amx());
  } else if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) {
    EXPECT_TRUE(onednn_uses_amx());
  }
}

TEST(OneDnnIsa, OwnBf16MatmulKernelsStandAsideForAmx) {
  if (onednn_uses_amx()) {
    EXPECT_FALSE(matmul_bf16_atb_available());
    EXPECT_FALSE(matmul_heads_bf16_available());
  } else if (cpuinfo_has("avx512_bf16") && std::getenv("MYCEL_MATMUL_BF16_ATB") == nullptr &&
             std::getenv("MYCEL_MAX_CPU_ISA") == nullptr) {
    EXPECT_TRUE(matmul_bf16_atb_available());
  }
}

}  // namespace
}  // namespace mycel::cpu
