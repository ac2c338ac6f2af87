// Momentum's merged update (v' = m*v + g stored in v, w' = w - lr*v' stored in w: the two-output
// chain fuse_elementwise makes of nn.Momentum's step) as one register loop. The chain interpreter
// (fused_elementwise.cc) runs each of its four steps as a pass over a 512-element block in L1,
// 14 loads and stores per 8 lanes against this loop's 5; on a weight gradient's tile
// (matmul_chain.cc) that was most of the update's time, which runs between compute-bound tiles.
// The same float operations in the same order, so the results are the interpreter's bit for bit.
#pragma once
#include <cstdint>

#include "mycel/kernels/cpu/fused_elementwise.h"

namespace mycel::cpu {

/// The inputs and outputs of a chain recognised as momentum's update, by slot; ok false otherwise.
struct MomentumLanes {
  bool ok = false;
  int v = -1, m = -1, g = -1, lr = -1, w = -1;  // input slots
  int out_v = -1, out_w = -1;                   // output indices
};

/// Whether program p with outputs out_steps (nout of them) is exactly
/// `t0=mul(v,m); t1=add(t0,g); t2=mul(t1,lr); t3=sub(w,t2)` (mul and add in either operand
/// order) with outputs t1 and t3, where v, g, w hold every element (full) and m, lr one.
/// MYCEL_MOMENTUM_LANES=0 (read at each call) never matches: A/B against the interpreter.
MomentumLanes match_momentum(const EwProgram& p, const char* full, int nout, const int* out_steps);

/// The update over n elements: base[k] is input k (as for run_fused_elementwise_ptrs), outs[j]
/// output j. An output may be the buffer of any input (each element is read before it is
/// written). Runs on the calling thread.
void run_momentum_lanes(const MomentumLanes& mk, const float* const* base, int64_t n,
                        float* const* outs);

}  // namespace mycel::cpu
