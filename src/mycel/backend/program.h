// The backend: a specialized, optimized (monomorphic) graph compiles to a Program -- one linear
// instruction list per graph (kernel launches with prebuilt argument tensors, call/switch/
// tail-call control ops) run by a small VM over one memory arena planned by lifetime analysis.
//
// Frames are static: each function has a fixed frame in the arena, above its callers' frames;
// tail calls reuse it, recursive (non-tail) calls save and restore it. A Program runs one call
// at a time: concurrent run() calls (two Python threads) wait for each other.
//
// Outputs: run() copies every output that lives in the arena into a fresh tensor (one allocator
// call per output), so callers may keep results while the Program runs again; outputs that are
// inputs, weights or constants are returned as they are (shared, like eager views).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/ir/func_graph.h"

namespace mycel::backend {

namespace detail {
struct ProgramImpl;
}

/// Sizes and counters of a Program (of the plan used by the last run).
struct ProgramStats {
  size_t arena_bytes = 0;          // the arena of the current shape plan
  size_t num_instructions = 0;     // instructions of all functions (views folded away excluded)
  size_t num_kernel_launches = 0;  // kernels launched by the last run
  size_t num_plans = 0;    // shape plans cached (one per input signature, at most max_plans)
  size_t num_inplace = 0;  // elementwise outputs written over a dying input
  size_t num_fused = 0;    // instructions that fusion made out of several
};

/// A compiled graph: run it with the graph's (non-weight) parameters in order.
class Program {
 public:
  explicit Program(std::unique_ptr<detail::ProgramImpl> impl);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// Runs the program. Throws TypeError (wrong count or dtype) or ValueError (wrong shape) naming
  /// the parameter. A make_tuple output gives several tensors (nested tuples flattened in order);
  /// Python scalar outputs come back as 0-d tensors (int64, float64 or bool), None as undefined.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  /// The same, writing the outputs into `outputs`: an entry that is defined, not shared with
  /// anyone else and of the output's shape and dtype is filled in place (a warm training step
  /// then allocates nothing at all); the others are replaced as run() would return them.
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
  ProgramStats stats() const;
  /// The instruction listing, one function after another (for tests and debugging).
  std::string dump() const;
  detail::ProgramImpl& impl() { return *impl_; }

 private:
  std::unique_ptr<detail::ProgramImpl> impl_;
};

/// How to compile.
struct CompileOptions {
  bool fuse = default_fuse();  // conv/dense/matmul post-ops and elementwise chains
  /// Shape plans kept for graphs with dynamic dims (least recently used evicted);
  /// MYCEL_MAX_SHAPE_PLANS overrides the default of 16.
  size_t max_plans = default_max_plans();
  static size_t default_max_plans();
  /// True unless the environment says MYCEL_FUSE=0 (read at each compile).
  static bool default_fuse();
  /// oneDNN's preferred activation layout for conv/pool chains (assign_layouts.cc): kAuto where
  /// it moves fewer bytes than it adds in reorders, kAlways everywhere it can (tests).
  enum class Layout { kOff, kAuto, kAlways };
  Layout layout = default_layout();
  /// MYCEL_LAYOUT=0: kOff, MYCEL_LAYOUT=all: kAlways, else kAuto (read at each compile).
  static Layout default_layout();
};

/// Compiles `g` (resolved and monomorphic: every node has an abstract value). Weight parameters
/// (Parameter::is_weight) are captured; the others are the Program's inputs.
std::unique_ptr<Program> compile(const ir::FuncGraph& g, const CompileOptions& opts = {});

}  // namespace mycel::backend
