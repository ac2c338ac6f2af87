// Tensor expressions (issue 18): an index-arithmetic IR of its own (not graph IR), its
// reverse-mode AD, and lowering to C++ loop nests compiled at run time.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mycel/core/dtype.h"

namespace mycel::cpu {
struct EwProgram;
}

namespace mycel::te {

/// Element types of TE expressions; index arithmetic is int64.
enum class DType { float32, float64, int32, int64, boolean };
const char* dtype_name(DType t);
DType dtype_from_name(const std::string& name);
inline bool is_float(DType t) { return t == DType::float32 || t == DType::float64; }
/// The framework's dtype of a TE element type, and back (TypeError naming `who` for a dtype TE
/// has no element type for).
mycel::DType to_core(DType t);
DType from_core(mycel::DType t, const char* who);

enum class Op {
  Const,
  Var,
  Load,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Max,
  Min,
  Pow,
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Abs,
  Sin,
  Cos,
  Erf,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  Not,
  Select,
  Cast,
  Reduce,
  Size  // a size variable's value in index arithmetic (te.var in x[n - 1 - i]); value: its code
};
enum class ReduceKind { sum, max, min };

struct TensorNode;
using Tensor = std::shared_ptr<TensorNode>;

/// Symbolic extents (te.var("n")): a dimension or a loop bound may hold a size variable's code,
/// -1 - k for the k-th name the process has seen (equal names are one variable). A function
/// built over them is compiled once; the sizes are bound from its inputs' shapes at each call.
int64_t size_var(const std::string& name);
inline bool is_symbolic(int64_t extent) { return extent < 0; }
/// The name of a size variable's code ("n"); ValueError for a code no te.var made.
std::string size_var_name(int64_t code);
/// A shape for messages: static dims as numbers, symbolic ones by name: "(n, 784)".
std::string shape_string(const std::vector<int64_t>& shape);

/// A loop variable: a compute axis or a reduce axis, with its half-open range [lo, hi).
struct IterVarNode {
  std::string name;
  int64_t lo = 0, hi = 0;
  bool reduce = false;
  int64_t id = 0;  // unique, for hashing and printing
};
using IterVar = std::shared_ptr<IterVarNode>;

struct Node;
using Expr = std::shared_ptr<Node>;

/// One immutable expression node; which fields are used depends on op.
struct Node {
  Op op;
  DType dtype;
  double value = 0;        // Const
  IterVar var;             // Var
  Tensor tensor;           // Load
  std::vector<Expr> args;  // operands; Load: indices; Reduce: [body]
  ReduceKind rkind = ReduceKind::sum;
  std::vector<IterVar> raxes;  // Reduce
};

/// A dimension written as an expression of size variables (te.placeholder((2 * n, m)),
/// te.compute((n + 1, m), ...)): an int64 expression of size values (size_value), integers and
/// + - * // %. Returns a size variable of its own whose value a call computes from theirs (its
/// name is the expression, "2 * n"; equal expressions are one variable), or the number when the
/// expression is constant; ValueError naming what else it holds.
int64_t size_expr(const Expr& e);
/// The definition of a size variable made by size_expr, over te.var sizes only; null for a
/// te.var.
Expr size_definition(int64_t code);

/// A placeholder (body == nullptr) or a compute tensor: out[axes] = body.
struct TensorNode {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype;
  std::vector<IterVar> axes;
  Expr body;
  int64_t id = 0;
  bool is_placeholder() const { return body == nullptr; }
};

// Construction, with static checks (errors name the function and show the values).
IterVar make_var(const std::string& name, int64_t lo, int64_t hi, bool reduce);
Expr constant(double v, DType t);
Expr var(const IterVar& v);
Expr load(const Tensor& t, const std::vector<Expr>& indices);
Expr binary(Op op, Expr a, Expr b);
Expr unary(Op op, Expr a);
Expr select(Expr cond, Expr a, Expr b);
Expr cast(Expr a, DType t);
Expr reduce(ReduceKind kind, Expr body, const std::vector<IterVar>& axes);
/// The value of size variable `code` as an int64 index expression (x[i + n], x[n - 1 - i],
/// flat[i * m + j]); bound like any size variable when the function is called.
Expr size_value(int64_t code);
Tensor placeholder(const std::vector<int64_t>& shape, DType t, const std::string& name);
Tensor compute(const std::vector<int64_t>& shape, const std::vector<IterVar>& axes, Expr body,
               const std::string& name);
const char* op_name(Op op);
std::string to_string(const Expr& e);
std::string to_string(const Tensor& t);

// Rewriting helpers (simplify.cc).
using VarMap = std::vector<std::pair<const IterVarNode*, Expr>>;
Expr substitute(const Expr& e, const VarMap& map);
Expr simplify(const Expr& e);
/// Every compute tensor reachable from outputs (producers first).
std::vector<Tensor> topo_order(const std::vector<Tensor>& outputs);

/// Adjoint builder for override: (out, inputs, head) -> adjoints of inputs.
using OverrideFn = std::function<std::vector<Tensor>(Tensor, std::vector<Tensor>, Tensor)>;
struct Override {
  Tensor tensor;
  std::vector<Tensor> inputs;
  OverrideFn fn;
};
/// Reverse mode on index expressions: the adjoint of each input given out's adjoint head
/// (ones when null). No Jacobian is materialized; index equations are solved where affine.
std::vector<Tensor> differentiate(const Tensor& out, const std::vector<Tensor>& inputs,
                                  const Tensor& head, const std::vector<Override>& overrides);

/// How one loop of a scheduled compute runs.
enum class LoopKind { serial, parallel, vectorized, unrolled };
/// The schedule of one compute tensor (Halide / TVM style): its loops start as the tensor's axes
/// followed, for a reduction at the top of its body, by the reduce axes. split replaces a loop by
/// an outer and an inner one, reorder permutes loops, and a loop may run in parallel (OpenMP),
/// vectorized (the innermost only) or unrolled. The lowering computes each original axis back
/// from its loops, so results equal the unscheduled ones (up to float summation order).
class Stage {
 public:
  struct Split {
    IterVar parent, outer, inner;
    int64_t factor;
  };
  explicit Stage(Tensor t);
  /// outer, inner with inner's extent `factor` (a guard covers a remainder).
  std::pair<IterVar, IterVar> split(const IterVar& v, int64_t factor);
  /// The given loops take the positions they occupy, in the given order (others stay put).
  void reorder(const std::vector<IterVar>& loops);
  void set_kind(const IterVar& v, LoopKind k);
  /// TVM's compute_at: this tensor's loop nest runs inside `consumer`'s loop `axis`, over only
  /// the region one iteration of that loop reads (bounds inferred from the index expressions when
  /// the code is generated), into a buffer of that region's size.
  void compute_at(const Stage& consumer, const IterVar& axis);
  const Tensor& attach_tensor() const { return attach_tensor_; }
  const IterVar& attach_axis() const { return attach_axis_; }
  const Tensor& tensor() const { return tensor_; }
  const std::vector<IterVar>& loops() const { return loops_; }
  const std::vector<Split>& splits() const { return splits_; }
  LoopKind kind(const IterVarNode* v) const;
  bool reduces() const;  // the body is a reduction: its loops include the reduce axes

 private:
  size_t position(const IterVar& v, const char* what) const;
  Tensor tensor_;
  std::vector<IterVar> loops_;
  std::vector<Split> splits_;
  std::vector<std::pair<const IterVarNode*, LoopKind>> kinds_;
  Tensor attach_tensor_;  // compute_at: the consumer (null: the tensor's loops are at the root)
  IterVar attach_axis_;
};
using Schedule = std::vector<std::shared_ptr<Stage>>;

/// Lowers outputs over inputs to a C++ translation unit exporting `mycel_te_kernel(void**)`;
/// tensors with a stage in `schedule` get its loop nest (and a buffer of their own).
std::string generate_cpp(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                         const Schedule& schedule = {});

/// A compiled kernel: buffers are inputs then outputs, contiguous, of the declared shapes.
class Kernel {
 public:
  Kernel(void* handle, void* fn, std::string path, bool cached, double compile_s);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  void run(void** buffers) const;
  const std::string& path() const { return path_; }
  bool cached() const { return cached_; }
  double compile_seconds() const { return compile_s_; }

 private:
  void* handle_;
  void* fn_;
  std::string path_;
  bool cached_;
  double compile_s_;
};
/// Compiles source (or loads it from the on-disk cache keyed by its hash).
std::shared_ptr<Kernel> compile(const std::string& source);
/// The kernel cache folder: MYCEL_TE_CACHE, else ~/.cache/mycel/te, else /tmp/mycel-te-<uid>.
std::string cache_directory();
/// Compiles C++ source with the system compiler and `flags` into a shared library in the kernel
/// cache (keyed by the compiler binary and CPU, flags and source; reused when present); returns
/// its path. `what` names the caller in errors; cached / seconds report whether it was reused and
/// the compile time.
std::string compile_shared(const std::string& source, const std::string& flags,
                           const std::string& what, bool* cached = nullptr,
                           double* seconds = nullptr);

/// ops.Custom(func_type="aot"): "lib.so:func" or "source.cc:func" (a .c/.cc/.cpp/.cxx file is
/// compiled into the kernel cache first). func has MindSpore's aot signature
/// int func(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
///          void* stream, void* extra), params being the inputs then the outputs, and returns 0 on
/// success. Returns the library path actually loaded.
struct AotFunction {
  std::string library, symbol;
  void* handle = nullptr;
  int (*fn)(int, void**, int*, int64_t**, const char**, void*, void*) = nullptr;
  bool cached = false;
  double compile_seconds = 0;
};
std::shared_ptr<AotFunction> load_aot(const std::string& spec);

/// The size variables of a lowering, in the order its kernel reads their values (the buffer
/// after the outputs holds them as int64): placeholders' dims first, then the other tensors'.
std::vector<int64_t> size_vars(const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& outputs);

/// A read whose index uses a size variable's value (bounds.cc): it stays inside its tensor only
/// for some sizes, so each call checks it with the bound values before the kernel runs.
struct IndexCheck {
  Tensor reader;               // the compute whose body reads
  Tensor tensor;               // the tensor read
  size_t dim = 0;              // which of its indices
  Expr index;                  // that index
  std::vector<IterVar> loops;  // the loop variables in scope (the reader's axes, reduce axes)
};
/// The checks of every unguarded read (not under an if_then_else arm, which may guard it) whose
/// index holds a size variable's value.
std::vector<IndexCheck> index_checks(const std::vector<Tensor>& outputs);
/// Throws IndexError naming `who`, the tensor, the index and the sizes when a check's index can
/// leave [0, extent) for these size values (interval arithmetic over the loop ranges; an index it
/// cannot bound, a read under a data-dependent index, is left to the user).
void check_indices(const std::vector<IndexCheck>& checks, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& values, const char* who);

/// A built TE function: placeholders in, compute tensors out, and its compiled kernel.
struct Function {
  std::vector<Tensor> inputs, outputs;
  std::string source;
  std::shared_ptr<Kernel> kernel;
  std::vector<int64_t> sizes;      // size variables (codes), in the kernel's order; empty: static
  std::vector<IndexCheck> checks;  // reads bounded only for some sizes, checked by bind
  /// The values of `sizes` for inputs of these shapes, checked against the placeholders (a
  /// ShapeError naming `who` and the input on a mismatch or an inconsistent size variable).
  std::vector<int64_t> bind(const std::vector<std::vector<int64_t>>& in_shapes,
                            const char* who) const;
  /// bind's part for dimensions written as expressions (size_expr): solves the sizes only they
  /// hold, computes them and checks the inputs against them.
  void bind_derived(const std::vector<std::vector<int64_t>>& in_shapes,
                    std::vector<int64_t>& values, const char* who) const;
  /// A shape with its size variables replaced by the bound values.
  std::vector<int64_t> resolve(const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& values) const;
  /// Runs the kernel on buffers (inputs then outputs) with the bound size values.
  void run(std::vector<void*> bufs, const std::vector<int64_t>& values) const;
};
/// How many times this process ran the system compiler for a TE kernel (cache misses).
int64_t compile_count();
/// The cached libraries this process compiled or loaded (compile_shared's results), in order of
/// first use: what mycel.te.warm records as a warm cache's contents.
std::vector<std::string> used_libraries();
/// Generates and compiles outputs over inputs.
std::shared_ptr<Function> build(std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                                const Schedule& schedule = {});
/// The graph backend's fused elementwise chain `p` over float32 elements, as one generated
/// loop (inputs marked in `broadcast` have one element). The kernel's length is a size variable
/// (the function's only one: run(bufs, {n}) for n elements), so one kernel serves every length. The
/// output may be an input's buffer (no generated pointer is __restrict): the loop reads element i
/// before it writes it.
std::shared_ptr<Function> build_elementwise(const cpu::EwProgram& p,
                                            const std::vector<bool>& broadcast);
/// A chain as build_elementwise, over an input of `shape`, reduced (`kind`: summed, or its
/// maximum or minimum, NaN propagating) over the axes marked in `reduced` (a sum then divided by
/// their element count when `mean`: that count, as float32, is one more input after the chain's);
/// every dim is a size variable, bound from the inputs' shapes (a broadcast input as (1)); the
/// result keeps those axes with extent 1 when keep_dims; with keep_chain the chain's values are a
/// first output (the reduction second). The graph backend's chain-into-reduction fusion: the
/// kernel reduces in kernels/cpu/ordered_reduce.h's order, the interpreter's, bit for bit. Its
/// size variables are d0, d1, ... (dim k is size_var("d<k>")).
std::shared_ptr<Function> build_elementwise_reduce(
    const cpu::EwProgram& p, const std::vector<int64_t>& shape, const std::vector<bool>& broadcast,
    const std::vector<bool>& reduced, ReduceKind kind, bool keep_dims, bool mean, bool keep_chain);
/// A function built off the critical path (background.cc): ready() is null until it is built
/// (and stays null when building failed or was refused: error() says why). One worker thread
/// takes the builds in order from a bounded queue (MYCEL_TE_BACKGROUND_QUEUE, default 64; a
/// build that finds it full is refused: its chain stays on the interpreter); its compiler runs
/// niced and alone, and at most MYCEL_TE_BACKGROUND_COMPILES compiler runs per process (unset:
/// no cap; past it a build only loads a kernel already cached). Destruction drops a build still
/// queued; at exit the queue is dropped and a compiler under way is killed.
class BackgroundBuild {
 public:
  static std::shared_ptr<BackgroundBuild> start(std::function<std::shared_ptr<Function>()> make);
  ~BackgroundBuild();
  BackgroundBuild(const BackgroundBuild&) = delete;
  BackgroundBuild& operator=(const BackgroundBuild&) = delete;
  std::shared_ptr<Function> ready() const;
  std::string error() const;
  /// Waits until it is built, failed, refused or dropped.
  void wait();

  struct State;  // shared with the worker thread, which may hold it after the build is dropped

 private:
  BackgroundBuild() = default;
  std::shared_ptr<State> state_;
};
/// Waits until the background queue is empty and no build runs; returns how many builds
/// produced a function since the process started.
int wait_background_builds();
/// Counts of this process's background builds, for tests: queued (waiting now), built, failed,
/// refused (queue full), dropped (freed before their turn), compiles (compiler runs by them).
struct BackgroundStats {
  int64_t queued = 0, built = 0, failed = 0, refused = 0, dropped = 0, compiles = 0;
};
BackgroundStats background_stats();
/// The process-wide table behind the te_call op: a function gets an id its calls carry as an
/// attribute (so graph IR stays free of TE objects); ids are never reused.
int64_t register_function(std::shared_ptr<Function> f);
std::shared_ptr<Function> function_at(int64_t id);
/// Function id for these input dtypes: itself, or (built once) the same expressions with every
/// float value in the one float dtype the float inputs share; else a TypeError.
std::shared_ptr<Function> function_for(int64_t id, const std::vector<DType>& input_dtypes);
/// The id of f's gradient function (inputs..., one head per output) -> one adjoint per input,
/// built with differentiate on first use and remembered.
int64_t gradient_function(int64_t id);

}  // namespace mycel::te
