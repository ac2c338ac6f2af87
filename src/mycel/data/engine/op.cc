// Op plumbing: ids and epoch counts, and the ordered dispatcher/worker scheme of ParallelOp.
#include "mycel/data/engine/op.h"

#include <algorithm>

#include "mycel/insight/insight.h"

namespace mycel::data::engine {

uint64_t mix_seed(uint64_t seed, uint64_t op_id, uint64_t epoch) {
  auto splitmix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  return splitmix(splitmix(splitmix(seed) ^ op_id) ^ epoch);
}

void Op::prepare(ExecContext* ctx, int64_t epochs, int& next_id) {
  ctx_ = ctx;
  op_id_ = next_id++;
  epochs_ = epochs;
  on_prepare();
  for (auto& c : children_) c->prepare(ctx, child_epochs(epochs), next_id);
}

void Op::start() {
  for (auto& c : children_) c->start();
}

void Op::join() {
  for (auto& c : children_) c->join();
}

ParallelOp::ParallelOp(int workers, std::vector<std::shared_ptr<Op>> children, int chunk)
    : Op(std::move(children)), n_(workers < 1 ? 1 : workers), chunk_(chunk < 1 ? 1 : chunk) {}

ParallelOp::~ParallelOp() {
  // Threads must be joined by the pipeline before destruction; never let std::thread terminate.
  for (auto& t : threads_)
    if (t.joinable()) t.detach();
}

void ParallelOp::set_on_consumer() {
  on_consumer_ = true;
  Op::set_on_consumer();
}

void ParallelOp::start() {
  if (on_consumer_) {  // no queues, no threads: pop() computes each packet
    Op::start();
    return;
  }
  const size_t chunks = std::max<size_t>(2, kWorkerQueueSize / static_cast<size_t>(chunk_));
  for (int w = 0; w < n_; ++w) {
    in_.push_back(std::make_unique<Queue<std::vector<Job>>>(ctx_, chunks));
    out_.push_back(std::make_unique<Queue<std::vector<Packet>>>(ctx_, chunks));
  }
  Op::start();
  for (int w = 0; w < n_; ++w) threads_.emplace_back([this, w] { run_worker(w); });
  threads_.emplace_back([this] { run_dispatch(); });
}

void ParallelOp::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  Op::join();
}

bool ParallelOp::send(Job job) {
  const bool marker = job.kind != Kind::kRow;
  pending_.push_back(std::move(job));
  if (!marker && static_cast<int>(pending_.size()) < chunk_) return !ctx_->aborted();
  return flush();
}

bool ParallelOp::flush() {
  if (pending_.empty()) return !ctx_->aborted();
  int w = static_cast<int>(next_in_++ % n_);
  std::vector<Job> chunk;
  chunk.swap(pending_);
  return in_[w]->push(std::move(chunk));
}

bool ParallelOp::pull(Packet& p) {
  if (!pending_.empty() && !children_[0]->ready() && !flush()) return false;
  return children_[0]->next(p);
}

bool ParallelOp::ready() const {
  if (on_consumer_) return false;
  return popped_at_ < popped_.size() || out_[next_out_ % n_]->size() > 0;
}

bool Op::next(Packet& p) {
  if (!insight::profiler::on()) [[likely]]
    return pop(p);
  const int64_t t0 = insight::profiler::now_ns();
  const bool ok = pop(p);
  wait_ns_.fetch_add(insight::profiler::now_ns() - t0, std::memory_order_relaxed);
  if (ok && p.kind == Kind::kRow) rows_out_.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

void ParallelOp::queued(int64_t* size, int64_t* capacity) const {
  *size = 0;
  *capacity = 0;
  for (const auto& q : out_) {
    *size += static_cast<int64_t>(q->size());
    *capacity += static_cast<int64_t>(q->capacity());
  }
}

bool ParallelOp::pop(Packet& p) {
  if (on_consumer_) {
    if (ctx_->aborted()) return false;
    try {
      return pop_direct(p);
    } catch (...) {  // as a worker's failure: in its place in the stream
      p = Packet();
      p.kind = Kind::kError;
      p.error = std::current_exception();
      return true;
    }
  }
  if (popped_at_ == popped_.size()) {
    popped_.clear();
    popped_at_ = 0;
    int w = static_cast<int>(next_out_++ % n_);
    // An error packet is returned like a row: aborting here would drop the good rows that
    // downstream queues still hold ahead of it.
    if (!out_[w]->pop(popped_)) return false;
  }
  p = std::move(popped_[popped_at_++]);
  return true;
}

void ParallelOp::run_dispatch() {
  try {
    dispatch();
    flush();       // a dispatcher that stopped early (abort) may leave rows pending: harmless
  } catch (...) {  // after every job already sent, so it reaches the iterator in order
    Job j;
    j.kind = Kind::kError;
    j.error = std::current_exception();
    send(std::move(j));
  }
}

void ParallelOp::run_worker(int w) {
  std::vector<Job> jobs;
  while (in_[w]->pop(jobs)) {
    std::vector<Packet> out;
    out.reserve(jobs.size());
    bool failed = false;
    for (Job& job : jobs) {
      Packet p;
      p.kind = job.kind;
      p.error = job.error;
      try {
        if (job.kind == Kind::kRow) p.row = work(job, w);
      } catch (...) {
        p.kind = Kind::kError;  // delivered in order by pop(); this worker stops here
        p.error = std::current_exception();
      }
      job = Job();  // drop inputs before blocking on the output queue
      failed = p.kind == Kind::kError;
      out.push_back(std::move(p));
      if (failed) break;
    }
    jobs.clear();
    if (!out_[w]->push(std::move(out)) || failed) return;
  }
}

}  // namespace mycel::data::engine
