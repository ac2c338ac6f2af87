// A float32 2-d matmul whose result only feeds an elementwise chain with several outputs (a
// weight gradient and its optimizer's update, backend/fuse_matmul_update.cc), run tile by tile:
// each thread computes a block of rows of the product into a buffer that stays in its L2 cache
// and runs the chain on that block at once, so the product never goes to memory and back.
#pragma once
#include <memory>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// The chain after the matmul: its program, the input slot that reads the product, and the
/// steps whose results are the outputs.
struct MatmulChain {
  EwProgram prog;
  int product_slot = 0;
  std::vector<int> out_steps;
  bool trans_a = false, trans_b = false;
};

/// outs = chain(inputs with slot product_slot := op(a) @ op(b)); a and b 2-d float32, each
/// other input the product's element count or one element. Equal to the matmul then
/// run_fused_elementwise up to the matmul's summation order (bitwise where oneDNN blocks the
/// reduction alike, as it does for the MLP's weight gradients). `slot`: the launch's prepared
/// state (graph mode), or null.
void matmul_chain(const Tensor& a, const Tensor& b, const std::vector<Tensor>& inputs,
                  const MatmulChain& chain, const std::vector<Tensor>& outs,
                  std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
