// Early starts and late waits of split collectives in a schedule (see place_split.h).
#include "mycel/backend/place_split.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace mycel::backend::detail {

using ir::Node;
using ir::NodePtr;

namespace {

Placement placement(const NodePtr& n) {
  auto* a = ir::as_apply(n);
  auto* c = a ? ir::as_constant(a->callee()) : nullptr;
  if (!c || c->value()->kind() != ir::ValueKind::kOp) return Placement::kAny;
  return static_cast<const ir::OpValue&>(*c->value()).op().placement;
}

// Ops and tuple plumbing may move with the start they feed; a call of a graph, a branch or
// anything with an effect stays where it was.
bool movable(const NodePtr& n) {
  auto* a = ir::as_apply(n);
  auto* c = a ? ir::as_constant(a->callee()) : nullptr;
  if (!c) return false;
  if (c->value()->kind() == ir::ValueKind::kOp) {
    const OpDef& op = static_cast<const ir::OpValue&>(*c->value()).op();
    return !op.effect && !op.random && op.mutated_inputs.empty();
  }
  return ir::is_prim_call(n, ir::Prim::kMakeTuple) || ir::is_prim_call(n, ir::Prim::kTupleGetItem);
}

}  // namespace

std::vector<NodePtr> place_split_collectives(
    const std::vector<NodePtr>& order,
    const std::function<std::vector<NodePtr>(const NodePtr&)>& deps) {
  const size_t n = order.size();
  std::unordered_map<const Node*, size_t> pos;
  std::vector<Placement> where(n);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    pos[order[i].get()] = i;
    where[i] = placement(order[i]);
    any |= where[i] != Placement::kAny;
  }
  if (!any) return order;
  std::vector<std::vector<size_t>> in(n), users(n);
  for (size_t i = 0; i < n; ++i)
    for (const NodePtr& d : deps(order[i])) {
      auto it = pos.find(d.get());
      if (it == pos.end()) continue;
      in[i].push_back(it->second);
      users[it->second].push_back(i);
    }

  // 1. Feeders: movable nodes whose every user is a start or a feeder (users come later).
  std::vector<char> feeder(n, 0), deferred(n, 0);
  for (size_t k = n; k-- > 0;) {
    if (where[k] == Placement::kEarly) deferred[k] = 1;
    if (where[k] != Placement::kAny || users[k].empty() || !movable(order[k])) continue;
    bool only = true;
    for (size_t u : users[k]) only &= where[u] == Placement::kEarly || feeder[u];
    feeder[k] = deferred[k] = only;
  }
  // Per start: its feeders (in order) and the other nodes they need.
  struct Start {
    size_t at;
    std::vector<size_t> feeders, needs;
  };
  std::vector<Start> starts;
  for (size_t s = 0; s < n; ++s) {
    if (where[s] != Placement::kEarly) continue;
    Start st{s, {}, {}};
    std::unordered_set<size_t> seen{s};
    std::vector<size_t> work{s};
    while (!work.empty()) {
      size_t x = work.back();
      work.pop_back();
      for (size_t d : in[x]) {
        if (!seen.insert(d).second) continue;
        if (feeder[d]) {
          st.feeders.push_back(d);
          work.push_back(d);
        } else {
          st.needs.push_back(d);
        }
      }
    }
    std::sort(st.feeders.begin(), st.feeders.end());
    starts.push_back(std::move(st));
  }

  // 2. Walk the order; a start (with its feeders) goes out as soon as all it needs is out.
  std::vector<char> out(n, 0);
  std::vector<size_t> placed;
  std::vector<char> started(starts.size(), 0);
  auto emit = [&](size_t k) {
    if (!out[k]) out[k] = 1, placed.push_back(k);
  };
  auto release_ready = [&] {
    for (bool again = true; again;) {
      again = false;
      for (size_t i = 0; i < starts.size(); ++i) {
        if (started[i]) continue;
        bool ready = true;
        for (size_t d : starts[i].needs) ready &= out[d] != 0;
        if (!ready) continue;
        for (size_t f : starts[i].feeders) emit(f);
        emit(starts[i].at);
        started[i] = again = true;
      }
    }
  };
  release_ready();
  for (size_t k = 0; k < n; ++k) {
    if (deferred[k]) continue;
    emit(k);
    release_ready();
  }
  for (size_t k = 0; k < n; ++k) emit(k);  // anything left (not expected), in the old order

  // 3. Waits sink to just before their first user (or to the end).
  std::vector<size_t> at(n);
  for (size_t i = 0; i < n; ++i) at[placed[i]] = i;
  std::unordered_map<size_t, std::vector<size_t>> before;  // position -> waits to put there
  std::vector<size_t> last;
  std::vector<char> sunk(n, 0);
  for (size_t i = 0; i < n; ++i) {
    size_t w = placed[i];
    if (where[w] != Placement::kLate) continue;
    size_t first = n;
    bool late_user = false;
    for (size_t u : users[w]) {
      first = std::min(first, at[u]);
      late_user |= where[u] == Placement::kLate;
    }
    if (late_user) continue;  // a wait that feeds a wait stays
    sunk[w] = 1;
    (first == n ? last : before[first]).push_back(w);
  }
  std::vector<NodePtr> result;
  result.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto b = before.find(i);
    if (b != before.end())
      for (size_t w : b->second) result.push_back(order[w]);
    if (!sunk[placed[i]]) result.push_back(order[placed[i]]);
  }
  for (size_t w : last) result.push_back(order[w]);
  return result;
}

}  // namespace mycel::backend::detail
