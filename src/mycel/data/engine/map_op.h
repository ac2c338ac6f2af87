// The map op, shared with batch for map-and-batch fusion (batch_op.cc): a map directly under a
// batch without a per_batch_map runs its transforms on the batch's workers, row by row into the
// batch (tf.data's map_and_batch): no thread, queue or hand-over of its own. The map op then
// stays in the tree in inline mode, so op ids, seeds and the profiler's per-stage rows are those
// of the unfused pipeline, and passes its child's rows through.
#pragma once
#include "mycel/data/engine/engine.h"
#include "mycel/data/vision/pixel_chain.h"

namespace mycel::data::engine {

class MapOp : public ParallelOp {
 public:
  MapOp(std::shared_ptr<Op> child, TransformList ts, std::vector<int64_t> in, Layout layout,
        int workers);
  std::string name() const override { return "map"; }
  void start() override;
  void join() override;
  bool pop(Packet& p) override;
  bool ready() const override;
  void queued(int64_t* size, int64_t* capacity) const override;

  /// The map's output for input row `id` of epoch `epoch` (what a worker computes); throws the
  /// map's errors ("map: operation i (Name): ...").
  Row transform(Row row, int64_t epoch, int64_t id) const;
  /// Switches to inline mode (before the pipeline starts): no threads; pop() passes the child's
  /// rows through, counted as this op's rows.
  void set_inline() { inline_ = true; }
  /// The single fused chain that is the whole map, over one input column to one output column
  /// (then a batch can write its output in place), or nullptr.
  const vision::PixelChain* sole_chain() const;
  const std::vector<int64_t>& input_columns() const { return in_; }
  const Layout& layout() const { return layout_; }
  int worker_count() const { return workers(); }

 protected:
  void dispatch() override;
  Row work(Job& job, int) override;

 private:
  TransformList ts_;
  std::vector<vision::ChainSegment> segs_;
  std::vector<int64_t> in_;
  Layout layout_;
  int64_t n_out_ = 0;
  bool inline_ = false;
};

}  // namespace mycel::data::engine
