// Stage: the loop structure of one scheduled compute tensor (split, reorder, loop kinds), checked
// as it is built so that the lowering (codegen.cc) only has to follow it.
#include <algorithm>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {

Stage::Stage(Tensor t) : tensor_(std::move(t)) {
  MYCEL_CHECK(tensor_ && tensor_->body, ValueError, "[te schedule] '",
              tensor_ ? tensor_->name : "?",
              "' is a placeholder; only te.compute tensors have loops to schedule");
  loops_ = tensor_->axes;
  if (reduces())
    loops_.insert(loops_.end(), tensor_->body->raxes.begin(), tensor_->body->raxes.end());
}

bool Stage::reduces() const { return tensor_->body->op == Op::Reduce; }

size_t Stage::position(const IterVar& v, const char* what) const {
  auto it = std::find(loops_.begin(), loops_.end(), v);
  MYCEL_CHECK(
      v && it != loops_.end(), ValueError, "[te schedule] ", what, ": '", v ? v->name : "None",
      "' is not a loop of '", tensor_->name, "' (its loops now: ",
      [&] {
        std::string s;
        for (auto& l : loops_) s += (s.empty() ? "" : ", ") + l->name;
        return s;
      }(),
      ")");
  return static_cast<size_t>(it - loops_.begin());
}

std::pair<IterVar, IterVar> Stage::split(const IterVar& v, int64_t factor) {
  size_t at = position(v, "split");
  MYCEL_CHECK(factor >= 1, ValueError, "[te schedule] split of '", v->name,
              "': factor must be >= 1, got ", factor);
  for (auto& [var, k] : kinds_)
    MYCEL_CHECK(var != v.get(), ValueError, "[te schedule] split of '", v->name,
                "': the loop already has a kind; split first, then mark the pieces");
  MYCEL_CHECK(!attach_tensor_, ValueError, "[te schedule] split of '", v->name, "': '",
              tensor_->name, "' is computed at '", attach_tensor_ ? attach_tensor_->name : "",
              "', whose loop sets its region; its own axes stay unsplit");
  MYCEL_CHECK(!is_symbolic(v->hi), ValueError, "[te schedule] split of '", v->name,
              "': its extent is a size variable (te.var); schedules need static extents");
  int64_t extent = v->hi - v->lo;
  IterVar outer = make_var(v->name + ".outer", 0, (extent + factor - 1) / factor, v->reduce);
  IterVar inner = make_var(v->name + ".inner", 0, std::min(factor, extent), v->reduce);
  loops_[at] = outer;
  loops_.insert(loops_.begin() + static_cast<std::ptrdiff_t>(at) + 1, inner);
  splits_.push_back({v, outer, inner, factor});
  return {outer, inner};
}

void Stage::reorder(const std::vector<IterVar>& order) {
  std::vector<size_t> slots;
  for (auto& v : order) {
    size_t p = position(v, "reorder");
    MYCEL_CHECK(std::find(slots.begin(), slots.end(), p) == slots.end(), ValueError,
                "[te schedule] reorder: loop '", v->name, "' is listed twice");
    slots.push_back(p);
  }
  std::vector<size_t> sorted = slots;
  std::sort(sorted.begin(), sorted.end());
  std::vector<IterVar> next = loops_;
  for (size_t k = 0; k < order.size(); ++k) next[sorted[k]] = order[k];
  loops_ = std::move(next);
}

void Stage::set_kind(const IterVar& v, LoopKind k) {
  const char* what = k == LoopKind::parallel     ? "parallel"
                     : k == LoopKind::vectorized ? "vectorize"
                                                 : "unroll";
  position(v, what);
  // A reduce loop carries the accumulation into one output element: its iterations are not
  // independent, so neither threads nor simd lanes may split it here.
  MYCEL_CHECK(!(v->reduce && (k == LoopKind::parallel || k == LoopKind::vectorized)), ValueError,
              "[te schedule] ", what, ": '", v->name, "' is a reduce loop of '", tensor_->name,
              "'; only loops over output axes may run in parallel or vectorized");
  MYCEL_CHECK(!(attach_tensor_ && k == LoopKind::parallel), ValueError, "[te schedule] parallel: '",
              tensor_->name, "' is computed at '", attach_tensor_ ? attach_tensor_->name : "",
              "'; it runs on the thread of that loop");
  for (auto& [var, kind] : kinds_)
    if (var == v.get()) {
      kind = k;
      return;
    }
  kinds_.emplace_back(v.get(), k);
}

void Stage::compute_at(const Stage& consumer, const IterVar& axis) {
  MYCEL_CHECK(consumer.tensor_ != tensor_, ValueError, "[te schedule] compute_at: '", tensor_->name,
              "' cannot be computed inside its own loops");
  consumer.position(axis, "compute_at");
  MYCEL_CHECK(splits_.empty(), ValueError, "[te schedule] compute_at: '", tensor_->name,
              "' has split loops; a tensor computed at another keeps its axes unsplit (its loops "
              "cover the region its consumer needs)");
  for (auto& [var, k] : kinds_)
    MYCEL_CHECK(k != LoopKind::parallel, ValueError, "[te schedule] compute_at: '", tensor_->name,
                "' has the parallel loop '", var->name,
                "'; a tensor computed inside another's loop runs on that loop's thread");
  attach_tensor_ = consumer.tensor_;
  attach_axis_ = axis;
}

LoopKind Stage::kind(const IterVarNode* v) const {
  for (auto& [var, k] : kinds_)
    if (var == v) return k;
  return LoopKind::serial;
}

}  // namespace mycel::te
