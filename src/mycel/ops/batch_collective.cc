// Batching rules of the collectives. A collective under vmap must stay one call, so that every
// rank runs the same sequence of collectives (a per-item loop is refused for them, see
// ad/vmap_graph.cc): the elementwise ones (all_reduce, broadcast, reduce) take the batched
// tensor as it is; all_gather and reduce_scatter work along dim 0, so the batch moves to dim 1.
#include "mycel/ops/batch.h"

namespace mycel {
namespace {

using namespace batch;

Batched whole_tensor(BatchBuilder& g) {
  if (g.bdim(0) == kNotBatched) return {};
  return {g.call_self({g.input(0)}), {g.bdim(0)}};
}

Batched along_dim0(BatchBuilder& g) {
  if (g.bdim(0) == kNotBatched) return {};
  if (g.meta(g.input(0)).shape.size() < 2) return {};  // 0-d items: nothing to gather along
  return {g.call_self({move_axis(g, g.input(0), g.bdim(0), 1)}), {1}};
}

}  // namespace

MYCEL_REGISTER_BATCH_RULES(collective) {
  for (const char* n : {"all_reduce", "broadcast", "reduce"}) b.add(n, whole_tensor);
  for (const char* n : {"all_gather", "reduce_scatter"}) b.add(n, along_dim0);
}

}  // namespace mycel
