// shard_hint: the layout a value is consumed with under semi-auto parallel (what
// Primitive.shard(in_strategy) leaves in graph mode, one per input). Eagerly it is the identity;
// the parallel pass (src/mycel/pipeline/semi_auto.cc) reads the strategy and removes the node.
// layout_only (Cell.shard's hints): the value takes that layout, but an op reading it directly
// still chooses its own strategy (by propagation or the search), as MindSpore's Cell.shard.
#include <algorithm>
#include <cstring>

#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/sharding.h"
#include "mycel/parallel/communicator.h"
#include "mycel/parallel/redistribution.h"

namespace mycel {
namespace {

std::vector<TensorMeta> infer_shard_hint(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  const auto& dims = c.attrs.get_ints("strategy");
  if (dims.size() != s.size())
    MYCEL_THROW(ValueError,
                "[shard_hint] argument 'strategy' must have one split count per dim of x (shape ",
                shape_str(s), "), got ", shape_str(dims));
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 1 || (s[i] >= 0 && s[i] % dims[i] != 0))
      MYCEL_THROW(ValueError, "[shard_hint] argument 'strategy': dim ", i, " of size ", s[i],
                  " cannot split into ", dims[i], " equal slices (strategy ", shape_str(dims), ")");
  return {c.in(0)};
}

// sliced_weight: a weight stored as this rank's slice (slice_parameters=True), read by the
// network as the whole weight it is part of. The semi-auto pass replaces it by the slice with its
// layout (so ops read the slice in place); run as it is, it gathers the whole weight.
shard::TensorLayout sliced_layout(const Attrs& a) {
  shard::TensorLayout l;
  l.device.dims = a.get_ints("device_matrix");
  if (l.device.dims.empty())
    MYCEL_THROW(ValueError, "[sliced_weight] argument 'device_matrix' must not be empty");
  for (int64_t d : l.device.dims)
    if (d < 1)
      MYCEL_THROW(ValueError,
                  "[sliced_weight] argument 'device_matrix' must hold counts >= 1, got ",
                  shape_str(l.device.dims));
  for (int64_t d : a.get_ints("shape"))
    if (d < 0)
      MYCEL_THROW(ValueError, "[sliced_weight] argument 'shape' must hold sizes >= 0, got ",
                  shape_str(a.get_ints("shape")));
  for (int64_t m : a.get_ints("tensor_map")) l.tensor_map.push_back(static_cast<int>(m));
  l.shape = a.get_ints("shape");
  l.check("[sliced_weight]");
  return l;
}

std::vector<TensorMeta> infer_sliced_weight(const InferContext& c) {
  const shard::TensorLayout l = sliced_layout(c.attrs);
  if (l.slice_shape() != c.in(0).shape)
    MYCEL_THROW(ValueError, "[sliced_weight] input 'x' of shape ", shape_str(c.in(0).shape),
                " is not a slice of the layout ", l.str(), " (slice ", shape_str(l.slice_shape()),
                ")");
  return {{l.shape, c.in(0).dtype}};
}

}  // namespace

MYCEL_REGISTER_OPS(parallel_hint) {
  r.add(make_op(
      "sliced_weight", "SlicedWeight",
      "The whole weight whose slice on this rank is x, laid out by device_matrix, tensor_map and "
      "shape "
      "(a weight stored as slices); gathers it unless the semi-auto pass reads the slice in place.",
      {{"x"}},
      {attr("device_matrix", AttrKind::kInts), attr("tensor_map", AttrKind::kInts),
       attr("shape", AttrKind::kInts)},
      infer_sliced_weight,
      [](const KernelContext& c) {
        const shard::TensorLayout l = sliced_layout(c.attrs);
        Tensor whole =
            parallel::redistribute(c.in(0), l, shard::replicated(l.shape, l.device.size()));
        if (whole.nbytes()) std::memcpy(c.out(0).data(), whole.data(), whole.nbytes());
      },
      all_dtypes(), "bprop"));
  r.add(make_op(
      "shard_hint", "ShardHint",
      "Returns x; under semi-auto parallel, x is consumed split by `strategy` (one count per dim).",
      {{"x"}},
      {attr("strategy", AttrKind::kInts), {"layout_only", AttrKind::kBool, false, false, {}}},
      infer_shard_hint,
      [](const KernelContext& c) {
        if (c.in(0).nbytes()) std::memcpy(c.out(0).data(), c.in(0).data(), c.in(0).nbytes());
      },
      all_dtypes(), "bprop"));
}

MYCEL_REGISTER_BPROPS(parallel_hint) {
  // Every rank's loss reads the whole weight: the gradient of this rank's slice is the block of
  // the sum over ranks of their gradients (the collectives' convention: the sum of every rank's
  // loss is differentiated). The semi-auto pass removes the node before AD; this is the rule
  // when the pass does not run.
  b.add("sliced_weight", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    const shard::TensorLayout l = sliced_layout(g.attrs());
    // Dim 0 split over every rank in rank order, the rest whole (the parallel optimizer's blocks):
    // this rank's block of the sum is exactly a ReduceScatter, half an AllReduce's traffic.
    const bool dim0_blocks =
        l.device.dims.size() == 1 && !l.tensor_map.empty() && l.tensor_map[0] == 0 &&
        std::all_of(l.tensor_map.begin() + 1, l.tensor_map.end(), [](int m) { return m < 0; }) &&
        parallel::initialized() && parallel::world_size() == l.device.size();
    if (dim0_blocks)
      return {g.call("reduce_scatter", {g.dout()}, {{"reduce_op", std::string("sum")}})};
    GradVar sum = g.call("all_reduce", {g.dout()}, {{"reduce_op", std::string("sum")}});
    const int64_t rank = parallel::initialized() ? parallel::world_rank() % l.device.size() : 0;
    const std::vector<int64_t> begin = l.slice_offset(rank), size = l.slice_shape();
    return {g.call("slice", {sum}, {{"begin", begin}, {"size", size}})};
  });
  b.add("shard_hint", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    return {g.dout()};
  });
}

}  // namespace mycel
