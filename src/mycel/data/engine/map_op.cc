// map: applies a chain of transforms to selected columns on parallel workers. Each row's RowRng
// is keyed by (seed, op, epoch) with the row's position in the epoch as its counter, so random
// transforms give the same result whatever worker runs them. Runs of fusable image transforms
// run as one pass (vision/pixel_chain.h).
#include "mycel/data/engine/map_op.h"

#include "mycel/core/rethrow.h"
#include "mycel/data/string_tensor.h"

namespace mycel::data::engine {
namespace {
thread_local RowContext t_row;
}  // namespace

MapOp::MapOp(std::shared_ptr<Op> child, TransformList ts, std::vector<int64_t> in, Layout layout,
             int workers)
    : ParallelOp(workers, {std::move(child)}, kRowChunk),
      ts_(std::move(ts)),
      segs_(vision::fuse_transforms(ts_)),
      in_(std::move(in)),
      layout_(std::move(layout)) {
  for (int64_t l : layout_)
    if (l < 0) n_out_ = std::max<int64_t>(n_out_, -l);
}

void MapOp::start() {
  if (inline_)
    Op::start();
  else
    ParallelOp::start();
}

void MapOp::join() {
  if (inline_)
    Op::join();
  else
    ParallelOp::join();
}

bool MapOp::pop(Packet& p) { return inline_ ? children_[0]->next(p) : ParallelOp::pop(p); }

bool MapOp::ready() const { return inline_ ? children_[0]->ready() : ParallelOp::ready(); }

void MapOp::queued(int64_t* size, int64_t* capacity) const {
  if (inline_)
    Op::queued(size, capacity);
  else
    ParallelOp::queued(size, capacity);
}

const vision::PixelChain* MapOp::sole_chain() const {
  if (segs_.size() != 1 || !segs_[0].chain || in_.size() != 1 || n_out_ != 1) return nullptr;
  return segs_[0].chain.get();
}

void MapOp::dispatch() {
  int64_t epoch = 0, id = 0;
  Packet p;
  while (pull(p)) {
    Job j;
    j.kind = p.kind;
    j.error = p.error;
    j.epoch = epoch;
    j.id = id++;
    if (p.kind == Kind::kRow) j.rows.push_back(std::move(p.row));
    if (p.kind == Kind::kEoe) ++epoch, id = 0;
    if (!send(std::move(j)) || p.kind == Kind::kEof || p.kind == Kind::kError) return;
  }
}

Row MapOp::work(Job& job, int) { return transform(std::move(job.rows[0]), job.epoch, job.id); }

Row MapOp::transform(Row row, int64_t epoch, int64_t id) const {
  std::vector<Tensor> cols;
  cols.reserve(in_.size());
  for (int64_t c : in_) {
    MYCEL_CHECK(c < static_cast<int64_t>(row.size()), IndexError, "map: input column ", c,
                " out of range for a row of ", row.size(), " columns");
    cols.push_back(row[c]);
  }
  uint64_t seed = mix_seed(ctx_->seed(), op_id_, epoch);
  for (const vision::ChainSegment& seg : segs_) {
    if (seg.chain && seg.chain->apply(cols, cols)) continue;
    for (size_t i = seg.begin; i < seg.end; ++i) {  // one by one (a chain that declined too)
      RowRng rng(seed, id, static_cast<uint32_t>(i));
      t_row = {seed ^ (0x9E3779B97F4A7C15ull * (i + 1)), static_cast<uint64_t>(id), true};
      try {
        if (!ts_[i]->takes_strings())
          for (const Tensor& c : cols)
            check_not_string(c, ts_[i]->name(),
                             "it takes numeric arrays only (use a "
                             "mycel.dataset.text transform or a Python function for strings)");
        cols = ts_[i]->apply(cols, rng);
      } catch (...) {
        t_row.active = false;
        rethrow_with_context("map: operation " + std::to_string(i) + " (" + ts_[i]->name() + "): ");
      }
      t_row.active = false;
    }
  }
  MYCEL_CHECK(static_cast<int64_t>(cols.size()) == n_out_, ValueError,
              "map: the operations returned ", cols.size(), " columns but output_columns names ",
              n_out_);
  Row out;
  out.reserve(layout_.size());
  for (int64_t l : layout_) out.push_back(l >= 0 ? row[l] : cols[-l - 1]);
  return out;
}

RowContext current_row() { return t_row; }

std::shared_ptr<Op> map_op(std::shared_ptr<Op> child, TransformList transforms,
                           std::vector<int64_t> input_columns, Layout layout, int workers) {
  return std::make_shared<MapOp>(std::move(child), std::move(transforms), std::move(input_columns),
                                 std::move(layout), workers);
}

}  // namespace mycel::data::engine
