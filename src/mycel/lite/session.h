// The lite runtime: a loaded model, optimized once, planned once per input shape (output shapes
// from each op's infer, activation layouts (layout.h), one arena laid out by buffer lifetimes)
// and run node by node through the registry's CPU kernels. Running allocates only the returned
// outputs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mycel/kernels/cpu/dnnl_post_ops.h"
#include "mycel/kernels/cpu/infer_small.h"
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/lite/layout.h"
#include "mycel/lite/model_file.h"
#include "mycel/lite/optimize.h"
#include "mycel/lite/precision.h"

namespace mycel::lite {

struct SessionOptions {
  int num_threads = 0;         // 0: the pool's default (cores)
  bool optimize = true;        // batch_norm folding, constant folding, activation fusion
  bool blocked_layout = true;  // keep conv activations in oneDNN's preferred layout (layout.h)
  bool profile = false;        // time every node of every run (SessionStats::node_us)
  /// Small batch-1 layers (dense over <= 4 rows, 2x2 max pooling, unblocking reorders) run
  /// infer_small.h's kernels instead of a oneDNN call each.
  bool small_kernels = true;
  /// kBFloat16: weights and activations in bf16 where oneDNN runs bf16 natively (precision.h);
  /// elsewhere float32, with the reason in SessionStats::precision_note.
  Precision precision = Precision::kFloat32;
  /// With kBFloat16 on a CPU without native bf16: run the bf16 graph anyway (each bf16 conv and
  /// matmul then goes through a float32 fallback: bf16 numerics, no speed). For tests.
  bool emulate_bf16 = false;
  /// With kBFloat16: a model whose work per run at batch 1 (thread_plan.h's model_work) is below
  /// this stays float32 (its casts and bf16 kernel calls cost more than bf16's faster
  /// convolutions save); -1: the measured default (MYCEL_LITE_BF16_MIN_WORK overrides it),
  /// 0: always bf16.
  int64_t bf16_min_work = -1;
  /// Nodes whose work (thread_plan.h's multiply-add count) is below this run on one thread,
  /// decided when the session plans; -1: lite_serial_work() (MYCEL_LITE_SERIAL_WORK or the
  /// measured default), 0: every node may split.
  int64_t serial_work = -1;
};

struct SessionStats {
  size_t arena_bytes = 0;  // intermediate values, for the current plan
  size_t weight_bytes = 0;
  int num_nodes = 0;     // after optimization
  int num_plans = 0;     // input shapes planned so far
  int num_blocked = 0;   // values kept in the blocked layout under the current plan
  int num_reorders = 0;  // reorders to NCHW per run under the current plan
  int num_small = 0;     // nodes on infer_small.h's kernels under the current plan
  int num_winograd = 0;  // 3x3 convolutions on Winograd kernels (conv_winograd.h), likewise
  int num_stream = 0;    // convolutions on the streamed direct kernel (conv_stream.h), likewise
  int num_serial = 0;    // nodes planned on one thread (SessionOptions::serial_work), likewise
  int plan_threads = 0;  // the pool size the current plan was made for
  OptimizeReport optimized;
  std::string precision = "float32";  // what the session computes in
  std::string precision_note;         // why not what was asked, or how it runs
  /// With SessionOptions::profile: per node, its median time per run in microseconds (its
  /// reorders to NCHW included; medians shrug off preemption on a busy machine), over the runs
  /// since the last plan or reset_profile() (at most the last 4096).
  std::vector<double> node_us;
  /// With SessionOptions::profile and a plan of several threads: per node, each pool thread's
  /// median CPU time per run in microseconds (thread CPU clocks read in a parallel region before
  /// and after the node). Unlike node_us it does not count waiting for a core, so on a loaded
  /// machine it still shows whether a node splits its work evenly (the largest entry is its
  /// critical path) or leaves a thread idle.
  std::vector<std::vector<double>> node_thread_us;
  /// Per node, its work under the current plan (thread_plan.h's multiply-add count) and whether
  /// it runs on one thread.
  std::vector<int64_t> node_work;
  std::vector<char> node_serial;
};

class Session {
 public:
  explicit Session(Graph g, SessionOptions o = {});
  // Movable, not copyable: each node's prepared kernel state is its own.
  Session(Session&&) = default;
  Session& operator=(Session&&) = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /// Loads (verifying the file) and prepares a model file.
  static Session from_file(const std::string& path, SessionOptions o = {});
  /// Runs the model: inputs in the model's order, checked against its declared dtypes and shapes.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  const Graph& graph() const { return g_; }
  SessionStats stats() const;
  /// Restarts the profile's sums (e.g. after a first run that built the kernels' primitives).
  void reset_profile();

 private:
  void plan(const std::vector<Tensor>& inputs);

  void run_node(size_t k);
  /// Picks infer_small.h's kernels for the nodes they fit under the current plan.
  void plan_small(const std::vector<TensorMeta>& meta);
  /// Runs node k on its small-layer kernel; false when it has none.
  bool run_small(size_t k);
  /// Node k's fused activation (if any) over its output y, in place.
  void apply_activation(size_t k, Tensor& y);

  Graph g_;
  SessionOptions options_;
  SessionStats stats_;
  std::vector<Shape> planned_;  // input shapes of the current plan
  int planned_threads_ = 0;     // and the pool size: the per-node thread decisions depend on it
  std::vector<char> serial_;    // per node: runs on the calling thread alone
  std::shared_ptr<Storage> arena_;
  std::vector<Tensor> slot_;             // per value (then per NCHW copy): its tensor now
  std::vector<std::vector<int>> reads_;  // per node: the slots it reads (-1: absent)
  std::vector<std::vector<std::pair<int, int>>> reorders_;  // per node: (blocked, NCHW copy) first
  std::vector<NodeLayout> layout_;                          // per node
  std::vector<char> value_layout_;  // per value: kPlainLayout, kBlockedLayout or kNhwcLayout
  std::vector<std::vector<Tensor>> in_, out_;  // per node: bound kernel arguments
  std::vector<char> eager_;                    // per node: inputs need promotion, run via call_op
  /// Per node, built once: its fused activation, whether a conv/dense's weights are model
  /// constants, and the layouts of its input and output (the kernels' explicit parameters).
  std::vector<KernelParams> params_;
  /// Per node, the state its kernel prepares on the first run of a plan and reuses (oneDNN
  /// primitives, memory descriptors, argument arrays): nothing is looked up per run.
  std::vector<std::unique_ptr<KernelPrepared>> prepared_;
  std::vector<const OpDef*> act_op_;  // per node: that activation as an op (non-float32 data)
  Attrs no_attrs_;
  std::vector<std::vector<Tensor>> flat_in_, flat_out_;  // kFlat nodes: whole padded buffers
  std::vector<std::pair<int, int>> patch_in_;   // (node, input position) reading a model input
  std::vector<std::pair<int, int>> patch_out_;  // (node, output position) writing a model output
  std::vector<std::vector<float>> node_ns_;     // profile: per node, its time in each run
  std::vector<std::vector<std::vector<float>>> node_tcpu_ns_;  // profile: per node, thread, run
  enum class Small : char {
    kNone,
    kDenseRows,
    kPool2x2,
    kPoolU8,
    kMeanHW,
    kAddAct,
    kAddActBf16,  // infer_small_bf16.h's loops in a bf16 graph
    kCastBf16,
    kDenseRowsBf16,
  };
  std::vector<Small> small_;           // per node: the small-layer kernel planned for it
  std::vector<Tensor> packed_;         // per node: dense weights packed once (kept across plans)
  std::vector<cpu::WindowGeom> geom_;  // per node: kPool2x2's geometry
  std::vector<TensorMeta> out_meta_;   // model outputs under the current plan
};

}  // namespace mycel::lite
