// shard_hint: the layout a value is consumed with under semi-auto parallel (what
// Primitive.shard(in_strategy) leaves in graph mode, one per input). Eagerly it is the identity;
// the parallel pass (src/mycel/pipeline/semi_auto.cc) reads the strategy and removes the node.
// layout_only (Cell.shard's hints): the value takes that layout, but an op reading it directly
// still chooses its own strategy (by propagation or the search), as MindSpore's Cell.shard.
#include <cstring>

#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

std::vector<TensorMeta> infer_shard_hint(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  const auto& dims = c.attrs.get_ints("strategy");
  if (dims.size() != s.size())
    MYCEL_THROW(ValueError, "[shard_hint] argument 'strategy' must have one split count per dim of x (shape ",
                shape_str(s), "), got ", shape_str(dims));
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 1 || (s[i] >= 0 && s[i] % dims[i] != 0))
      MYCEL_THROW(ValueError, "[shard_hint] argument 'strategy': dim ", i, " of size ", s[i],
                  " cannot split into ", dims[i], " equal slices (strategy ", shape_str(dims), ")");
  return {c.in(0)};
}

}  // namespace

MYCEL_REGISTER_OPS(parallel_hint) {
  r.add(make_op("shard_hint", "ShardHint",
                "Returns x; under semi-auto parallel, x is consumed split by `strategy` (one count per dim).",
                {{"x"}}, {attr("strategy", AttrKind::kInts), {"layout_only", AttrKind::kBool, false, false, {}}},
                infer_shard_hint,
                [](const KernelContext& c) {
                  if (c.in(0).nbytes()) std::memcpy(c.out(0).data(), c.in(0).data(), c.in(0).nbytes());
                },
                all_dtypes(), "bprop"));
}

MYCEL_REGISTER_BPROPS(parallel_hint) {
  b.add("shard_hint", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    return {g.dout()};
  });
}

}  // namespace mycel
