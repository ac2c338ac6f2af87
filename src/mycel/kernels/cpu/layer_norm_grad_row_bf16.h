// One row of the bf16 layer norm backward (norm_fast.cc's layer_norm_grad_loop) in AVX2 lanes,
// two passes instead of eight: the first widens x and dy (and rounds dy + dy_b to bf16, as the
// add launch it replaces), forms xhat, the row's two sums and the dgamma/dbeta float partials;
// the second writes dx rounded to bf16 (in AVX-512 lanes where the CPU has them). The generic
// loop's bits: the same lanes, the same operation order (FMAs where GCC contracts the scalar
// loop's), the statistics in double.
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// Whether layer_norm_grad_row_bf16 serves rows of `inner`: AVX2 built in, inner a multiple of 8,
/// and MYCEL_LN_GRAD_ROWS not "0" (read per call, for A/B against the generic loop).
bool layer_norm_grad_row_bf16_ok(int64_t inner);

/// dx's row from dy (+ dy_b when not null, each sum rounded to bf16), x, gamma g and the row's
/// saved mu/rs and their sensitivities dmu/drs; adds dy*xhat into fg and dy into fb.
/// xhat and dyf: scratch rows of `inner` floats.
void layer_norm_grad_row_bf16(const uint16_t* dy, const uint16_t* dy_b, const uint16_t* x,
                              const float* g, float mu, float rs, float dmu, float drs,
                              uint16_t* dx, float* fg, float* fb, float* xhat, float* dyf,
                              int64_t inner);

}  // namespace mycel::cpu
