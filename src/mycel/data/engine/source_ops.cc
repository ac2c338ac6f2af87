// Leaf ops: a random-access Source read by parallel workers in sampler order, and a one-pass
// stream (Python iterable) read by its dispatcher thread.
#include <algorithm>
#include <cstdlib>

#include "mycel/data/engine/engine.h"

namespace mycel::data::engine {
namespace {

// How far ahead of the consumer's reads a source is told of its rows (Source::prefetch): far
// enough for a memory read to finish, near enough for the rows to still be cached.
// MYCEL_DATA_PREFETCH_ROWS=k sets it (0: no hints), read when the pipeline is built.
int64_t prefetch_ahead() {
  const char* v = std::getenv("MYCEL_DATA_PREFETCH_ROWS");
  if (v == nullptr || *v == '\0') return 4;
  return std::max<int64_t>(0, std::atoll(v));
}

class SourceOp : public ParallelOp {
 public:
  SourceOp(std::shared_ptr<Source> src, SamplerSpec spec, int workers)
      : ParallelOp(workers, {}, kRowChunk), src_(std::move(src)), spec_(std::move(spec)) {
    check_sampler(spec_, src_->size());
  }
  std::string name() const override { return "source"; }
  bool can_run_on_consumer() const override { return true; }

 protected:
  // On the consumer: the same sampler order as dispatch(), one row per call.
  bool pop_direct(Packet& p) override {
    p = Packet();
    if (at_ < 0) {  // between epochs
      if (epochs_ >= 0 && epoch_ >= epochs_) {
        if (eof_sent_) return false;
        eof_sent_ = true;
        p.kind = Kind::kEof;
        return true;
      }
      order_ = sampler_indices(spec_, src_->size(), mix_seed(ctx_->seed(), op_id_, 0), epoch_);
      at_ = 0;
    }
    if (at_ < static_cast<int64_t>(order_.size())) {
      // A shuffled in-memory source reads rows at random: the row ahead_ places on
      // starts coming into the cache while this one and the next are transformed
      if (ahead_ > 0 && at_ + ahead_ < static_cast<int64_t>(order_.size()))
        src_->prefetch(order_[static_cast<size_t>(at_ + ahead_)]);
      p.row = src_->get(order_[static_cast<size_t>(at_++)]);
      return true;
    }
    at_ = -1;
    ++epoch_;
    p.kind = Kind::kEoe;
    return true;
  }

  void dispatch() override {
    uint64_t key = mix_seed(ctx_->seed(), op_id_, 0);
    int64_t n = src_->size();
    for (int64_t e = 0; epochs_ < 0 || e < epochs_; ++e) {
      std::vector<int64_t> idx = sampler_indices(spec_, n, key, e);
      for (size_t i = 0; i < idx.size(); ++i) {
        Job j;
        j.epoch = e;
        j.id = static_cast<int64_t>(i);
        j.index = idx[i];
        if (!send(std::move(j))) return;
      }
      Job eoe;
      eoe.kind = Kind::kEoe;
      if (!send(std::move(eoe))) return;
    }
    Job eof;
    eof.kind = Kind::kEof;
    send(std::move(eof));
  }
  Row work(Job& job, int) override { return src_->get(job.index); }

 private:
  std::shared_ptr<Source> src_;
  SamplerSpec spec_;
  // pop_direct's cursor: the epoch, its sampler order and the next position (-1: not loaded).
  int64_t epoch_ = 0, at_ = -1;
  std::vector<int64_t> order_;
  bool eof_sent_ = false;
  int64_t ahead_ = prefetch_ahead();
};

class StreamOp : public ParallelOp {
 public:
  StreamOp(std::shared_ptr<StreamFactory> f, int64_t num_samples)
      : ParallelOp(1, {}), factory_(std::move(f)), num_samples_(num_samples) {}
  std::string name() const override { return "generator"; }

 protected:
  void dispatch() override {
    for (int64_t e = 0; epochs_ < 0 || e < epochs_; ++e) {
      std::unique_ptr<RowStream> s = factory_->open(e);
      Row row;
      for (int64_t i = 0;
           (num_samples_ < 0 || i < num_samples_) && !ctx_->aborted() && s->next(row); ++i) {
        Job j;
        j.epoch = e;
        j.id = i;
        j.rows.push_back(std::move(row));
        row = Row();
        if (!send(std::move(j))) return;
      }
      s.reset();
      Job eoe;
      eoe.kind = Kind::kEoe;
      if (!send(std::move(eoe))) return;
    }
    Job eof;
    eof.kind = Kind::kEof;
    send(std::move(eof));
  }
  Row work(Job& job, int) override { return std::move(job.rows[0]); }

 private:
  std::shared_ptr<StreamFactory> factory_;
  int64_t num_samples_;
};

}  // namespace

std::shared_ptr<Op> source_op(std::shared_ptr<Source> source, SamplerSpec sampler, int workers) {
  return std::make_shared<SourceOp>(std::move(source), std::move(sampler), workers);
}

std::shared_ptr<Op> stream_op(std::shared_ptr<StreamFactory> factory, int64_t num_samples) {
  return std::make_shared<StreamOp>(std::move(factory), num_samples);
}

}  // namespace mycel::data::engine
