// Batching rules of the collectives. A collective under vmap must stay one call, so that every
// rank runs the same sequence of collectives (a per-item loop is refused for them, see
// ad/vmap_graph.cc): the elementwise ones (all_reduce, broadcast, reduce) take the batched
// tensor as it is; all_gather and reduce_scatter work along dim 0, so the batch moves to dim 1;
// all_to_all's split and concat axes shift past the batch. send/receive have none: a receive has
// no input to carry a batch, so the pair could not agree on a shape.
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

/// all_to_all splits along split_dim and concatenates along concat_dim: with the batch in front,
/// both shift by one and every part carries all the items.
Batched all_to_all_rule(BatchBuilder& g) {
  if (g.bdim(0) == kNotBatched) return {};
  const int64_t r = static_cast<int64_t>(g.meta(g.input(0)).shape.size()) - 1;
  const int64_t s = norm_axis(g, g.attrs().get_int("split_dim"), r);
  const int64_t k = norm_axis(g, g.attrs().get_int("concat_dim"), r);
  return {g.call_self({move_axis(g, g.input(0), g.bdim(0), 0)},
                      {{"split_dim", s + 1}, {"concat_dim", k + 1}}),
          {0}};
}

}  // namespace

MYCEL_REGISTER_BATCH_RULES(collective) {
  b.add("all_to_all", all_to_all_rule);
  for (const char* n : {"all_reduce", "broadcast", "reduce"}) b.add(n, whole_tensor);
  for (const char* n : {"all_gather", "reduce_scatter"}) b.add(n, along_dim0);
}

}  // namespace mycel
