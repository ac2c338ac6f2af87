// Insight: summaries written as TensorBoard event files by a background thread, the queue that
// summary ops fill from inside compiled steps, and the profiler's event buffer. The one header
// other folders include; protobuf stays inside src/mycel/insight.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::insight {

/// What a summary value is drawn as (MindSpore's plugin names "scalar", "image", ...).
enum class SummaryKind : uint8_t { kScalar, kImage, kHistogram, kTensor };
const char* kind_name(SummaryKind k);
/// "scalar" | "image" | "histogram" | "tensor"; `who` names the caller in the error.
SummaryKind kind_from_name(std::string_view plugin, const char* who);
/// Checks that a value of this shape/dtype can be drawn as `k` (scalar: one element; image: 4-D
/// NCHW with 1, 3 or 4 channels); the error names `who` and the tag.
void check_value(SummaryKind k, const std::string& tag, const TensorMeta& m, const char* who);

/// One named value of one step. The tensor is owned (a copy), so the step may reuse its buffer.
struct SummaryValue {
  SummaryKind kind;
  std::string tag;
  Tensor value;
};

/// Writes one event file: each write() is queued and the step returns at once; a writer thread
/// encodes (histogram buckets, PNG, protobuf) and appends TFRecords. The queue holds at most
/// `max_pending` events: a writer that falls that far behind makes write() wait (memory stays
/// bounded). Errors of the thread (disk full) are raised by the next write/flush/close.
class EventWriter {
 public:
  explicit EventWriter(const std::string& path, size_t max_pending = 256);
  ~EventWriter();  // close(), errors swallowed
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  /// Queues one Event with these values at `step` (wall_time: seconds since the epoch).
  void write(int64_t step, double wall_time, std::vector<SummaryValue> values);
  /// Queues one Event already serialized (a graph: graph_event), written in turn with the rest.
  void write_event(std::string serialized);
  /// Returns when every queued event is in the file (handed to the OS).
  void flush();
  /// flush(), then stops the thread and closes the file; later writes raise.
  void close();
  const std::string& path() const;
  /// Events written to the file so far, and times write() had to wait for a full queue.
  uint64_t num_written() const;
  uint64_t num_waits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One value of an Event read back from a file (the fields of its kind are set).
struct ReadValue {
  std::string tag;
  SummaryKind kind = SummaryKind::kScalar;
  double scalar = 0;                                           // kScalar
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;  // kHistogram
  std::vector<double> bucket_limit, bucket;                    // kHistogram
  int height = 0, width = 0, channels = 0;                     // kImage
  std::string png;                                             // kImage: the encoded image
  Tensor tensor;                                               // kTensor
};
/// One Event read back: step, wall time, its summary values (none for the version record).
struct ReadEvent {
  int64_t step = 0;
  double wall_time = 0;
  std::vector<ReadValue> values;
  std::string graph_def;  // a graph event: the serialized GraphDef (decode_graph_def)
};
/// Reads an event file (ours or TensorBoard's): every complete record whose CRCs check, in
/// order. A torn or corrupt tail ends the read (`*complete` false), as TensorBoard's reader does;
/// values of kinds Mycel does not draw (audio) are skipped.
std::vector<ReadEvent> read_event_file(const std::string& path, bool* complete = nullptr);

/// An attribute of a graph node, as TensorBoard's AttrValue holds it: s, i, f, b, type, or a list
/// of ints, floats, strings, types or shapes (a shape's unknown dim is -1).
using GraphAttr = std::variant<std::string, int64_t, double, bool, DType, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, std::vector<DType>,
                               std::vector<std::vector<int64_t>>>;
/// One node of a computation graph summary: its scoped name ("Default/conv1/Conv2D-op3"), op,
/// the names of its inputs, and attributes (sorted by name when read back).
struct GraphNode {
  std::string name, op;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, GraphAttr>> attrs;
};
/// A serialized Event whose graph_def is the GraphDef of `nodes` (TensorBoard's graph plugin).
std::string graph_event(int64_t step, double wall_time, const std::vector<GraphNode>& nodes);
/// The nodes of a serialized GraphDef; raises ValueError when the bytes do not parse.
std::vector<GraphNode> decode_graph_def(const std::string& bytes);

/// Where summary ops put their values, for SummaryRecord.record to take. Bounded by keeping only
/// the latest value per (kind, tag), as MindSpore does; when no SummaryRecord is open the ops
/// cost one atomic load and keep nothing.
class SummaryQueue {
 public:
  static SummaryQueue& get();
  bool active() const { return listeners_.load(std::memory_order_relaxed) > 0; }
  void attach() { listeners_.fetch_add(1); }
  void detach();
  /// Keeps a copy of `value` (called by the ops' kernels, eager or compiled).
  void push(SummaryKind k, const std::string& tag, const Tensor& value);
  /// Everything pushed since the last take, in first-push order.
  std::vector<SummaryValue> take();

 private:
  std::atomic<int> listeners_{0};
  std::mutex mu_;
  std::vector<SummaryValue> values_;
};

/// Hooks of kernel launches (the Program executor and eager dispatch): the profiler and the
/// debugger. Off, a launch pays one relaxed atomic load and a branch on g_hooks.
enum HookBits : uint8_t { kProfileHook = 1, kDebugHook = 2 };
inline std::atomic<uint8_t> g_hooks{0};
inline bool hooks_on() { return g_hooks.load(std::memory_order_relaxed) != 0; }

/// The profiler's event buffer, filled while it is on.
namespace profiler {
inline bool on() { return (g_hooks.load(std::memory_order_relaxed) & kProfileHook) != 0; }
/// Monotonic clock in nanoseconds (steady_clock).
int64_t now_ns();
/// One kernel launch: op name, start/end on now_ns()'s clock, bytes of its outputs, thread.
struct OpEvent {
  std::string name;
  int64_t start_ns, end_ns, bytes;
  uint32_t thread;
};
/// Called by launch sites while on().
void record(const std::string& name, int64_t start_ns, int64_t end_ns, int64_t bytes);
void start();  // clears the buffer and turns timing on
void stop();
/// The events recorded since start(), in launch order per thread.
std::vector<OpEvent> take();
}  // namespace profiler

/// The debugger's watch conditions, checked on every kernel output while it is on (MindInsight's
/// watchpoints: NaN, infinity, values too large).
namespace debugger {
inline bool on() { return (g_hooks.load(std::memory_order_relaxed) & kDebugHook) != 0; }
struct Watch {
  bool nan = true, inf = true;
  double max_abs = 0;  // > 0: also flag |x| > max_abs
  bool raise = true;   // the launch that hits a condition raises (the step stops there)
};
/// One output that hit a condition: op, where (graph mode: file:line and source), condition,
/// which output, how many elements of how many.
struct Hit {
  std::string op, where, condition;
  int output;
  int64_t count, numel;
};
void start(const Watch& w);
void stop();
std::vector<Hit> take();
/// Checks the outputs of one launch of `op`; `where` is called only on a hit (it builds the
/// source location). Raises RuntimeError on a hit when the watch says so.
void check(const std::string& op, const std::vector<Tensor>& outputs,
           const std::function<std::string()>& where);
}  // namespace debugger

/// A launch with the hooks on: times it (profiler) and checks its outputs (debugger).
template <class Launch>
void hooked_launch(const std::string& op, const std::vector<Tensor>& outputs, Launch&& launch,
                   const std::function<std::string()>& where) {
  const bool prof = profiler::on();
  const int64_t t0 = prof ? profiler::now_ns() : 0;
  launch();
  if (prof) {
    const int64_t t1 = profiler::now_ns();
    int64_t bytes = 0;
    for (const Tensor& o : outputs) bytes += static_cast<int64_t>(o.nbytes());
    profiler::record(op, t0, t1, bytes);
  }
  if (debugger::on()) debugger::check(op, outputs, where);
}

}  // namespace mycel::insight
