// What oneDNN's kernels run on here, for the choice between them and Mycel's own.
#pragma once

namespace mycel::cpu {

/// True when oneDNN's bf16 matmuls and convolutions run on AMX tiles here: its effective ISA
/// (dnnl::get_effective_cpu_isa(), which ONEDNN_MAX_CPU_ISA caps) includes AMX. Mycel's
/// own AVX512-BF16 matmul kernels (matmul_bf16_atb, matmul_heads_bf16) then lose to oneDNN's: on
/// two cores of a Xeon with AMX the transformer's bf16 O2 step took 31.4 ms with them against
/// 17.6 ms on oneDNN's alone, so they stand aside there. Read once per process.
bool onednn_uses_amx();

}  // namespace mycel::cpu
