// Pipeline: prepares the op tree (ids, epoch counts), starts every thread, and serves the root's
// output through a bounded prefetch queue; stop() aborts every wait and joins every thread.
#include "mycel/data/engine/engine.h"

namespace mycel::data::engine {

Pipeline::Pipeline(std::shared_ptr<Op> root, int64_t num_epochs, uint64_t seed, size_t prefetch)
    : ctx_(std::make_unique<ExecContext>(seed)), root_(std::move(root)) {
  int next_id = 0;
  root_->prepare(ctx_.get(), num_epochs, next_id);
  out_ = std::make_unique<Queue<Packet>>(ctx_.get(), prefetch);
  root_->start();
  prefetch_ = std::thread([this] {
    try {
      Packet p;
      while (root_->pop(p)) {
        bool last = p.kind == Kind::kEof || p.kind == Kind::kError;
        if (!out_->push(std::move(p)) || last) return;
      }
    } catch (...) {
      ctx_->fail(std::current_exception());
    }
  });
}

Pipeline::~Pipeline() { stop(); }

Pipeline::Status Pipeline::next(Row& row, int64_t timeout_ms) {
  if (ended_) return Status::kEnd;
  Packet p;
  auto st = out_->pop_for(p, timeout_ms);
  if (st == Queue<Packet>::Status::kTimeout) return Status::kTimeout;
  if (st == Queue<Packet>::Status::kAborted) {
    std::exception_ptr e = ctx_->error();
    ended_ = true;
    stop();
    if (e) std::rethrow_exception(e);
    return Status::kEnd;
  }
  if (p.kind == Kind::kEof) {
    ended_ = true;
    stop();
    return Status::kEnd;
  }
  if (p.kind == Kind::kEoe) return Status::kEpochEnd;
  if (p.kind == Kind::kError) {  // every row before it was delivered; now the error
    ended_ = true;
    stop();
    std::rethrow_exception(p.error);
  }
  row = std::move(p.row);
  return Status::kRow;
}

void Pipeline::stop() {
  if (stopped_) return;
  stopped_ = true;
  ctx_->abort();
  if (prefetch_.joinable()) prefetch_.join();
  root_->join();
}

}  // namespace mycel::data::engine
