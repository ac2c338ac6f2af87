// Dataset sources: random-access tables of rows. The engine's samplers pick indices (shuffle,
// shards, subsets) and its workers call get() concurrently, so get() must be thread-safe.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/data/params.h"

namespace mycel::data {

/// One sample: a tensor per column, in the order of the producer's column_names().
using Row = std::vector<Tensor>;

/// A random-access source of rows (MNIST, CIFAR, ImageFolder, CSV, MindRecord, numpy slices).
class Source {
 public:
  virtual ~Source() = default;
  /// Column names, e.g. {"image", "label"}.
  virtual std::vector<std::string> column_names() const = 0;
  /// Number of rows.
  virtual int64_t size() const = 0;
  /// Row `index` in [0, size()); thread-safe; throws an Error naming the file on corrupt data.
  virtual Row get(int64_t index) const = 0;
  /// A hint that get(index) comes soon (the consumer's pipeline knows its sampler order): an
  /// in-memory source may start loading the row's bytes into the cache. No effect on results.
  virtual void prefetch(int64_t index) const {}
};

using SourceFactory = std::function<std::shared_ptr<Source>(const Params&)>;

/// Registers a source under a name (the Python class name, e.g. "MnistDataset").
void register_source(const std::string& name, SourceFactory factory);
/// Builds a registered source; throws ValueError for an unknown name.
std::shared_ptr<Source> make_source(const std::string& name, const Params& params);
/// Names of registered sources.
std::vector<std::string> source_names();

}  // namespace mycel::data
