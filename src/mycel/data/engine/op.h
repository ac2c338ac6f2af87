// Pipeline operators. Each op's output is a stream of packets: rows, an end-of-epoch marker after
// each epoch, and an end-of-data marker after the last epoch. Heavy ops (sources, map, batch) run
// a dispatcher thread plus N workers joined by per-worker bounded queues; the consumer reads the
// workers' outputs round-robin, which restores the input order. Light ops (shuffle, repeat, take,
// skip, project, zip, concat) run inline on their consumer's thread.
#pragma once
#include <atomic>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mycel/data/engine/queue.h"
#include "mycel/data/source.h"

namespace mycel::data::engine {

enum class Kind : uint8_t { kRow, kEoe, kEof, kError };

/// One element of an op's output stream. A worker's failure travels as a kError packet in its
/// place in the stream, so the error the user sees is the first one in output order, whatever
/// worker happened to fail first.
struct Packet {
  Kind kind = Kind::kRow;
  Row row;
  std::exception_ptr error;
};

/// A seed for (pipeline seed, op, epoch): splitmix64 of the three, so streams never overlap.
uint64_t mix_seed(uint64_t seed, uint64_t op_id, uint64_t epoch);

/// Base of every operator.
class Op {
 public:
  explicit Op(std::vector<std::shared_ptr<Op>> children = {}) : children_(std::move(children)) {}
  virtual ~Op() = default;
  virtual std::string name() const = 0;
  const std::vector<std::shared_ptr<Op>>& children() const { return children_; }

  /// Before start: sets the context, this op's id (pre-order) and how many epochs it will produce
  /// (-1: forever); children get child_epochs(epochs).
  void prepare(ExecContext* ctx, int64_t epochs, int& next_id);
  /// Starts this op's threads (and its children's).
  virtual void start();
  /// Joins this op's threads (and its children's); call after ExecContext::abort().
  virtual void join();
  /// Next packet of the output stream (called from one consumer thread); false when aborted.
  /// A kError packet ends the stream: the consumer forwards it, so the rows before it still
  /// reach the iterator before the error does.
  virtual bool pop(Packet& p) = 0;
  /// pop() as parents call it: while the profiler is on, also counts rows and the time the
  /// consumer waited (MindInsight's per-stage throughput); off, one branch more than pop().
  bool next(Packet& p);
  /// Items waiting in this op's output queues, and their capacity (0, 0: an inline op).
  virtual void queued(int64_t* size, int64_t* capacity) const {
    *size = 0;
    *capacity = 0;
  }
  /// Whether pop() would return at once (called from the consumer thread); false when unknown.
  virtual bool ready() const { return false; }
  /// Whether this op and everything under it can run on its consumer's thread with no thread of
  /// its own (Pipeline's on-consumer mode: one pool). Only C++ work that never blocks qualifies;
  /// inline ops opt in when their children can.
  virtual bool can_run_on_consumer() const { return false; }
  /// Before start: switches this op and its children to running on the consumer's thread (only
  /// after can_run_on_consumer() said yes).
  virtual void set_on_consumer() {
    for (auto& c : children_) c->set_on_consumer();
  }
  int op_id() const { return op_id_; }
  int64_t rows_out() const { return rows_out_.load(std::memory_order_relaxed); }
  int64_t wait_ns() const { return wait_ns_.load(std::memory_order_relaxed); }

 protected:
  virtual int64_t child_epochs(int64_t epochs) const { return epochs; }
  /// For inline ops: whether every child can run on the consumer.
  bool children_can_run_on_consumer() const {
    for (const auto& c : children_)
      if (!c->can_run_on_consumer()) return false;
    return true;
  }
  virtual void on_prepare() {}
  ExecContext* ctx_ = nullptr;
  int op_id_ = 0;
  int64_t epochs_ = -1;
  std::vector<std::shared_ptr<Op>> children_;

 private:
  std::atomic<int64_t> rows_out_{0}, wait_ns_{0};  // written by the one consumer thread
};

/// A unit of work handed from a dispatcher to a worker.
struct Job {
  Kind kind = Kind::kRow;
  int64_t epoch = 0;
  int64_t id = 0;     // position in the epoch of this op's input (map) or output (source, batch)
  int64_t index = 0;  // source row index
  std::vector<Row> rows;
  std::exception_ptr error;  // kind == kError: an upstream error forwarded in its row's position
};

/// An op with a dispatcher thread and `workers` worker threads that keeps order. Jobs travel in
/// chunks of up to `chunk` rows (one queue hand-over, one wake-up per chunk: per-row hand-overs
/// between threads cost more than cheap per-row work); a chunk goes out when full, with a
/// marker, or when the dispatcher would otherwise wait for its child (pull), so no row waits in
/// a partial chunk while its thread sleeps.
class ParallelOp : public Op {
 public:
  ParallelOp(int workers, std::vector<std::shared_ptr<Op>> children, int chunk = 1);
  ~ParallelOp() override;
  void start() override;
  void join() override;
  bool pop(Packet& p) override;
  void queued(int64_t* size, int64_t* capacity) const override;
  bool ready() const override;
  void set_on_consumer() override;

 protected:
  /// On-consumer mode: the next packet, computed on the calling thread (no dispatcher, no
  /// workers); a row's failure comes back as a kError packet, as a worker's would.
  virtual bool pop_direct(Packet&) { return false; }
  bool on_consumer() const { return on_consumer_; }
  /// Runs on the dispatcher thread: produce jobs with send() until end of data or abort.
  virtual void dispatch() = 0;
  /// Runs on a worker thread for each row job; may throw (the error reaches the iterator).
  virtual Row work(Job& job, int worker) = 0;
  /// Hands a job to the next worker in round-robin order (chunked); false when aborted.
  bool send(Job job);
  /// The child's next packet (dispatcher thread), handing over the pending chunk first when the
  /// child has none ready.
  bool pull(Packet& p);
  int workers() const { return n_; }

 private:
  void run_dispatch();
  void run_worker(int w);
  bool flush();
  int n_, chunk_;
  bool on_consumer_ = false;
  std::vector<std::unique_ptr<Queue<std::vector<Job>>>> in_;
  std::vector<std::unique_ptr<Queue<std::vector<Packet>>>> out_;
  std::vector<std::thread> threads_;
  int64_t next_in_ = 0, next_out_ = 0;
  std::vector<Job> pending_;    // the dispatcher's chunk being filled
  std::vector<Packet> popped_;  // the consumer's chunk being read, from popped_at_
  size_t popped_at_ = 0;
};

/// Rows a worker's queues hold (bounded so fast producers cannot run far ahead): chunks of
/// `chunk` rows, at least two chunks per queue.
inline constexpr size_t kWorkerQueueSize = 8;
/// The chunk of the per-row ops (sources, map): 8 rows per hand-over.
inline constexpr int kRowChunk = 8;

}  // namespace mycel::data::engine
