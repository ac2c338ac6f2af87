// The lite runtime: a loaded model, optimized once, planned once per input shape (output shapes
// from each op's infer, activation layouts (layout.h), one arena laid out by buffer lifetimes)
// and run node by node through the registry's CPU kernels. Running allocates only the returned
// outputs.
#pragma once
#include <string>
#include <vector>

#include "mycel/lite/layout.h"
#include "mycel/lite/model_file.h"
#include "mycel/lite/optimize.h"

namespace mycel::lite {

struct SessionOptions {
  int num_threads = 0;         // 0: the pool's default (cores)
  bool optimize = true;        // batch_norm folding, constant folding, activation fusion
  bool blocked_layout = true;  // keep conv activations in oneDNN's preferred layout (layout.h)
};

struct SessionStats {
  size_t arena_bytes = 0;  // intermediate values, for the current plan
  size_t weight_bytes = 0;
  int num_nodes = 0;     // after optimization
  int num_plans = 0;     // input shapes planned so far
  int num_blocked = 0;   // values kept in the blocked layout under the current plan
  int num_reorders = 0;  // reorders to NCHW per run under the current plan
  OptimizeReport optimized;
};

class Session {
 public:
  explicit Session(Graph g, SessionOptions o = {});
  /// Loads (verifying the file) and prepares a model file.
  static Session from_file(const std::string& path, SessionOptions o = {});
  /// Runs the model: inputs in the model's order, checked against its declared dtypes and shapes.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  const Graph& graph() const { return g_; }
  SessionStats stats() const;

 private:
  void plan(const std::vector<Tensor>& inputs);

  void run_node(size_t k);

  Graph g_;
  SessionOptions options_;
  SessionStats stats_;
  std::vector<Shape> planned_;  // input shapes of the current plan
  std::shared_ptr<Storage> arena_;
  std::vector<Tensor> slot_;             // per value (then per NCHW copy): its tensor now
  std::vector<std::vector<int>> reads_;  // per node: the slots it reads (-1: absent)
  std::vector<std::vector<std::pair<int, int>>> reorders_;  // per node: (blocked, NCHW copy) first
  std::vector<NodeLayout> layout_;                          // per node
  std::vector<std::vector<Tensor>> in_, out_;               // per node: bound kernel arguments
  std::vector<char> eager_;           // per node: inputs need promotion, run via call_op
  std::vector<TensorMeta> out_meta_;  // model outputs under the current plan
};

}  // namespace mycel::lite
