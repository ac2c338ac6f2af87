// The dataset engine's public interface: build a tree of ops with these factories, then run it
// with a Pipeline. Column names live in Python; the engine sees column indices only.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mycel/data/engine/op.h"
#include "mycel/data/engine/sampler.h"
#include "mycel/data/transform.h"

namespace mycel::data::engine {

/// A one-pass stream of rows (a Python iterable); next() returns false at its end.
class RowStream {
 public:
  virtual ~RowStream() = default;
  virtual bool next(Row& row) = 0;
};

/// Opens a fresh stream for each epoch (GeneratorDataset over a callable or iterable).
class StreamFactory {
 public:
  virtual ~StreamFactory() = default;
  virtual std::unique_ptr<RowStream> open(int64_t epoch) = 0;
};

/// A per_batch_map: lists of column tensors in, lists out (one list per output column).
class BatchMap {
 public:
  virtual ~BatchMap() = default;
  virtual std::vector<std::vector<Tensor>> apply(std::vector<std::vector<Tensor>> columns,
                                                 int64_t batch_num, int64_t epoch_num) const = 0;
};

/// Where each output column of map/batch comes from: index >= 0 an input column, -k-1 output k.
using Layout = std::vector<int64_t>;

/// Padding of one batch column: target shape (-1 = longest in the batch) and fill value.
struct PadSpec {
  bool enabled = false;
  std::vector<int64_t> shape;  // empty: pad every dimension to the longest
  double value = 0;
  std::string text;  // a string column's pad value (the empty string when empty)
};

std::shared_ptr<Op> source_op(std::shared_ptr<Source> source, SamplerSpec sampler, int workers);
std::shared_ptr<Op> stream_op(std::shared_ptr<StreamFactory> factory, int64_t num_samples);
std::shared_ptr<Op> map_op(std::shared_ptr<Op> child, TransformList transforms,
                           std::vector<int64_t> input_columns, Layout layout, int workers);
std::shared_ptr<Op> batch_op(std::shared_ptr<Op> child, int64_t batch_size, bool drop_remainder,
                             std::shared_ptr<BatchMap> per_batch_map,
                             std::vector<int64_t> map_inputs, Layout layout,
                             std::vector<PadSpec> pads, std::vector<std::string> column_names,
                             int workers);
std::shared_ptr<Op> shuffle_op(std::shared_ptr<Op> child, int64_t buffer_size);
std::shared_ptr<Op> repeat_op(std::shared_ptr<Op> child, int64_t count);
std::shared_ptr<Op> take_op(std::shared_ptr<Op> child, int64_t count);
std::shared_ptr<Op> skip_op(std::shared_ptr<Op> child, int64_t count);
std::shared_ptr<Op> project_op(std::shared_ptr<Op> child, std::vector<int64_t> columns);
std::shared_ptr<Op> zip_op(std::vector<std::shared_ptr<Op>> children);
std::shared_ptr<Op> concat_op(std::vector<std::shared_ptr<Op>> children);

/// Stacks equal-shaped rows of one column into a (B, ...) tensor, padding when pad.enabled;
/// throws ValueError naming the column and both shapes for ragged rows without padding.
Tensor stack_column(const std::vector<Tensor>& items, const PadSpec& pad,
                    const std::string& column);

/// The (seed, row id) of the row a map worker is transforming on this thread, for Python
/// transforms that want reproducible randomness; {0, 0, false} outside a map.
struct RowContext {
  uint64_t seed = 0;
  uint64_t row_id = 0;
  bool active = false;
};
RowContext current_row();

/// One op's counters (counted only while the profiler is on): rows it produced, the time its
/// consumer waited in pop (inline ops: their children's waits included), its output queues.
struct OpStats {
  int pipeline = 0, op_id = 0, parent = -1;  // op_id -1: the prefetch queue; parent -2: none
  std::string name;
  int64_t rows = 0, wait_ns = 0, queued = 0, capacity = 0;
};
/// Every running pipeline's counters, then those of pipelines that stopped since the last call
/// while the profiler was on.
std::vector<OpStats> pipeline_stats();

/// A running pipeline: the root's output behind a prefetch queue filled by its own thread.
class Pipeline {
 public:
  enum class Status { kRow, kEpochEnd, kEnd, kTimeout };
  /// Builds and starts: num_epochs of the root (-1 forever), seed for every random choice.
  /// With on_consumer, a tree that can (Op::can_run_on_consumer) runs with no thread of its
  /// own: next() computes each batch on the caller's thread and the OpenMP pool (a training
  /// loop that waits for each batch anyway, so the pipeline never competes with the step for
  /// the cores); other trees run on their threads as usual. With a lookahead (MYCEL_DATA_LOOKAHEAD,
  /// by default 1 under OMP_WAIT_POLICY=PASSIVE: pipeline.cc) such a tree runs instead on one
  /// builder thread that many batches ahead, in the time the step's sleeping threads leave idle.
  Pipeline(std::shared_ptr<Op> root, int64_t num_epochs, uint64_t seed, size_t prefetch,
           bool on_consumer = false);
  ~Pipeline();
  /// Waits up to timeout_ms (< 0: forever) for the next packet; rethrows a worker's error.
  /// On the consumer without a lookahead it computes the packet and never times out.
  Status next(Row& row, int64_t timeout_ms);
  /// Whether the on_consumer mode took effect: the tree runs as one pool, on the consumer's
  /// thread or on its one builder thread.
  bool on_consumer() const { return tree_on_consumer_; }
  /// Aborts and joins every thread; idempotent.
  void stop();
  /// Appends the counters of this pipeline's prefetch queue and ops (pre-order).
  void stats(std::vector<OpStats>& out) const;

 private:
  std::unique_ptr<ExecContext> ctx_;
  int id_ = 0;
  std::atomic<int64_t> rows_{0}, wait_ns_{0};  // the iterator's side (read by stats())
  std::shared_ptr<Op> root_;
  std::unique_ptr<Queue<Packet>> out_;
  std::thread prefetch_;
  bool stopped_ = false, ended_ = false, tree_on_consumer_ = false;
};

}  // namespace mycel::data::engine
