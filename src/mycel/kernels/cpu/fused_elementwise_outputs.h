// A fused elementwise chain with several outputs (the graph backend's merge of an optimizer's
// state and weight updates, backend/fuse_elementwise.cc). Apart from fused_elementwise.h, which
// the op registry includes, so that this entry point rebuilds only its two users.
#pragma once
#include <vector>

#include "mycel/kernels/cpu/fused_elementwise.h"

namespace mycel::cpu {

/// outs[j] = the result of step out_steps[j] (the last step's among them), all of one element
/// count. Each block's results are stored after every step of the block has read its operands,
/// so any output may share its buffer with an input of its size (an optimizer's chain writing
/// its state and its weight in one pass).
void run_fused_elementwise(const EwProgram& p, const std::vector<Tensor>& inputs,
                           const std::vector<int>& out_steps, const std::vector<Tensor>& outs);

/// The same over raw buffers: input k at base[k], n elements when full[k], else one (broadcast);
/// outs[j] = step out_steps[j]'s results. Runs on the calling thread inside a parallel region
/// (matmul_chain.cc: one row tile of a weight gradient and its optimizer update).
void run_fused_elementwise_ptrs(const EwProgram& p, const float* const* base, const char* full,
                                int64_t n, int nout, const int* out_steps, float* const* outs);

}  // namespace mycel::cpu
