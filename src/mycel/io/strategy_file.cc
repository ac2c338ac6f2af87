// Strategy checkpoint files: StrategyFile <-> the protobuf messages MindSpore writes.
#include "mycel/io/strategy_file.h"

#include <set>

#include "mycel/core/error.h"
#include "mycel/core/shape.h"
#include "mycel/io/file.h"
#include "mycel/io/proto/parallel_strategy.pb.h"

namespace mycel::io {

namespace {

// A strategy file names every parameter and operator once: far below this.
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

template <class List>
std::vector<int64_t> dims_of(const List& l) {
  return std::vector<int64_t>(l.dim().begin(), l.dim().end());
}

void check_layout(const StrategyLayout& l, const std::string& where) {
  MYCEL_CHECK(!l.device_matrix.empty(), ValueError, where, ": empty device matrix");
  for (int64_t d : l.device_matrix)
    MYCEL_CHECK(d >= 1, ValueError, where, ": device matrix ", shape_str(l.device_matrix),
                " has a dim below 1");
  MYCEL_CHECK(l.tensor_map.size() == l.slice_shape.size(), ValueError, where, ": tensor map of ",
              l.tensor_map.size(), " dims for a slice shape of ", l.slice_shape.size());
  const auto axes = static_cast<int64_t>(l.device_matrix.size());
  std::set<int64_t> used;
  for (int64_t m : l.tensor_map) {
    MYCEL_CHECK(m >= -1 && m < axes, ValueError, where, ": tensor map ", shape_str(l.tensor_map),
                " names an axis outside the device matrix ", shape_str(l.device_matrix));
    MYCEL_CHECK(m == -1 || used.insert(m).second, ValueError, where, ": tensor map ",
                shape_str(l.tensor_map), " uses an axis twice");
  }
  for (int64_t d : l.slice_shape)
    MYCEL_CHECK(d >= 0 && d < (int64_t{1} << 48), ValueError, where, ": slice shape ",
                shape_str(l.slice_shape), " has a dim out of range");
}

}  // namespace

void save_strategy_file(const std::string& path, const StrategyFile& file) {
  strategy::StrategyMap map;
  map.set_current_stage(static_cast<uint32_t>(file.current_stage));
  for (const OpStrategyEntry& op : file.ops) {
    auto* item = map.add_op_strategy_item();
    item->set_node_name(op.name);
    auto* s = item->mutable_strategy();
    s->set_stage(static_cast<uint32_t>(op.stage));
    for (const auto& in : op.inputs) {
      auto* d = s->add_input();
      for (int64_t v : in) d->add_dim(static_cast<uint32_t>(v));
    }
  }
  for (const StrategyLayout& l : file.layouts) {
    check_layout(l, "save_strategy_file: parameter '" + l.name + "'");
    auto* item = map.add_parameter_layout_item();
    item->set_param_name(l.name);
    auto* p = item->mutable_layout();
    auto* dev = p->add_dev_matrix();
    for (int64_t v : l.device_matrix) dev->add_dim(static_cast<uint32_t>(v));
    auto* tmap = p->add_tensor_map();
    for (int64_t v : l.tensor_map) tmap->add_dim(static_cast<int32_t>(v));
    auto* split = p->add_param_split_shape();
    for (int64_t v : l.slice_shape) split->add_dim(v);
    p->add_indices_offset();  // MindSpore writes it empty
    p->set_field(static_cast<int32_t>(l.field));
    p->set_opt_weight_shard_step(static_cast<int32_t>(l.opt_shard_step));
    p->set_opt_weight_shard_size(static_cast<int32_t>(l.opt_shard_size));
  }
  std::string bytes;
  MYCEL_CHECK(map.SerializeToString(&bytes), RuntimeError, "save_strategy_file: '", path,
              "' could not be serialized");
  detail::AtomicWriter w(path);
  w.write(bytes.data(), bytes.size());
  w.commit();
}

StrategyFile load_strategy_file(const std::string& path) {
  detail::ReadFile f(path);
  MYCEL_CHECK(f.size() <= kMaxFileBytes, ValueError, "strategy file '", path, "' has ", f.size(),
              " bytes, more than a strategy file holds (", kMaxFileBytes, ")");
  std::string bytes(f.size(), '\0');
  f.read_at(bytes.data(), bytes.size(), 0, "the file");
  strategy::StrategyMap map;
  MYCEL_CHECK(map.ParseFromString(bytes), ValueError, "'", path,
              "' is not a strategy file (MindSpore's ParallelStrategyMap protobuf): it does not "
              "parse, or lacks a required field");
  StrategyFile out;
  out.current_stage = map.current_stage();
  std::set<std::string> names;
  for (const auto& item : map.op_strategy_item()) {
    OpStrategyEntry op{item.node_name(), item.strategy().stage(), {}};
    for (const auto& in : item.strategy().input()) op.inputs.push_back(dims_of(in));
    out.ops.push_back(std::move(op));
  }
  for (const auto& item : map.parameter_layout_item()) {
    const std::string where = "strategy file '" + path + "', parameter '" + item.param_name() + "'";
    MYCEL_CHECK(names.insert(item.param_name()).second, ValueError, where, " appears twice");
    const auto& p = item.layout();
    MYCEL_CHECK(
        p.dev_matrix_size() >= 1 && p.tensor_map_size() >= 1 && p.param_split_shape_size() >= 1,
        ValueError, where, ": the layout lacks its device matrix, tensor map or slice shape");
    StrategyLayout l{item.param_name(),
                     dims_of(p.dev_matrix(0)),
                     dims_of(p.tensor_map(0)),
                     dims_of(p.param_split_shape(0)),
                     p.field(),
                     p.opt_weight_shard_step(),
                     p.opt_weight_shard_size()};
    check_layout(l, where);
    out.layouts.push_back(std::move(l));
  }
  return out;
}

}  // namespace mycel::io
