// PyNative recording for grad: while a Recorder is active on a thread, every eager op execution
// (and every @jit call) is appended to a top-level IR graph, so the eager function's gradient
// comes from the same J transform as graph mode (DESIGN.md section 1: one autodiff, no tape).
//
// Tensors map to nodes by identity (storage, offset, shape, dtype); the map holds each tensor so
// its storage cannot be freed and its address reused while recording. Graph parameters, in order:
// the grad call's arguments, then "captured" tensors (read by a recorded op but produced outside
// the recording: constants, batches held in closures, numpy-made tensors), then the weights
// (Parameters bound to their tensors, the graph-mode convention). Captured tensors are run-time
// inputs rather than Constants so that a loop whose closure reads a new batch every step reuses
// one compiled program and sees the new values; no gradient is asked for them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::pynative {

/// One op input as eager dispatch saw it: a tensor, or a compile-time value (a Python scalar or
/// None, which become Constants exactly as the parser would emit them).
struct RecordedArg {
  Tensor tensor;
  ir::ValuePtr value;  // set instead of tensor for scalars and None
};

/// A finished recording: the graph, its run-time inputs and a structural key for the cache.
struct Recording {
  std::unique_ptr<ir::Module> module;
  ir::FuncGraph* graph = nullptr;
  std::string key;                               // op names, attrs, wiring, parameter abstracts
  std::vector<ir::AbstractPtr> input_abstracts;  // non-weight parameters: arguments, captured
  size_t num_arguments = 0;
  std::vector<Tensor> captured;    // fed after the arguments at run time
  std::vector<int> weight_params;  // parameter indices of the weights, in given order
  std::vector<std::shared_ptr<void>> keep_alive;  // owners of graphs called by the recording
};

/// Records eager ops of one grad call into a graph. Not copyable; at most one active per thread.
class Recorder {
 public:
  explicit Recorder(const std::string& name);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// The recorder active on this thread, or nullptr (the eager fast path checks this).
  static Recorder* current();
  /// Makes this the thread's recorder; NotSupported if one is active already (nested grad).
  void activate();
  void deactivate();

  /// A grad-call argument: a tensor (mapped to its parameter) or any other value's abstract.
  void add_argument(const Tensor& t, const std::string& name);
  void add_argument_value(ir::AbstractPtr abs, const std::string& name);
  /// A weight: a parameter bound to the tensor (gradients w.r.t. it are returned).
  void add_weight(const Tensor& t, const std::string& name);

  /// The node of an input: the op or parameter that produced the tensor, a new captured input,
  /// or a Constant for a value.
  ir::NodePtr input(const RecordedArg& a);
  /// A captured input fed with `t` that no tensor maps to (inputs an op mutates in place).
  ir::NodePtr capture_copy(const Tensor& t);
  /// Appends op(inputs) with its attributes and maps each output tensor to its node. An output
  /// identical to a tensor already mapped (a view op that changed nothing: stop_gradient, a
  /// reshape to the same shape) is replaced by a copy, so the two stay distinct values.
  void record_op(const OpDef& op, const Attrs& attrs, const std::vector<RecordedArg>& inputs,
                 std::vector<Tensor>& outputs);
  /// Appends a call of graph `callee` (owned elsewhere: `owner` is kept alive with the recording).
  ir::NodePtr record_call(ir::FuncGraph* callee, std::vector<ir::NodePtr> args,
                          std::shared_ptr<void> owner);
  /// tuple_getitem(n, i) and make_tuple(items), recorded like ops.
  ir::NodePtr getitem(const ir::NodePtr& n, int64_t i);
  ir::NodePtr make_tuple(std::vector<ir::NodePtr> items);
  ir::NodePtr constant(ir::ValuePtr v);
  /// Whether tensor t is mapped to a node already.
  bool knows(const Tensor& t) const { return nodes_.count(key_of(t)) > 0; }
  /// From now on, tensor t is the value of node n.
  void bind(const Tensor& t, const ir::NodePtr& n);

  /// Sets the graph's output and hands the recording over (the recorder is spent after).
  Recording finish(const ir::NodePtr& output);
  /// Nodes recorded so far (parameters and constants included).
  size_t num_nodes() const { return ids_.size(); }

 private:
  using TensorKey = std::tuple<const void*, size_t, Shape, int>;
  static TensorKey key_of(const Tensor& t);
  ir::NodePtr add_apply(std::vector<ir::NodePtr> inputs, const std::string& callee_key);
  const std::string& token(const ir::NodePtr& n);

  Recording rec_;
  bool active_ = false;
  std::vector<ir::NodePtr> arguments_, captured_params_, weights_;
  // Communicating ops recorded (collectives): kept in the gradient program even where the
  // output does not read them, as graph mode keeps a statement `send(x)`.
  std::vector<ir::NodePtr> effects_;
  std::vector<std::string> weight_keys_;
  std::map<TensorKey, std::pair<Tensor, ir::NodePtr>> nodes_;  // tensor identity -> node
  // Memory of arguments, weights and op outputs (storage start -> end), so that a tensor made
  // outside recording that aliases one of them (a raw view) is caught.
  std::map<uintptr_t, uintptr_t> recorded_memory_;
  bool aliases_recorded(const Tensor& t) const;
  std::map<const ir::Node*, std::string> ids_;  // node -> token in the key
  std::string body_key_;
};

}  // namespace mycel::pynative
