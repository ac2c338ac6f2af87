// Op plumbing: ids and epoch counts, and the ordered dispatcher/worker scheme of ParallelOp.
#include "mycel/data/engine/op.h"
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

ParallelOp::ParallelOp(int workers, std::vector<std::shared_ptr<Op>> children)
    : Op(std::move(children)), n_(workers < 1 ? 1 : workers) {}

ParallelOp::~ParallelOp() {
  // Threads must be joined by the pipeline before destruction; never let std::thread terminate.
  for (auto& t : threads_)
    if (t.joinable()) t.detach();
}

void ParallelOp::start() {
  for (int w = 0; w < n_; ++w) {
    in_.push_back(std::make_unique<Queue<Job>>(ctx_, kWorkerQueueSize));
    out_.push_back(std::make_unique<Queue<Packet>>(ctx_, kWorkerQueueSize));
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
  int w = static_cast<int>(next_in_++ % n_);
  return in_[w]->push(std::move(job));
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
  int w = static_cast<int>(next_out_++ % n_);
  // An error packet is returned like a row: aborting here would drop the good rows that
  // downstream queues still hold ahead of it.
  return out_[w]->pop(p);
}

void ParallelOp::run_dispatch() {
  try {
    dispatch();
  } catch (...) {  // after every job already sent, so it reaches the iterator in order
    Job j;
    j.kind = Kind::kError;
    j.error = std::current_exception();
    send(std::move(j));
  }
}

void ParallelOp::run_worker(int w) {
  Job job;
  while (in_[w]->pop(job)) {
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
    bool failed = p.kind == Kind::kError;
    if (!out_[w]->push(std::move(p)) || failed) return;
  }
}

}  // namespace mycel::data::engine
