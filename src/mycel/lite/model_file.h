// Mycel's model file ("MINDIR"): a 64-byte header, the FlatBuffers graph (schema/mindir.fbs) and
// a 64-byte aligned weight section, each checksummed. load() verifies everything before any of it
// is used: a corrupt, truncated or hostile file is a ValueError naming the problem.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/ops/registry.h"

namespace mycel::lite {

inline constexpr char kMagic[8] = {'M', 'Y', 'C', 'E', 'L', 'M', 'I', 'R'};
// Version 2 adds int8 models (int8/uint8 weights, quantize_linear, dequantize_linear, qconv2d,
// qdense); this build reads versions 1 and 2 and writes 2.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kMinFormatVersion = 1;
inline constexpr uint64_t kAlign =
    64;  // header size, and alignment of the weight section and each weight

/// One tensor value of the graph: an input, a weight (weight >= 0) or a node output.
struct ValueInfo {
  std::string name;
  DType dtype = DType::float32;
  Shape shape;      // -1 = dynamic (inputs only)
  int weight = -1;  // index into Graph::weights
};

/// One registry op call over values (-1 = an absent optional input).
struct NodeInfo {
  const OpDef* op = nullptr;
  std::string name;
  std::vector<int> inputs;
  std::vector<int> outputs;
  Attrs attrs;
  /// Set by the lite optimizer: an activation fused into this conv2d/dense/matmul.
  enum class Act { kNone, kRelu, kRelu6 } post_act = Act::kNone;
};

/// A model in memory: what the file holds, with weights as tensors (borrowing the mapped file
/// when loaded).
struct Graph {
  std::vector<ValueInfo> values;
  std::vector<Tensor> weights;
  std::vector<NodeInfo> nodes;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::string producer = "mycel";
};

/// The file's bytes.
std::string serialize(const Graph& g);
/// Verifies and decodes a file image; `keep` owns the bytes the weights borrow.
Graph parse(const uint8_t* data, size_t size, std::shared_ptr<void> keep);
/// Maps the file read-only and parses it (weights stay in the mapping: zero copy).
Graph load(const std::string& path);
/// Checks a graph's structure (ids in range, each value defined once and before use, op
/// arities, weights' sizes): load() runs it; the writer runs it before writing.
void validate(const Graph& g, const std::string& where);

}  // namespace mycel::lite
