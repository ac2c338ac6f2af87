// bf16 inference in the lite runtime: the model's float32 weights and activations stored and
// computed in bfloat16 (oneDNN's bf16 convolutions and matmuls accumulate in float32), where the
// CPU runs bf16 natively (AVX-512 BF16, AMX). Elsewhere the session stays float32 and says why.
#pragma once
#include <string>

#include "mycel/lite/model_file.h"

namespace mycel::lite {

enum class Precision { kFloat32, kBFloat16 };

/// Whether oneDNN runs bf16 convolutions and matmuls natively on this CPU (probed once by asking
/// it for both primitives). When not, `why` (if given) names the library, its version and the CPU
/// ISA it found.
bool native_bf16(std::string* why = nullptr);

/// Rewrites g to compute in bf16: float32 weights converted, float32 values retyped, a cast to
/// bf16 after each float32 model input and back to float32 before each model output (the
/// model's interface stays float32). Returns "" when done, else why the graph cannot be (g is
/// then unchanged): an op without a bf16 kernel, an int8 model.
std::string to_bf16(Graph& g);

}  // namespace mycel::lite
