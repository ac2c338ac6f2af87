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

/// The tag written for `tag`: MindSpore's kind suffix ("loss[:Scalar]", "[:Image]",
/// "[:Histogram]", "[:Tensor]") is accepted and dropped when it names kind `k`; a suffix naming
/// another kind raises ValueError naming `who`.
std::string summary_tag(SummaryKind k, const std::string& tag, const char* who);

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
  /// max_file_size > 0: a record that would take the file past it goes to a new file, named by
  /// next_path() (MindSpore's rotation); a record larger than that alone gets a file of its own.
  explicit EventWriter(const std::string& path, size_t max_pending = 256,
                       uint64_t max_file_size = 0, std::function<std::string()> next_path = {});
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
  /// The file being written (after rotations: the latest), and every file so far in order.
  std::string path() const;
  std::vector<std::string> paths() const;
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

/// What a launch site is, built once per site and profiling session (never per launch): the op,
/// where the user's code asked for it (graph mode: the IR node's source location), the weights
/// it reads (their names give the Cell scope), and whether it is a collective.
struct SiteInfo {
  std::string op;                        // fused kernels: their fused name
  std::string where;                     // "file.py:12:4", or "" (eager: Python finds it)
  std::string source;                    // that source line's text
  std::vector<std::string> weights;      // names of weight parameters among the inputs
  std::vector<std::string> input_names;  // the op's input names (OpDef), one per input slot
  bool collective = false;               // talks to other ranks (OpDef::effect, not a summary)
  bool graph = false;                    // an instruction of a compiled Program
  /// Graph mode: the label of the innermost Cell the instruction's op was inlined from ("" for
  /// the compiled Cell's own code): its attribute path from the compiled Cell names the scope.
  std::string cell;
};

/// The profiler's event buffer, filled while it is on.
namespace profiler {
inline bool on() { return (g_hooks.load(std::memory_order_relaxed) & kProfileHook) != 0; }
/// Monotonic clock in nanoseconds (steady_clock).
int64_t now_ns();
/// Incremented by each start(): per-plan site caches compare it to know they are stale.
uint32_t epoch();
/// Registers a launch site; its id indexes sites().
int32_t add_site(SiteInfo s);
/// The site with this id (valid until the next start()), or nullptr.
const SiteInfo* site(int32_t id);
/// The site of eager op `key` (an OpDef), made by `make` the first time in this session.
int32_t eager_site(const void* key, const std::function<SiteInfo()>& make);
/// One kernel launch: site, the thread's Cell scope then (-1: none), start/end on now_ns()'s
/// clock, bytes of its outputs, thread number.
struct OpEvent {
  int32_t site, scope;
  int64_t start_ns, end_ns, bytes;
  uint32_t thread;
};
/// Called by launch sites while on().
void record(int32_t site, int64_t start_ns, int64_t end_ns, int64_t bytes);
/// A span of a named track (step trace: "step", "data_wait"); value: bytes or rows (-1: none).
struct Span {
  std::string track, name;
  int64_t start_ns, end_ns, value;
  uint32_t thread;
};
void span(const char* track, const char* name, int64_t start_ns, int64_t end_ns,
          int64_t value = -1);
/// The calling thread's Cell scope stack (eager mode; Python's Cell.__call__ pushes while on).
void push_scope(const std::string& scope);
void pop_scope();
void start();  // clears the buffers and turns timing on
void stop();
/// The events and spans recorded since start(), in order per thread; sites and scopes by id.
std::vector<OpEvent> take();
std::vector<Span> take_spans();
std::vector<SiteInfo> sites();
std::vector<std::string> scopes();
}  // namespace profiler

/// The debugger: while on, every launch is handed to a callback (set by the Python glue, which
/// evaluates the watchpoints); a non-empty message returned makes the launch raise RuntimeError
/// with it (the executor adds the source line). The callback also hears of step ends.
namespace debugger {
inline bool on() { return (g_hooks.load(std::memory_order_relaxed) & kDebugHook) != 0; }
struct Launch {
  const SiteInfo* site;  // nullptr: eager op with no site info beyond `op`
  const std::string& op;
  const std::vector<Tensor>& inputs;  // as the kernel read them (copies where overwritten)
  const std::vector<Tensor>& outputs;
  const std::vector<Tensor>& launched;  // the inputs themselves (their buffers' identity)
};
using Callback = std::function<std::string(const Launch&)>;
using StepCallback = std::function<void()>;
void start(Callback on_launch, StepCallback on_step_end);
void stop();
/// The inputs, with a copy of each one whose bytes an output overlaps (a kernel that writes its
/// output over a dying input, as the memory planner allows, would change it under the report).
std::vector<Tensor> inputs_before(const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs);
/// Called after each launch while on(): raises RuntimeError with the callback's message.
void check(const Launch& l);
/// Called at the end of each outermost Program run while on().
void step_end();
}  // namespace debugger

/// A launch with the hooks on: times it (profiler) and hands it to the debugger. `site_id`
/// returns the launch site's id (the callers cache it per site and profiling session).
template <class LaunchFn, class SiteFn>
void hooked_launch(const std::string& op, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& outputs, LaunchFn&& launch, SiteFn&& site_id) {
  const bool prof = profiler::on();
  const bool dbg = debugger::on();
  std::vector<Tensor> before;  // the debugger reports inputs as the kernel read them
  if (dbg) before = debugger::inputs_before(inputs, outputs);
  const int64_t t0 = prof ? profiler::now_ns() : 0;
  launch();
  const int64_t t1 = prof ? profiler::now_ns() : 0;
  int32_t id = -1;
  if (prof) {
    int64_t bytes = 0;
    for (const Tensor& o : outputs)
      if (o.defined()) bytes += static_cast<int64_t>(o.nbytes());
    id = site_id();
    profiler::record(id, t0, t1, bytes);
  }
  if (dbg) {
    if (id < 0) id = site_id();
    debugger::check({profiler::site(id), op, before, outputs, inputs});
  }
}

}  // namespace mycel::insight
