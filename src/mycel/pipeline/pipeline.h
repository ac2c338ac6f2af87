// The whole-step compile pipeline, one function for both modes (DESIGN.md section 1): graph
// mode's compiled functions and PyNative's gradient cache both call compile_step, so the two
// cannot drift. The Python glue only converts arguments and results.
#pragma once
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mycel/ad/ad.h"
#include "mycel/ad/vmap.h"
#include "mycel/backend/program.h"
#include "mycel/ir/abstract.h"
#include "mycel/opt/opt.h"

namespace mycel::pipeline {

/// Every compile-time knob, with the environment read in one place (from_env): MYCEL_FUSE,
/// MYCEL_LAYOUT, MYCEL_MAX_SHAPE_PLANS (backend), MYCEL_VERIFY_IR, MYCEL_DUMP_IR (optimizer),
/// MYCEL_MAX_PROGRAMS (the compile caches' bound).
struct Options {
  opt::OptOptions opt;
  backend::CompileOptions backend;
  int max_grad_nesting = 8;  // gradients taken inside gradients, levels
  size_t max_programs = 64;  // compiled signatures kept per function (least recently used evicted)
  /// The defaults with the environment applied (read at each call, so tests can set it).
  static Options from_env();
};

/// One compiled signature: the optimized graph (in its own module: evicting the step frees it),
/// the output abstract as analysis gave it, the Program, and which entry parameters were folded
/// as constants (their arguments are not passed to the Program).
struct Step {
  std::unique_ptr<ir::Module> module;
  ir::FuncGraph* graph = nullptr;
  ir::AbstractPtr output;
  std::unique_ptr<backend::Program> program;
  std::vector<bool> constant_args;
};

/// `entry` specialized for `inputs`, optimized, gradients taken inside it expanded, constant
/// inputs folded, lowered to a Program. With `grad`, the step is entry's gradient per the spec:
/// entry is specialized for `inputs` (less the trailing sensitivity when grad->sens_param),
/// optimized, differentiated, and the gradient graph goes through the same stages.
Step compile_step(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& inputs,
                  const ad::GradSpec* grad, const Options& options);

/// The sharding pass's decisions for `entry` as a differentiated forward, without building
/// anything: entry is specialized for `inputs` in a throwaway module, optimized and given to the
/// semi-auto pass (the search under AUTO_PARALLEL), which records the layout it wants for each
/// weight it splits (parallel::take_planned_weights). Lets slice_parameters store the weights as
/// slices before the first compile, so the step compiles once. A no-op when the pass is off.
void plan_sharding(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& inputs,
                   const Options& options);

/// How many times compile_step and compile_transformed ran in this process (every graph-mode
/// function, Cell and PyNative gradient program; plan_sharding is not counted).
int64_t compile_count();

/// A gradient step cut at its sensitivity input (1F1B without recomputation): `forward` takes
/// the step's inputs less the sensitivity and returns (value, residuals...), the forward values
/// the backward reads (tensors); `backward` takes (residuals..., sensitivity) and returns the
/// gradients. Weights are read in place by both; effects (assignments, random draws) that do
/// not depend on the sensitivity run in the forward, once.
struct SplitStep {
  std::unique_ptr<ir::Module> module;
  ir::FuncGraph* forward = nullptr;
  ir::FuncGraph* backward = nullptr;
  std::unique_ptr<backend::Program> forward_program, backward_program;
  size_t num_residuals = 0;
  ir::AbstractPtr value, grads;  ///< how the value and the gradients nest
};

/// Splits `step` (compiled by compile_step with a GradSpec of return_value and sens_param, so
/// its graph returns (value, gradients) and its last input is the sensitivity) into the two
/// programs. A straight-line graph only (no calls of other graphs); errors say why not.
SplitStep split_at_sens(const Step& step, const Options& options);

/// One function transform of a chain: a gradient or a vmap level.
struct Transform {
  enum class Kind { kGrad, kVmap } kind = Kind::kGrad;
  ad::GradSpec grad;
  ad::VmapSpec vmap;
};

/// `entry` under a chain of transforms, innermost first (vmap(grad(f)) is {grad, vmap}): entry is
/// specialized for the inputs its innermost transform gives it (mapped axes removed, the
/// sensitivity dropped), then each transform builds its graph from the previous one, which is
/// specialized for its own inputs and optimized; the last is lowered as compile_step does.
Step compile_transformed(ir::FuncGraph* entry, const std::vector<ir::AbstractPtr>& inputs,
                         const std::vector<Transform>& chain, const Options& options);

/// Compiled steps by key, least recently used evicted past `capacity` (counted).
class StepCache {
 public:
  explicit StepCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  /// The step for `key`, or nullptr (a hit moves it to the front).
  Step* find(const std::string& key);
  /// Stores a step, evicting the least recently used beyond the capacity.
  Step& insert(const std::string& key, Step step);
  size_t size() const { return map_.size(); }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t evictions() const { return evictions_; }
  void set_capacity(size_t n);

 private:
  using Entry = std::pair<std::string, Step>;
  size_t capacity_;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
  int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace mycel::pipeline
