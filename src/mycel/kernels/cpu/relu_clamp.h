// Relu and relu6 as one branch-free clamp, for the scalar loops that apply them after a residual
// add. Same values as `v < 0 ? 0 : v > hi ? hi : v` (NaN and -0 pass), but written as a max then
// a min, which the compiler turns into MAXSS/MINSS and vectorizes: the nested conditional compiled
// to a branch that a residual sum's random signs mispredicted on about half the elements (4 ns
// an element, ResNet-18's add+relu at 64x32x32 took 270 us on one core).
#pragma once

namespace mycel::cpu {

/// min(max(v, 0), hi) with relu's NaN and -0 rule; hi = INFINITY for relu, 6 for relu6.
inline float relu_clamp(float v, float hi) {
  const float r = v < 0.f ? 0.f : v;  // MAXSS(0, v): v when v is NaN or -0
  return hi < r ? hi : r;             // MINSS(hi, r): r when r is NaN
}

}  // namespace mycel::cpu
