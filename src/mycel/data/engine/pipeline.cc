// Pipeline: prepares the op tree (ids, epoch counts), starts every thread, and serves the root's
// output through a bounded prefetch queue; stop() aborts every wait and joins every thread.
#include <pthread.h>
#include <sched.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "mycel/core/parallel.h"
#include "mycel/data/engine/engine.h"
#include "mycel/insight/insight.h"

namespace mycel::data::engine {

namespace {
// Running pipelines, for the profiler's per-stage counters (pipeline_stats), and the final
// counters of those that ended since the last look.
struct Live {
  std::mutex mu;
  std::vector<Pipeline*> running;
  std::vector<OpStats> finished;
  int next_id = 0;
};
Live& live() {
  static Live l;
  return l;
}

// Batches an on-consumer tree builds ahead of its consumer on one builder thread of its own
// (MYCEL_DATA_LOOKAHEAD=k; 0: none, each batch built inside next()). Unset, it follows the
// OpenMP wait policy: 1 under OMP_WAIT_POLICY=PASSIVE, whose threads sleep in each of the step's
// ~46 barriers and leave the cores idle for the builder (LeNet5 epoch under chrt: the wait for
// a batch 0.20 -> 0.02-0.04 ms a step, 6-13% faster); 0 with spinning waits, where the builder
// found no idle core and the wait stayed (bench/bench_epoch_lookahead.py, docs/training.md).
// Read per pipeline, so that one process can alternate the two.
int lookahead_depth() {
  const char* s = std::getenv("MYCEL_DATA_LOOKAHEAD");
  if (!s || !*s) {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    return policy && strcasecmp(policy, "passive") == 0 ? 1 : 0;
  }
  const int v = std::atoi(s);
  return v < 0 ? 0 : (v > 64 ? 64 : v);
}

void collect(int pipeline, int parent, const Op& op, std::vector<OpStats>& out) {
  OpStats s;
  s.pipeline = pipeline;
  s.op_id = op.op_id();
  s.parent = parent;
  s.name = op.name();
  s.rows = op.rows_out();
  s.wait_ns = op.wait_ns();
  op.queued(&s.queued, &s.capacity);
  out.push_back(std::move(s));
  for (const auto& c : op.children()) collect(pipeline, op.op_id(), *c, out);
}
}  // namespace

void Pipeline::stats(std::vector<OpStats>& out) const {
  OpStats s;  // the prefetch queue between the root and the iterator (or the sink loop)
  s.pipeline = id_;
  s.op_id = -1;
  s.parent = -2;
  s.name = "prefetch";
  s.rows = rows_;
  s.wait_ns = wait_ns_;
  s.queued = out_ ? static_cast<int64_t>(out_->size()) : 0;
  s.capacity = out_ ? static_cast<int64_t>(out_->capacity()) : 0;
  out.push_back(std::move(s));
  collect(id_, -1, *root_, out);
}

std::vector<OpStats> pipeline_stats() {
  Live& l = live();
  std::lock_guard lock(l.mu);
  std::vector<OpStats> out;
  out.swap(l.finished);
  for (const Pipeline* p : l.running) p->stats(out);
  return out;
}

Pipeline::Pipeline(std::shared_ptr<Op> root, int64_t num_epochs, uint64_t seed, size_t prefetch,
                   bool on_consumer)
    : ctx_(std::make_unique<ExecContext>(seed)), root_(std::move(root)) {
  int next_id = 0;
  root_->prepare(ctx_.get(), num_epochs, next_id);
  on_consumer = on_consumer && root_->can_run_on_consumer();
  const int ahead = on_consumer ? lookahead_depth() : 0;
  tree_on_consumer_ = on_consumer;
  if (on_consumer) root_->set_on_consumer();
  if (!on_consumer || ahead > 0)
    out_ = std::make_unique<Queue<Packet>>(ctx_.get(), on_consumer ? ahead : prefetch);
  root_->start();
  {
    Live& l = live();
    std::lock_guard lock(l.mu);
    id_ = l.next_id++;
    l.running.push_back(this);
  }
  if (!out_) return;
  prefetch_ = std::thread([this, builder = on_consumer] {
    // A builder thread runs the one-pool tree: its kernels stay on this thread (a parallel
    // region here would start a second OpenMP team beside the step's).
    std::optional<SerialScope> serial;
    if (builder) {
      serial.emplace(-1);
      // Never above the step's threads: under a real-time training loop (chrt) the builder
      // runs as an ordinary thread, in the time the step leaves idle.
      int policy = 0;
      sched_param sp{};
      if (pthread_getschedparam(pthread_self(), &policy, &sp) == 0 &&
          (policy == SCHED_FIFO || policy == SCHED_RR)) {
        sched_param other{};
        pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
      }
    }
    try {
      Packet p;
      while (root_->next(p)) {
        bool last = p.kind == Kind::kEof || p.kind == Kind::kError;
        if (!out_->push(std::move(p)) || last) return;
      }
    } catch (...) {
      if (builder) {  // after the batches already built, as next() on the consumer would
        Packet err;
        err.kind = Kind::kError;
        err.error = std::current_exception();
        if (out_->push(std::move(err))) return;
      }
      ctx_->fail(std::current_exception());
    }
  });
}

Pipeline::~Pipeline() { stop(); }

Pipeline::Status Pipeline::next(Row& row, int64_t timeout_ms) {
  if (ended_) return Status::kEnd;
  Packet p;
  const bool prof = insight::profiler::on();
  const int64_t t0 = prof ? insight::profiler::now_ns() : 0;
  Queue<Packet>::Status st;
  if (out_) {
    st = out_->pop_for(p, timeout_ms);
  } else {  // on the consumer: the root computes the packet here (a failure as a kError)
    try {
      st = root_->next(p) ? Queue<Packet>::Status::kOk : Queue<Packet>::Status::kAborted;
    } catch (...) {
      ctx_->fail(std::current_exception());
      st = Queue<Packet>::Status::kAborted;
    }
  }
  if (prof) {  // the step trace's data wait: the consumer (a step) blocked on the pipeline
    const int64_t t1 = insight::profiler::now_ns();
    insight::profiler::span("data_wait", "data_wait", t0, t1,
                            out_ ? static_cast<int64_t>(out_->size()) : 0);
    wait_ns_ += t1 - t0;
    if (st == Queue<Packet>::Status::kOk && p.kind == Kind::kRow) ++rows_;
  }
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
  {
    Live& l = live();
    std::lock_guard lock(l.mu);
    if (insight::profiler::on()) stats(l.finished);
    l.running.erase(std::remove(l.running.begin(), l.running.end(), this), l.running.end());
  }
  ctx_->abort();
  if (prefetch_.joinable()) prefetch_.join();
  root_->join();
}

}  // namespace mycel::data::engine
