// Compiled gradients of recordings, cached by the recording's structure: a training loop whose
// steps record the same ops on the same shapes compiles once. The pipeline is graph mode's own
// (pipeline::compile_step with a GradSpec); the cache is bounded (least recently used evicted).
#pragma once
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mycel/ad/ad.h"
#include "mycel/pipeline/pipeline.h"
#include "mycel/pynative/recorder.h"

namespace mycel::pynative {

/// One compiled gradient: the compiled step, and the recording's module and owners that the
/// step's graphs came from.
struct CompiledGrad {
  std::unique_ptr<ir::Module> recording;
  std::vector<std::shared_ptr<void>> keep_alive;
  pipeline::Step step;
};

/// The gradient programs of one grad function (one GradSpec), keyed by recording structure.
class GradCache {
 public:
  /// `spec`'s positions index the function's arguments; weights come from each recording.
  explicit GradCache(ad::GradSpec spec);

  /// The program for `r` (compiled when its structure is new). `sens` is the abstract of the
  /// output sensitivity when the spec has sens_param (nullptr otherwise).
  CompiledGrad& get(Recording& r, const ir::AbstractPtr& sens);
  /// Runs it: the recording's arguments (as tensors), its captured tensors, then the sensitivity
  /// (its tensors, flattened); arguments the compile folded as constants are not passed.
  std::vector<Tensor> run(CompiledGrad& c, const Recording& r, std::vector<Tensor> args,
                          const std::vector<Tensor>& sens);

  int64_t compiles() const { return compiles_; }
  int64_t hits() const { return hits_; }
  int64_t evictions() const { return evictions_; }
  size_t size() const { return map_.size(); }

 private:
  ad::GradSpec spec_;
  pipeline::Options options_;
  std::list<std::pair<std::string, CompiledGrad>> order_;  // most recent first
  std::unordered_map<std::string, decltype(order_)::iterator> map_;
  int64_t compiles_ = 0, hits_ = 0, evictions_ = 0;
};

}  // namespace mycel::pynative
