// Internals of a compiled Program: register-based functions (compile.cc), per-shape plans with
// the arena and prebuilt kernel tensors (dynamic.cc, memory_plan.cc) and the VM state (vm.cc).
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mycel/backend/program.h"
#include "mycel/ir/func_graph.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/ops/registry.h"

namespace mycel::backend::detail {

/// The static type of a register.
enum class RegType : uint8_t { kTensor, kInt, kFloat, kBool, kNone };

/// A run-time value: a tensor or a Python scalar (its type is fixed per register).
struct Reg {
  Tensor t;
  int64_t i = 0;  // ints and bools
  double f = 0;
};

/// What the compiler knows about a register.
struct RegInfo {
  RegType type = RegType::kNone;
  TensorMeta meta;        // tensors: shape (ir::kDynamic dims allowed) and dtype
  bool is_const = false;  // constants, weights: value below, fixed for the Program's life
  Reg value;
  bool blocked = false;  // NCHW tensor stored channel-blocked (assign_layouts.cc): padded size
  int alias_of = -1;     // >= 0: the weight register whose memory its kernel writes (no arena
                         // buffer; the assign that follows copies nothing, assign_in_place.cc)
};

enum class Code : uint8_t {
  kKernel,          // op kernel: in -> out (prebuilt tensors per plan)
  kView,            // reshape-like: out aliases in (folded at plan time when in is static)
  kScalar,          // scalar arithmetic/comparison prim on in[0], in[1]
  kTensorToScalar,  // in[0] (one-element tensor) -> scalar out[0]
  kScalarToTensor,  // scalar in[0] -> 0-d tensor out[0] of `dtype`
  kDim,             // in[0].shape[axis] -> int out[0] (dynamic dims)
  kSelect,          // switch as a value: out = cond ? in : in_b
  kCall,            // call of one of targets (two with a switch on cond)
  kPrint,           // print(in...)
  kAssign,          // in[0] (a weight) := in[1], in place
  kCopy,            // out[0] := a copy of in[0] (a weight returned by a step that writes it)
  kRaise,           // raise `raised` (a Python exception reached at run time): never continues
};

/// One possible callee of a call: a function and its arguments in its parameter order (bound
/// partial arguments, call arguments, then closure-converted free variables).
struct Target {
  int fn = -1;
  std::vector<int> args;
  bool scc_call = false;  // callee in the caller's call cycle (recursion): frames are saved
};

struct Instr {
  Code code;
  const OpDef* op = nullptr;
  Attrs attrs;
  ir::Prim prim{};
  std::vector<int> in;    // kernel inputs (-1: absent optional), scalar operands
  std::vector<int> in_b;  // select: the false branch's registers
  std::vector<int> out;
  int cond = -1;  // select/switch-call condition (bool scalar or one-element tensor)
  std::vector<Target> targets;
  bool tail = false;  // a call whose results are the function's results (frame reused)
  DType dtype = DType::float32;
  int64_t axis = 0;
  const ir::Node* node = nullptr;  // for error messages
  std::vector<std::string> text;   // print: constant strings, read where `in` holds -1 - index
  std::vector<char> as_repr;       // print: per entry of `in`, write a tensor as repr (in a tuple)
  ir::ValuePtr raised;             // raise: the exception object or class
  /// Kernels: the post-ops and layouts fusion and the layout step chose (nullptr: plain).
  std::shared_ptr<const KernelParams> params;
};

/// One graph, closure converted, as registers and instructions.
struct Function {
  std::string name;
  std::vector<RegInfo> regs;
  std::vector<int> params;               // flattened parameter registers (then free variables)
  std::vector<std::string> param_names;  // one per entry of params
  std::vector<Instr> code;
  std::vector<int> outputs;
  int scc = -1;            // call-graph strongly connected component
  bool recursive = false;  // in a call cycle: parameters get home buffers, frames are saved
  bool raises = false;     // ends in a raise: never returns, so its outputs match no call's
  const ir::Node* output_node = nullptr;  // the graph's output (a raising call makes it raise)
};

/// A kernel's prebuilt argument vectors, the inputs refreshed from registers at each launch, and
/// what the kernel prepared on its first launch under this plan (kernels/kernel_context.h).
struct KernelSlots {
  std::vector<Tensor> in, out;
  std::vector<std::pair<int, int>> refresh;  // (input slot, register) for dynamic registers
  std::unique_ptr<KernelPrepared> prepared;
  KernelParams params;  // a copy of Instr::params the kernel may write to
  bool has_params = false;
};

/// One function under one shape plan.
struct FnPlan {
  std::vector<TensorMeta> meta;      // per register
  std::vector<char> known;           // meta inferred
  std::vector<Tensor> home;          // per register: the arena buffer backing it, if any
  std::vector<char> is_static;       // register's tensor is fixed for the plan (no refresh needed)
  std::vector<Reg> regs;             // the register file (frames are static; recursion saves it)
  std::vector<KernelSlots> kernels;  // per instruction (kernels only)
  std::vector<char> elided;          // per instruction: folded at plan time (static views)
  // Data-dependent shapes (ops/data_dependent.h): per register, a shape known only once the
  // program runs (the tensor is allocated then, outside the arena); per instruction, whether it
  // reads or writes such a register (its outputs are re-inferred at each launch).
  std::vector<char> ragged;
  std::vector<char> ragged_instr;
  size_t base = 0, size = 0;             // this function's frame in the arena
  size_t block_base = 0, block_end = 0;  // its call cycle's frames
  size_t num_inplace = 0;
  // The profiler's launch-site ids per instruction, valid while site_epoch is its epoch().
  std::vector<int32_t> sites;
  uint32_t site_epoch = 0;
};

/// Everything that depends on the concrete input shapes.
struct Plan {
  std::vector<FnPlan> fns;
  std::shared_ptr<Storage> arena;
  size_t arena_bytes = 0;
  /// Storage-less tensors of the inputs' shapes: assigned to the input registers after a run,
  /// they drop the caller's buffers but keep the registers' shape buffers (no allocation).
  std::vector<Tensor> input_blanks;
};

/// A VM call frame: the caller waiting at instruction pc for a non-tail call.
struct Frame {
  int fn;
  int pc;
  int target;
  bool saved;
  size_t save_bytes, save_regs;  // marks in the save stacks
};

struct ProgramImpl {
  std::vector<Function> fns;  // fns[0] is the top graph
  std::vector<int> num_scc_members;
  std::map<std::vector<Shape>, std::unique_ptr<Plan>> plans;
  // Least-recently-used order of `plans` (front: next to evict); at most max_plans are kept, so
  // a dynamic dim that takes many sizes does not grow memory without bound.
  std::list<std::vector<Shape>> plan_lru;
  size_t max_plans = 16;
  Plan* plan = nullptr;  // the last used
  std::vector<Shape> last_sig;
  size_t num_launches = 0;
  // VM stacks, reused across runs so a warm run does not allocate.
  std::vector<Frame> frames;
  std::vector<Reg> scratch;
  std::vector<std::byte> save_bytes;
  std::vector<Reg> save_regs;
  // Ops of fused instructions (fuse_*.cc): owned here, not in the registry (backend-only).
  std::vector<std::shared_ptr<const OpDef>> fused_ops;
  size_t num_fused = 0;
  /// The programs of fuse_elementwise's chains, by op: one output, or two (an optimizer's state
  /// and weight updates, for fuse_matmul_update); keep_master_copies extends either kind.
  struct ChainOp {
    cpu::EwProgram prog;
    std::vector<int> out_steps;
  };
  std::map<const OpDef*, ChainOp> chain_ops;
  /// fuse_mask_product's matmul+mask_product ops, by op: the mask's test (y < t or y > t, t on
  /// the left), so fuse_dense_grad_pair can fold such a dx with its weight gradient.
  struct MaskTest {
    bool less = false, t_left = false;
  };
  std::map<const OpDef*, MaskTest> mask_matmul_ops;
  // One run at a time: plans, frames and the arena are shared by every caller of run().
  std::mutex run_mutex;
};

// closure.cc: reachable graphs (top first) and their closure-converted free variables.
struct Closures {
  std::vector<const ir::FuncGraph*> graphs;
  std::unordered_map<const ir::FuncGraph*, int> index;
  std::unordered_map<const ir::FuncGraph*, std::vector<ir::NodePtr>> fv;
};
Closures convert_closures(const ir::FuncGraph& top);
// compile.cc
void lower(const ir::FuncGraph& top, ProgramImpl& p);
// call_graph.cc: argument checks at calls; cycles (recursion) and scc_call flags.
void analyse_calls(ProgramImpl& p);
// fold_batch_norm.cc, fuse_post_ops.cc, fuse_conv_pool.cc, fuse_elementwise.cc: rewrite lowered
// functions (before analyse_calls).
void fold_batch_norm(ProgramImpl& p);
void fuse_post_ops(ProgramImpl& p);
void fuse_conv_pool(ProgramImpl& p);
void fuse_elementwise(ProgramImpl& p);
// fuse_mask_product.cc: dy * cast(y > t) in bf16 (a relu's backward) as one pass.
void fuse_mask_product(ProgramImpl& p);
// fold_head_transposes.cc: attention's head split/merge transposes as strides of the batched
// bf16 matmuls next to them.
void fold_head_transposes(ProgramImpl& p);
// fuse_add_norm_grad.cc: layer_norm_grad of a bf16 add(a, b) sums a and b in its own pass.
void fuse_add_norm_grad(ProgramImpl& p);
// assign_layouts.cc: channel-blocked conv/pool chains, reorders where plain NCHW is needed.
// `always`: skip the cost check that keeps NCHW where the layout would add more than it saves.
void assign_layouts(ProgramImpl& p, bool always);
// assign_in_place.cc: a kernel output only copied into a weight is written into the weight
// (after analyse_calls, which marks recursive functions).
void assign_in_place(ProgramImpl& p);
// fuse_matmul_update.cc: a weight gradient's matmul whose only reader is an optimizer's
// two-output chain becomes one launch updating the weight tile by tile (after assign_in_place).
void fuse_matmul_update(ProgramImpl& p);
// keep_master_copies.cc: an optimizer's chain also writes its weight's bf16 copy, which the
// step's casts of the weight then read (after fuse_matmul_update).
void keep_master_copies(ProgramImpl& p);
// dynamic.cc: the plan for concrete top-level input metas (throws on inconsistent shapes).
std::unique_ptr<Plan> build_plan(ProgramImpl& p, const std::vector<TensorMeta>& inputs);
// vm.cc
void execute(ProgramImpl& p, Plan& plan);
std::string reg_type_name(RegType t);

}  // namespace mycel::backend::detail
