// Inference-time rewrites of a loaded model, each a small pass over lite::Graph run by
// optimize() in order: fold_batch_norm, fold_constants, fuse_activation, eliminate_dead_nodes.
#pragma once
#include "mycel/lite/model_file.h"

namespace mycel::lite {

/// What the passes did, for stats and tests.
struct OptimizeReport {
  int batch_norms_folded = 0;
  int constants_folded = 0;
  int activations_fused = 0;
  int dead_nodes_removed = 0;
};

/// conv2d/dense followed by inference batch_norm (its statistics constant): the normalization
/// folded into the weights and bias, the batch_norm removed.
int fold_batch_norm(Graph& g);
/// Nodes whose inputs are all weights computed once; their outputs become weights.
int fold_constants(Graph& g);
/// relu after conv2d/dense/matmul, or relu6 after conv2d (its only reader), becomes the
/// producer's oneDNN post-op; relu or relu6 after a float32 add (a residual block's) becomes the
/// add's, applied in the same pass (infer_small.h's add_act).
int fuse_activation(Graph& g);
/// Nodes none of whose outputs is read.
int eliminate_dead_nodes(Graph& g);
/// The passes in order.
OptimizeReport optimize(Graph& g);

}  // namespace mycel::lite
