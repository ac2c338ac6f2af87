// Helpers shared by the backend's fusion passes (fuse_post_ops.cc, fuse_elementwise.cc,
// fuse_reduce_te.cc), which
// rewrite a lowered Function's instruction list before calls are analysed and memory is planned.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mycel/backend/detail.h"
#include "mycel/kernels/cpu/fused_elementwise.h"

namespace mycel::backend::detail {

/// Per register: how many times it is read (instruction operands, call arguments, select
/// branches and conditions, and the function's outputs).
std::vector<int> count_uses(const Function& f);
/// True for instructions whose effect may be more than their outputs: mutating or random
/// kernels, calls, print, and any code not known to be pure. Fusion never moves a read across one.
bool has_side_effect(const Instr& in);
/// A kernel instruction with one output (the only kind fusion rewrites).
bool is_kernel1(const Instr& in);
/// The instruction writing each register as an output: its index when exactly one does, -1 when
/// none does, -2 when several do.
std::vector<int> sole_producers(const Function& f);
/// The instruction reading each register that exactly one instruction reads once (else -1).
std::vector<int> single_readers(const Function& f, const std::vector<int>& uses);
/// Whether an instruction in (from, to) that `keep` still holds has a side effect.
bool side_effect_between(const Function& f, const std::vector<char>& keep, int from, int to);
/// A tensor register in the plain (not channel-blocked) layout whose shape has no kDynamic dim,
/// of dtype `d`, and of rank `rank` unless it is negative.
bool is_static_plain(const Function& f, int r, DType d, int rank = -1);
/// Whether an instruction in (from, to) may write r (an assign to it, a call, a kernel that
/// mutates it): a read of r cannot move from `from` down to `to` across it.
bool written_between(const Function& f, int r, int from, int to);
/// A tensor register whose static shape has no kDynamic dim and whose dtype is float32.
bool is_static_f32(const Function& f, int r);
/// A float32 tensor register whose dims are static except perhaps the first (a dynamic batch:
/// kernels see the concrete size at run time, and what fusion and layouts decide depends only
/// on the other dims).
bool is_f32_static_but_batch(const Function& f, int r);
/// Elements of r's shape with a dynamic dim counted as 1 (per-sample sizes, for cost checks).
int64_t numel_per_sample(const Function& f, int r);
/// The chain op of `in` if it is a fusable elementwise kernel (fuse_elementwise.cc): float32
/// operands (bool for cast's input and the comparisons' output), each of the output's shape or of
/// one element, all static.
bool elementwise_chain_op(const Function& f, const Instr& in, cpu::EwOp& op);
/// The run-time shape of a chain over dynamic dims (`abstract` its static shape): the broadcast
/// of its operands' shapes (numpy's rule, what the unfused ops give); a ShapeError naming `name`
/// when they do not broadcast.
Shape run_shape(const Shape& abstract, const std::vector<Shape>& shapes, const std::string& name);
/// The operands of a fused chain's launch over `shape`: the inputs, except that in a chain over
/// dynamic dims an operand that is neither of that size nor a broadcast one-element operand at
/// run time (a dim of 1 against the batch) is expanded to it (into `expanded`), since the fused
/// loop indexes every full operand alike.
const std::vector<Tensor>& chain_operands(const std::vector<Tensor>& inputs, const Shape& shape,
                                          const std::vector<bool>& broadcast, bool dynamic,
                                          std::vector<Tensor>& expanded);
/// Whether fused chains are lowered to the tensor-expression code generator (src/mycel/te),
/// read from MYCEL_TE_FUSION when a step compiles: unset or "async" (the default), yes, each
/// chain starting on the block interpreter and switching to its kernel once a background thread
/// has built it (the step never waits for the compiler); "1" (or "sync"), yes, built before the
/// first step, and chains feeding a sum, mean, max or min fuse with it (fuse_reduce_te.cc); "0"
/// (or "off"), no: the interpreter only. Another value is a ValueError naming the variable.
/// Generated chains equal the interpreter bit for bit (the same exp, tanh and sigmoid, each
/// step rounded), so the switch changes no result; fused reductions equal the unfused ops up to
/// summation order.
bool te_fusion();
/// te_fusion() with its kernels built in the background (the default).
bool te_fusion_async();
/// The pass of fuse_reduce_te.cc (with te_fusion() only; before fuse_elementwise).
void fuse_reduce_te(ProgramImpl& p);
/// Keeps the instructions whose `keep` flag is set, in order.
void compact(Function& f, const std::vector<char>& keep);

}  // namespace mycel::backend::detail
