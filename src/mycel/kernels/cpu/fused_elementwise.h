// One loop for a chain of float32 elementwise ops (the graph backend's fused_elementwise): a small
// register program run over blocks of elements, so intermediates stay in cache-sized buffers
// instead of full tensors. Each step is the same float operation as the op's own kernel, in the
// same order, so results equal the unfused ones bit for bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// The ops a fused chain may contain (float32 semantics of the registry op of the same name; each
/// op names its step in its registry traits). Only greater and less give bool, and only cast
/// reads it: bool values never enter or leave a chain.
enum class EwOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,  // binary
  kNeg,
  kAbs,
  kRelu,
  kSquare,
  kSqrt,
  kReciprocal,
  kExp,
  kSigmoid,
  kTanh,
  kErf,  // unary
  kGreater,
  kLess,  // float32 -> bool, held inside a chain as 1.0f / 0.0f
  kCast,  // bool -> float32 (the mask of a relu gradient): the held 1.0f / 0.0f
};

const char* ew_op_name(EwOp op);
int ew_arity(EwOp op);

/// A step reads slots a (and b): slots 0..num_inputs-1 are the inputs, slot num_inputs + k is
/// step k's result. The last step's result is the output.
struct EwStep {
  EwOp op;
  int a = 0, b = 0;
};
struct EwProgram {
  int num_inputs = 0;
  std::vector<EwStep> steps;
  /// "t0=mul(i0,i1); t1=relu(t0)" (for program dumps and tests).
  std::string str() const;
};

/// out = program(inputs); every input has out's element count or exactly one element
/// (broadcast). out may share its buffer with an input of the same size.
void run_fused_elementwise(const EwProgram& p, const std::vector<Tensor>& inputs, Tensor& out);

/// The chain's values at flat elements [start, start + len), len at most 512, into dst: base[k]
/// is input k's data, full[k] whether it holds every element (else its one value broadcasts).
/// What the chain-into-reduction interpreter (kernels/cpu/ordered_reduce.h) reduces.
void run_fused_elementwise_block(const EwProgram& p, const float* const* base, const char* full,
                                 int64_t start, int64_t len, float* dst);

}  // namespace mycel::cpu
