// The batching-rule table, its helpers, the generic rule of elementwise ops (from the trait) and
// the rules of the ops that only move, reduce or index axes: each shifts the axes it names by one
// after moving the batch to axis 0.
#include "mycel/ops/batch.h"

#include <algorithm>
#include <numeric>

#include "mycel/core/error.h"

namespace mycel {

namespace batch {

GradVar move_axis(BatchBuilder& g, GradVar v, int from, int to) {
  if (from == to) return v;
  int64_t rank = static_cast<int64_t>(g.meta(v).shape.size());
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return g.call("transpose", {v}, {{"perm", perm}});
}

GradVar to_front(BatchBuilder& g, GradVar v, int bdim) {
  if (!v.defined()) return v;
  if (bdim != kNotBatched) return move_axis(g, v, bdim, 0);
  Shape s = g.meta(v).shape;
  s.insert(s.begin(), g.batch_size());
  return g.call("broadcast_to", {g.call("expand_dims", {v}, {{"axis", int64_t{0}}})},
                {{"shape", s}});
}

bool any_batched(const BatchBuilder& g) {
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    if (g.op().inputs[i].variadic) {
      for (int d : g.item_bdims(i))
        if (d != kNotBatched) return true;
    } else if (g.bdim(i) != kNotBatched) {
      return true;
    }
  }
  return false;
}

int64_t norm_axis(const BatchBuilder& g, int64_t axis, int64_t rank) {
  return normalize_axis(axis, rank, g.op().name.c_str());
}

GradVar merge_front(BatchBuilder& g, GradVar v) {
  Shape s = g.meta(v).shape;
  if (s.size() < 2)
    MYCEL_THROW(RuntimeError, "[", g.op().name, " batching rule] merge_front of shape ",
                shape_str(s));
  Shape m{s[0] * s[1]};
  m.insert(m.end(), s.begin() + 2, s.end());
  return g.reshape_to(v, m);
}

GradVar split_front(BatchBuilder& g, GradVar v, int64_t b) {
  Shape s = g.meta(v).shape;
  if (s.empty() || s[0] % b != 0)
    MYCEL_THROW(RuntimeError, "[", g.op().name, " batching rule] split_front of shape ",
                shape_str(s), " by ", b);
  Shape m{b, s[0] / b};
  m.insert(m.end(), s.begin() + 1, s.end());
  return g.reshape_to(v, m);
}

}  // namespace batch

BatchRegistry& BatchRegistry::get() {
  static BatchRegistry r;
  return r;
}

void BatchRegistry::add(const std::string& op, BatchRuleFn fn) {
  if (rules_.count(op)) MYCEL_THROW(RuntimeError, "batching rule for '", op, "' registered twice");
  rules_[op] = std::move(fn);
}

namespace {

using namespace batch;

int64_t rank_of(BatchBuilder& g, const GradVar& v) {
  return static_cast<int64_t>(g.meta(v).shape.size());
}
/// The rank input i has for one batch item.
int64_t logical_rank(BatchBuilder& g, size_t i) {
  return rank_of(g, g.input(i)) - (g.bdim(i) != kNotBatched);
}
size_t num_outputs(BatchBuilder& g, const GradVar& v) {
  return g.tuple_size(v);  // 1 for a tensor (see BatchBuilder::tuple_size)
}
Batched at_front(BatchBuilder& g, GradVar v) { return {v, std::vector<int>(num_outputs(g, v), 0)}; }

/// Batched inputs moved to axis 0 and given ones after it up to the largest logical rank, so that
/// numpy broadcasting lines every item up; unbatched inputs broadcast as they are.
Batched elementwise(BatchBuilder& g) {
  // A one-input op keeps the batch where it is (no transpose).
  size_t n = g.num_inputs();
  size_t given = 0, batched = 0, which = 0;
  for (size_t i = 0; i < n; ++i)
    if (g.input(i).defined()) {
      ++given;
      if (g.bdim(i) != kNotBatched) ++batched, which = i;
    }
  if (given == 1 && batched == 1) {
    std::vector<GradVar> in;
    for (size_t i = 0; i < n; ++i) in.push_back(g.input(i));
    GradVar out = g.call_self(in);
    return {out, std::vector<int>(num_outputs(g, out), g.bdim(which))};
  }
  int64_t r = 0;
  for (size_t i = 0; i < n; ++i)
    if (g.input(i).defined()) r = std::max(r, logical_rank(g, i));
  std::vector<GradVar> in;
  for (size_t i = 0; i < n; ++i) {
    GradVar x = g.input(i);
    if (x.defined() && g.bdim(i) != kNotBatched) {
      x = move_axis(g, x, g.bdim(i), 0);
      for (int64_t k = logical_rank(g, i); k < r; ++k)
        x = g.call("expand_dims", {x}, {{"axis", int64_t{1}}});
    }
    in.push_back(x);
  }
  return at_front(g, g.call_self(in));
}

/// Reductions over a tuple of axes (empty: all). A 0-d item reduces over nothing: no rule.
Batched reduce_axes(BatchBuilder& g) {
  int64_t r = logical_rank(g, 0);
  if (r == 0) return {};
  std::vector<int64_t> axes = g.attrs().get_ints("axis");
  if (axes.empty()) {
    axes.resize(r);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = norm_axis(g, a, r) + 1;
  return at_front(g, g.call_self({front(g, 0)}, {{"axis", axes}}));
}

/// Ops over one int axis of input 0 (softmax, argmax, cumsum, sort...), others unbatched.
Batched one_axis(BatchBuilder& g, const char* attr = "axis", int64_t extra_rank = 0) {
  for (size_t i = 1; i < g.num_inputs(); ++i)
    if (g.input(i).defined() && g.bdim(i) != kNotBatched) return {};
  int64_t r = logical_rank(g, 0) + extra_rank;
  if (r == 0) return {};  // a 0-d item's axis -1 is the item itself, not an axis of the batch
  int64_t a = norm_axis(g, g.attrs().get_int(attr), std::max<int64_t>(r, 1)) + 1;
  std::vector<GradVar> in{front(g, 0)};
  for (size_t i = 1; i < g.num_inputs(); ++i) in.push_back(g.input(i));
  return at_front(g, g.call_self(in, {{attr, a}}));
}

/// Ops that read only the last axes of input 0 (top_k, tril): the batch at the front is free.
Batched trailing(BatchBuilder& g) {
  if (logical_rank(g, 0) == 0) return {};
  for (size_t i = 1; i < g.num_inputs(); ++i)
    if (g.input(i).defined() && g.bdim(i) != kNotBatched) return {};
  std::vector<GradVar> in{front(g, 0)};
  for (size_t i = 1; i < g.num_inputs(); ++i) in.push_back(g.input(i));
  return at_front(g, g.call_self(in));
}

/// Each item of variadic input 0 moved (or broadcast) to the front.
GradVar items_front(BatchBuilder& g) {
  GradVar t = g.input(0);
  std::vector<int> dims = g.item_bdims(0);
  std::vector<GradVar> items;
  for (size_t k = 0; k < dims.size(); ++k) items.push_back(to_front(g, g.tuple_get(t, k), dims[k]));
  return g.make_tuple(items);
}

Batched reshape_rule(BatchBuilder& g) {
  Shape s = g.attrs().get_ints("shape");
  s.insert(s.begin(), g.batch_size());
  return at_front(g, g.call_self({front(g, 0)}, {{"shape", s}}));
}

Batched flatten_rule(BatchBuilder& g) {
  GradVar x = front(g, 0);
  Shape s = g.meta(x).shape;
  if (s.size() < 2) return {};
  int64_t rest = 1;
  for (size_t i = 2; i < s.size(); ++i) rest *= s[i];
  return at_front(g, g.reshape_to(x, {s[0], s[1], rest}));
}

Batched squeeze_rule(BatchBuilder& g) {
  GradVar x = front(g, 0);
  Shape s = g.meta(x).shape;
  int64_t r = static_cast<int64_t>(s.size()) - 1;
  std::vector<int64_t> axes = g.attrs().get_ints("axis");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      if (s[i + 1] == 1) axes.push_back(i);
  if (axes.empty()) return at_front(g, x);
  for (int64_t& a : axes) a = norm_axis(g, a, r) + 1;
  return at_front(g, g.call_self({x}, {{"axis", axes}}));
}

Batched transpose_rule(BatchBuilder& g) {
  int64_t r = logical_rank(g, 0);
  std::vector<int64_t> perm = g.attrs().get_ints("perm");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> p{0};
  for (int64_t a : perm) p.push_back(norm_axis(g, a, r) + 1);
  return at_front(g, g.call_self({front(g, 0)}, {{"perm", p}}));
}

/// x lined up at the front with ones after the batch up to rank r (for ops that broadcast).
GradVar front_with_rank(BatchBuilder& g, size_t i, int64_t r) {
  GradVar x = front(g, i);
  for (int64_t k = logical_rank(g, i); k < r; ++k)
    x = g.call("expand_dims", {x}, {{"axis", int64_t{1}}});
  return x;
}

Batched broadcast_to_rule(BatchBuilder& g) {
  Shape s = g.attrs().get_ints("shape");
  GradVar x = front_with_rank(g, 0, static_cast<int64_t>(s.size()));
  s.insert(s.begin(), g.batch_size());
  return at_front(g, g.call_self({x}, {{"shape", s}}));
}

Batched tile_rule(BatchBuilder& g) {
  std::vector<int64_t> m = g.attrs().get_ints("multiples");
  GradVar x = front_with_rank(g, 0, static_cast<int64_t>(m.size()));
  m.insert(m.begin(), 1);
  return at_front(g, g.call_self({x}, {{"multiples", m}}));
}

/// broadcast_like(x, like): x lined up with like's batched shape.
Batched broadcast_like_rule(BatchBuilder& g) {
  int64_t r = std::max(logical_rank(g, 0), logical_rank(g, 1));
  GradVar x = g.bdim(0) == kNotBatched ? g.input(0) : front_with_rank(g, 0, r);
  return at_front(g, g.call_self({x, front(g, 1)}));
}

Batched slice_rule(BatchBuilder& g) {
  std::vector<int64_t> begin = g.attrs().get_ints("begin"), size = g.attrs().get_ints("size");
  begin.insert(begin.begin(), 0);
  size.insert(size.begin(), g.batch_size());
  return at_front(g, g.call_self({front(g, 0)}, {{"begin", begin}, {"size", size}}));
}

/// strided_slice and its gradient: a full slice of the batch axis in front, every mask shifted.
std::map<std::string, AttrValue> strided_attrs(BatchBuilder& g) {
  const Attrs& a = g.attrs();
  std::vector<int64_t> begin = a.get_ints("begin"), end = a.get_ints("end"),
                       strides = a.get_ints("strides");
  begin.insert(begin.begin(), 0);
  end.insert(end.begin(), 0);
  if (!strides.empty()) strides.insert(strides.begin(), 1);
  return {{"begin", begin},
          {"end", end},
          {"strides", strides},
          {"begin_mask", (a.get_int("begin_mask") << 1) | 1},
          {"end_mask", (a.get_int("end_mask") << 1) | 1},
          {"ellipsis_mask", a.get_int("ellipsis_mask") << 1},
          {"new_axis_mask", a.get_int("new_axis_mask") << 1},
          {"shrink_axis_mask", a.get_int("shrink_axis_mask") << 1}};
}
Batched strided_slice_rule(BatchBuilder& g) {
  return at_front(g, g.call_self({front(g, 0)}, strided_attrs(g)));
}
Batched strided_slice_grad_rule(BatchBuilder& g) {
  return at_front(g, g.call_self({front(g, 0), front(g, 1)}, strided_attrs(g)));
}

Batched concat_rule(BatchBuilder& g) {
  GradVar t = items_front(g);
  int64_t r = rank_of(g, g.tuple_get(t, 0)) - 1;
  return at_front(g, g.call_self({t}, {{"axis", norm_axis(g, g.attrs().get_int("axis"), r) + 1}}));
}

Batched stack_rule(BatchBuilder& g) {
  GradVar t = items_front(g);
  int64_t r = rank_of(g, g.tuple_get(t, 0));  // the stacked item's logical rank + 1
  return at_front(g, g.call_self({t}, {{"axis", norm_axis(g, g.attrs().get_int("axis"), r) + 1}}));
}

/// gather(params, indices): batched params gather along the shifted axis; batched indices into
/// shared params land where the axis was (both batched: run per item).
Batched gather_rule(BatchBuilder& g) {
  int64_t a = norm_axis(g, g.attrs().get_int("axis"), logical_rank(g, 0));
  if (g.bdim(1) == kNotBatched)
    return at_front(g, g.call_self({front(g, 0), g.input(1)}, {{"axis", a + 1}}));
  if (g.bdim(0) != kNotBatched) return {};
  GradVar out = g.call_self({g.input(0), front(g, 1)}, {{"axis", a}});
  return {out, {static_cast<int>(a)}};
}

/// pad and its gradient: nothing added along the batch axis.
std::map<std::string, AttrValue> pad_attrs(BatchBuilder& g) {
  std::vector<int64_t> p = g.attrs().get_ints("paddings");
  p.insert(p.begin(), {0, 0});
  return {{"paddings", p}};
}
Batched pad_rule(BatchBuilder& g) { return at_front(g, g.call_self({front(g, 0)}, pad_attrs(g))); }
Batched pad_grad_rule(BatchBuilder& g) {
  return at_front(g, g.call_self({front(g, 0), front(g, 1)}, pad_attrs(g)));
}

/// embedding(ids, weight): batched ids only.
Batched embedding_rule(BatchBuilder& g) {
  if (g.bdim(1) != kNotBatched) return {};
  return at_front(g, g.call_self({front(g, 0), g.input(1)}));
}

/// one_hot(indices): the new axis counts in the output's rank.
Batched one_hot_rule(BatchBuilder& g) {
  int64_t r = logical_rank(g, 0) + 1;
  return at_front(
      g, g.call_self({front(g, 0)}, {{"axis", norm_axis(g, g.attrs().get_int("axis"), r) + 1}}));
}

Batched expand_dims_rule(BatchBuilder& g) { return one_axis(g, "axis", 1); }

}  // namespace

const BatchRuleFn* BatchRegistry::find(const OpDef& op) const {
  static const BatchRuleFn generic_elementwise = elementwise;
  auto it = rules_.find(op.name);
  if (it != rules_.end()) return &it->second;
  return op.elementwise ? &generic_elementwise : nullptr;
}

MYCEL_REGISTER_BATCH_RULES(shape) {
  // Unary ops that keep every axis where it is (not marked elementwise: views, casts, fills).
  for (const char* n :
       {"cast", "identity", "stop_gradient", "zeros_like", "ones_like", "dropout", "bernoulli"})
    b.add(n, elementwise);
  for (const char* n :
       {"sum", "mean", "max", "min", "prod", "all", "any", "logsumexp", "std", "var"})
    b.add(n, reduce_axes);
  for (const char* n : {"softmax", "log_softmax", "argmax", "argmin", "argsort", "sort", "cumsum",
                        "cumprod", "split", "shift"})
    b.add(n, [](BatchBuilder& g) { return one_axis(g); });
  b.add("softmax_grad", [](BatchBuilder& g) -> Batched {  // y and dy batched alike
    int64_t r = logical_rank(g, 0);
    if (r == 0 || g.bdim(0) == kNotBatched || g.bdim(1) == kNotBatched) return {};
    return at_front(g, g.call_self({front(g, 0), front(g, 1)},
                                   {{"axis", norm_axis(g, g.attrs().get_int("axis"), r) + 1}}));
  });
  b.add("cumprod_grad", [](BatchBuilder& g) -> Batched {  // x and dout batched alike
    int64_t r = logical_rank(g, 0);
    if (r == 0 || g.bdim(0) == kNotBatched || g.bdim(1) == kNotBatched) return {};
    return at_front(g, g.call_self({front(g, 0), front(g, 1)},
                                   {{"axis", norm_axis(g, g.attrs().get_int("axis"), r) + 1}}));
  });
  for (const char* n : {"top_k", "tril", "triu"}) b.add(n, trailing);
  b.add("gather_elements", [](BatchBuilder& g) -> Batched {
    if (g.bdim(1) == kNotBatched) return {};  // an unbatched index would need broadcasting first
    return at_front(
        g, g.call_self({front(g, 0), front(g, 1)},
                       {{"dim", norm_axis(g, g.attrs().get_int("dim"), logical_rank(g, 0)) + 1}}));
  });
  b.add("reshape", reshape_rule);
  b.add("flatten", flatten_rule);
  b.add("expand_dims", expand_dims_rule);
  b.add("squeeze", squeeze_rule);
  b.add("transpose", transpose_rule);
  b.add("broadcast_to", broadcast_to_rule);
  b.add("broadcast_like", broadcast_like_rule);
  b.add("tile", tile_rule);
  b.add("slice", slice_rule);
  b.add("strided_slice", strided_slice_rule);
  b.add("strided_slice_grad", strided_slice_grad_rule);
  b.add("concat", concat_rule);
  b.add("stack", stack_rule);
  b.add("gather", gather_rule);
  b.add("pad", pad_rule);
  b.add("pad_grad", pad_grad_rule);
  b.add("embedding", embedding_rule);
  b.add("one_hot", one_hot_rule);
}

}  // namespace mycel
