// Compiled gradients of recordings, cached by the recording's structure: a training loop whose
// steps record the same ops on the same shapes compiles once. The pipeline is graph mode's:
// specialize, optimize, ad::grad_graph, specialize, optimize, backend::compile.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mycel/ad/ad.h"
#include "mycel/backend/program.h"
#include "mycel/pynative/recorder.h"

namespace mycel::pynative {

/// One compiled gradient: the program, its graph (for the output structure and IR dumps) and
/// the module that owns every graph it came from.
struct CompiledGrad {
  std::unique_ptr<ir::Module> module;
  ir::FuncGraph* graph = nullptr;
  std::unique_ptr<backend::Program> program;
  std::vector<std::shared_ptr<void>> keep_alive;
};

/// The gradient programs of one grad function (one GradSpec), keyed by recording structure.
class GradCache {
 public:
  /// `spec`'s positions index the function's arguments; weights come from each recording.
  explicit GradCache(ad::GradSpec spec) : spec_(std::move(spec)) {}

  /// The program for `r` (compiled when its structure is new). `sens` is the abstract of the
  /// output sensitivity when the spec has sens_param (nullptr otherwise).
  CompiledGrad& get(Recording& r, const ir::AbstractPtr& sens);
  /// Runs it: the recording's arguments (as tensors), its captured tensors, then the sensitivity.
  std::vector<Tensor> run(CompiledGrad& c, const Recording& r, std::vector<Tensor> args,
                          const std::vector<Tensor>& sens);

  int64_t compiles() const { return compiles_; }
  int64_t hits() const { return hits_; }
  size_t size() const { return map_.size(); }

 private:
  ad::GradSpec spec_;
  std::unordered_map<std::string, CompiledGrad> map_;
  int64_t compiles_ = 0, hits_ = 0;
};

}  // namespace mycel::pynative
