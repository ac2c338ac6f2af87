// MindSpore's strategy checkpoint files (protobuf, io/proto/parallel_strategy.proto): the layouts
// of a split run's parameters and its operators' strategies. Written atomically; read with the
// file size bounded and every layout checked, so a corrupt or hostile file raises ValueError.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mycel::io {

/// A parameter's layout in MindSpore's terms: tensor_map counts device-matrix axes from the
/// RIGHT (0 = last axis), -1 for a dim that is not split; slice_shape is one rank's slice.
struct StrategyLayout {
  std::string name;
  std::vector<int64_t> device_matrix, tensor_map, slice_shape;
  int64_t field = 0, opt_shard_step = 0, opt_shard_size = 0;
};

/// An operator's strategy: its pipeline stage and how each input is split.
struct OpStrategyEntry {
  std::string name;
  int64_t stage = 0;
  std::vector<std::vector<int64_t>> inputs;
};

struct StrategyFile {
  int64_t current_stage = 0;
  std::vector<OpStrategyEntry> ops;
  std::vector<StrategyLayout> layouts;
};

void save_strategy_file(const std::string& path, const StrategyFile& file);
StrategyFile load_strategy_file(const std::string& path);

}  // namespace mycel::io
