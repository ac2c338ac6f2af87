// Batching rules of the scatter family and gather_nd. Element scatters (one index per element
// along an axis) shift the axis by one. Row and N-d scatters and gathers address whole slices,
// so the batch becomes one more index coordinate: each item's indices get its batch position
// as a leading coordinate, which keeps duplicates accumulating within their own item only.
#include "mycel/core/error.h"
#include "mycel/ops/batch.h"

namespace mycel {
namespace {

using namespace batch;

bool batched(BatchBuilder& g, size_t i) { return g.bdim(i) != kNotBatched; }
int64_t logical_rank(BatchBuilder& g, size_t i) {
  return static_cast<int64_t>(g.meta(g.input(i)).shape.size()) - batched(g, i);
}
Batched at_front(BatchBuilder& g, GradVar v) { return {v, {0}}; }

/// The item positions 0..B-1 of dtype t, shaped (B, 1, ..., 1) with `rank` axes in all.
GradVar batch_positions(BatchBuilder& g, DType t, size_t rank) {
  GradVar iota = g.call(
      "arange", {}, {{"start", 0.0}, {"limit", static_cast<double>(g.batch_size())}, {"dtype", t}});
  Shape s(rank, 1);
  s[0] = g.batch_size();
  return g.reshape_to(iota, s);
}

/// indices (B, ..., K) -> (B, ..., K+1) with each item's batch position as coordinate 0.
GradVar with_batch_coordinate(BatchBuilder& g, GradVar idx) {
  TensorMeta m = g.meta(idx);
  Shape col = m.shape;
  col.back() = 1;
  GradVar pos =
      g.call("broadcast_to", {batch_positions(g, m.dtype, m.shape.size())}, {{"shape", col}});
  return g.call("concat", {g.make_tuple({pos, idx})}, {{"axis", int64_t{-1}}});
}

/// tensor_scatter_elements(input, indices, updates): per element along axis, so axis + 1.
Batched scatter_elements_rule(BatchBuilder& g) {
  int64_t a = norm_axis(g, g.attrs().get_int("axis"), logical_rank(g, 0));
  return at_front(g, g.call_self({front(g, 0), front(g, 1), front(g, 2)}, {{"axis", a + 1}}));
}

/// gather_nd(params, indices): shared params need no change; batched params are indexed with
/// the batch position as the first coordinate.
Batched gather_nd_rule(BatchBuilder& g) {
  if (!batched(g, 0)) return at_front(g, g.call_self({g.input(0), front(g, 1)}));
  return at_front(g, g.call_self({front(g, 0), with_batch_coordinate(g, front(g, 1))}));
}

/// tensor_scatter_add(input, indices, updates): the batch position as the first coordinate.
Batched tensor_scatter_add_rule(BatchBuilder& g) {
  return at_front(g,
                  g.call_self({front(g, 0), with_batch_coordinate(g, front(g, 1)), front(g, 2)}));
}

/// scatter_add(input, indices, updates) adds rows along axis 0, which is tensor_scatter_add with
/// one coordinate: with the batch position as a second one, each item adds into its own rows
/// (negative and out-of-range indices keep their meaning per item).
Batched scatter_add_rule(BatchBuilder& g) {
  GradVar idx = g.call("expand_dims", {front(g, 1)}, {{"axis", int64_t{-1}}});
  return at_front(
      g, g.call("tensor_scatter_add", {front(g, 0), with_batch_coordinate(g, idx), front(g, 2)}));
}

}  // namespace

MYCEL_REGISTER_BATCH_RULES(scatter) {
  b.add("tensor_scatter_elements", scatter_elements_rule);
  b.add("gather_nd", gather_nd_rule);
  b.add("tensor_scatter_add", tensor_scatter_add_rule);
  // The other reductions (ops/scatter_reduce.cc) batch the same way.
  for (const char* n :
       {"tensor_scatter_mul", "tensor_scatter_div", "tensor_scatter_max", "tensor_scatter_min"})
    b.add(n, tensor_scatter_add_rule);
  b.add("scatter_add", scatter_add_rule);
}

}  // namespace mycel
