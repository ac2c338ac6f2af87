// A bf16 dense layer's two backward products in one launch (backend/fuse_dense_grad_pair.cc):
// dx = dy W (optionally masked by a relu's test, as matmul+mask_product) and dW = dy^T x
// (optionally with db = the column sums of dy, as matmul+sum). Unfused, dy (2 MiB in the
// transformer's FFN) is read from memory by two launches, and x by the weight gradient long after
// the forward pass wrote it. Here each thread takes its share of the rows in blocks of a few
// hundred: dx's block is one one-thread oneDNN product, then the block's weight-gradient share is
// added into the thread's float32 partial by matmul_bf16_atb while dy's block is still in that
// core's L2; the partials are summed and rounded once at the end, as the split-K weight gradient
// of dnnl_matmul.cc does.
#pragma once
#include <memory>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/mask_product_bf16.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// True where the fused launch can run: the CPU has AVX512-BF16 (matmul_bf16_atb_available()).
bool dense_grad_pair_available();

/// The rows of a block (MYCEL_DENSE_GRAD_PAIR_ROWS, default 256; read when a launch is prepared).
int64_t dense_grad_pair_rows();

/// dx = dy W (then dx = dx * test(y) where `mask`), dW = dy^T x and, where db is given, db = the
/// column sums of dy: dy (..., O) and x of the same R rows of I (any shape of R x I elements),
/// W (O, I), dx (R x I elements), dW (O, I), db (O), all bfloat16. dW and db are summed in
/// float32 and rounded once. `slot`: the launch's prepared state (graph mode), or null.
void dense_grad_pair_bf16(const Tensor& dy, const Tensor& w, const Tensor& x,
                          const MaskOperands* mask, Tensor& dx, Tensor& dw, Tensor* db,
                          std::unique_ptr<KernelPrepared>* slot);

/// One dense layer's backward in a chain: dx = dy W (masked where `mask`), dW = dy^T x, db =
/// sum(dy) where db is given (dense_grad_pair_bf16's operands). A later stage's dy is the stage
/// before's dx (its `dy` is ignored): a FFN's two layers, dH = mask(dOut W2), dX = dH W1.
struct DenseGradStage {
  const Tensor* dy = nullptr;
  const Tensor* w = nullptr;
  const Tensor* x = nullptr;
  const MaskOperands* mask = nullptr;
  Tensor* dx = nullptr;
  Tensor* dw = nullptr;
  Tensor* db = nullptr;
};

/// The n stages, each thread a block of rows at a time through all of them (a stage's dy block is
/// the previous stage's dx block, still in that core's L2). `slot` as above.
void dense_grad_chain_bf16(const DenseGradStage* stages, int n,
                           std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
