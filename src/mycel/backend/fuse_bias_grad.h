// A bf16 weight gradient's matmul dW = dy^T x and its bias gradient db = sum(dy) over the rows
// become one launch, cpu::matmul_col_sums (fuse_bias_grad.cc).
#pragma once
#include <vector>

#include "mycel/backend/detail.h"

namespace mycel::backend::detail {

/// Runs after keep_master_copies; MYCEL_FUSE_BIAS_GRAD=0 turns it off (A/B measurements).
void fuse_bias_grad(ProgramImpl& p);

/// The register r views (through reshape-like views), or r.
int base_of(const Function& f, const std::vector<int>& producer, int r);
/// A sum over every axis but the last of a static bf16 tensor, its result the last axis's size.
bool is_column_sum(const Function& f, const Instr& s);
/// dW = a^T b: a (K, M) and b (K, N) static bf16, no transpose of b, no post-ops.
bool is_weight_gradient(const Function& f, const Instr& mm);

/// fuse_dense_grad_pair.cc: a bf16 dense layer's dx = dy W (or matmul+mask_product) and its
/// weight gradient dW = dy^T x (with db = sum(dy)) as one launch that reads dy once
/// (cpu::dense_grad_pair_bf16). Runs just before fuse_bias_grad; MYCEL_FUSE_DENSE_GRAD_PAIR=0
/// turns it off (read when a step compiles: A/B measurements).
void fuse_dense_grad_pair(ProgramImpl& p);

}  // namespace mycel::backend::detail
