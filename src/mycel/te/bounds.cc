// Run-time bounds of reads indexed by size-variable values (x[i + n], x[n - 1 - i],
// flat[i * m + j]): whether such a read stays inside its tensor depends on the sizes a call binds,
// so the generated kernel (which never checks an index) runs only after the bound sizes have been
// checked here. Interval arithmetic over the loop ranges is exact for an index in which each
// variable appears once, the usual case; where it cannot bound an index it checks nothing.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

bool reads_size(const Expr& e) {
  if (e->op == Op::Size) return true;
  return std::any_of(e->args.begin(), e->args.end(), reads_size);
}

void collect(const Tensor& reader, const Expr& e, std::vector<IterVar>& loops,
             std::vector<IndexCheck>& out) {
  if (e->op == Op::Select) {  // an arm may be guarded by the condition: only the condition
    collect(reader, e->args[0], loops, out);
    return;
  }
  if (e->op == Op::Reduce) {
    const size_t n = loops.size();
    loops.insert(loops.end(), e->raxes.begin(), e->raxes.end());
    collect(reader, e->args[0], loops, out);
    loops.resize(n);
    return;
  }
  if (e->op == Op::Load)
    for (size_t k = 0; k < e->args.size(); ++k)
      if (reads_size(e->args[k])) out.push_back({reader, e->tensor, k, e->args[k], loops});
  for (auto& a : e->args) collect(reader, a, loops, out);
}

using Interval = std::pair<int64_t, int64_t>;  // inclusive

struct Eval {
  const std::vector<int64_t>& sizes;
  const std::vector<int64_t>& values;
  std::map<const IterVarNode*, Interval> ranges;

  int64_t size(int64_t code) const {
    if (!is_symbolic(code)) return code;
    auto at = static_cast<size_t>(std::find(sizes.begin(), sizes.end(), code) - sizes.begin());
    MYCEL_CHECK(at < values.size(), ValueError, "[te function] size variable '",
                size_var_name(code), "' has no value");
    return values[at];
  }

  std::optional<Interval> operator()(const Expr& e) const {
    auto arg = [&](int i) { return (*this)(e->args[static_cast<size_t>(i)]); };
    switch (e->op) {
      case Op::Const:
        if (is_float(e->dtype)) return std::nullopt;
        return Interval{static_cast<int64_t>(e->value), static_cast<int64_t>(e->value)};
      case Op::Size: {
        int64_t v = size(static_cast<int64_t>(e->value));
        return Interval{v, v};
      }
      case Op::Var: {
        auto it = ranges.find(e->var.get());
        if (it == ranges.end()) return std::nullopt;
        return it->second;
      }
      case Op::Cast:
        if (is_float(e->dtype) || is_float(e->args[0]->dtype)) return std::nullopt;
        return arg(0);
      case Op::Neg: {
        auto a = arg(0);
        if (!a) return std::nullopt;
        return Interval{-a->second, -a->first};
      }
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::Max:
      case Op::Min:
      case Op::Div: {
        auto a = arg(0), b = arg(1);
        if (!a || !b) return std::nullopt;
        if (e->op == Op::Add) return Interval{a->first + b->first, a->second + b->second};
        if (e->op == Op::Sub) return Interval{a->first - b->second, a->second - b->first};
        if (e->op == Op::Max)
          return Interval{std::max(a->first, b->first), std::max(a->second, b->second)};
        if (e->op == Op::Min)
          return Interval{std::min(a->first, b->first), std::min(a->second, b->second)};
        if (e->op == Op::Div) {  // floor division by a positive divisor is monotone in both
          if (b->first <= 0) return std::nullopt;
          auto fd = [](int64_t p, int64_t q) { return p / q - ((p % q != 0) && (p < 0)); };
          return Interval{std::min(fd(a->first, b->second), fd(a->first, b->first)),
                          std::max(fd(a->second, b->first), fd(a->second, b->second))};
        }
        const int64_t c[] = {a->first * b->first, a->first * b->second, a->second * b->first,
                             a->second * b->second};
        return Interval{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
      }
      case Op::Mod: {  // by a positive divisor: [0, divisor - 1], or the dividend if smaller
        auto a = arg(0), b = arg(1);
        if (!a || !b || b->first <= 0) return std::nullopt;
        if (a->first >= 0 && a->second < b->first) return a;
        return Interval{0, b->second - 1};
      }
      default:
        return std::nullopt;  // a data-dependent index (a load, a select) is not bounded here
    }
  }
};

}  // namespace

std::vector<IndexCheck> index_checks(const std::vector<Tensor>& outputs) {
  std::vector<IndexCheck> out;
  for (auto& t : topo_order(outputs)) {
    if (!t->body) continue;
    std::vector<IterVar> loops = t->axes;
    collect(t, t->body, loops, out);
  }
  return out;
}

void check_indices(const std::vector<IndexCheck>& checks, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& values, const char* who) {
  for (const IndexCheck& c : checks) {
    Eval ev{sizes, values, {}};
    bool empty = false;  // a loop without iterations reads nothing
    for (auto& l : c.loops) {
      const int64_t hi = ev.size(l->hi);
      empty = empty || hi <= l->lo;
      ev.ranges[l.get()] = {l->lo, hi - 1};
    }
    if (empty) continue;
    auto r = ev(c.index);
    if (!r) continue;
    const int64_t extent = ev.size(c.tensor->shape[c.dim]);
    if (r->first >= 0 && r->second < extent) continue;
    std::ostringstream sz;
    for (size_t k = 0; k < sizes.size(); ++k)
      sz << (k ? ", " : "") << size_var_name(sizes[k]) << " = " << values[k];
    MYCEL_THROW(IndexError, "[", who, "] '", c.reader->name, "' reads '", c.tensor->name,
                "' at index ", to_string(c.index), " in dimension ", c.dim, ", which reaches [",
                r->first, ", ", r->second, "] for ", sz.str(), ", outside its size ", extent, " (",
                shape_string(c.tensor->shape), ")");
  }
}

}  // namespace mycel::te
