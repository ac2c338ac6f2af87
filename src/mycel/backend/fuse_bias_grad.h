// A bf16 weight gradient's matmul dW = dy^T x and its bias gradient db = sum(dy) over the rows
// become one launch, cpu::matmul_col_sums (fuse_bias_grad.cc).
#pragma once
#include "mycel/backend/detail.h"

namespace mycel::backend::detail {

/// Runs after keep_master_copies; MYCEL_FUSE_BIAS_GRAD=0 turns it off (A/B measurements).
void fuse_bias_grad(ProgramImpl& p);

}  // namespace mycel::backend::detail
