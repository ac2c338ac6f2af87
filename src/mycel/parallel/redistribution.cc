// Redistribution planning and eager execution (see redistribution.h). Both layouts are first put
// on one refined device matrix, where every original axis is a run of refined axes: then a tensor
// dim is split by a list of refined axes (outermost first) and each step moves one axis.
#include "mycel/parallel/redistribution.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/parallel/communicator.h"

namespace mycel::parallel {

using shard::DeviceMatrix;
using shard::TensorLayout;

namespace {

using Ints = std::vector<int64_t>;

// Strides of each axis (row-major): the suffix products.
Ints strides_of(const Ints& dims) {
  Ints s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// The common refinement of two device matrices of the same size: the union of their strides must
// form a chain where each divides the next. Returns the refined dims (outermost first), or empty.
Ints refine(const Ints& a, const Ints& b, int64_t n) {
  std::set<int64_t> cuts = {n};
  for (const Ints* m : {&a, &b}) {
    Ints s = strides_of(*m);
    for (size_t i = 0; i < m->size(); ++i) cuts.insert(s[i]);
  }
  Ints chain(cuts.begin(), cuts.end());  // ascending, starts at 1
  Ints dims;
  for (size_t i = chain.size(); i-- > 1;) {
    if (chain[i] % chain[i - 1] != 0) return {};
    dims.push_back(chain[i] / chain[i - 1]);
  }
  return dims;
}

// A layout on the refined matrix: each tensor dim's axes (outermost first), pending-sum axes.
struct Canon {
  Ints dev;
  std::vector<std::vector<int>> dims;
  std::vector<int> partial;
};

// The refined axes that make up axis `axis` of `orig` (outermost first).
std::vector<int> refined_axes(const Ints& orig, int axis, const Ints& refined) {
  const Ints so = strides_of(orig), sr = strides_of(refined);
  const int64_t lo = so[axis], hi = so[axis] * orig[axis];
  std::vector<int> out;
  for (size_t j = 0; j < refined.size(); ++j)
    if (sr[j] >= lo && sr[j] < hi && refined[j] > 1) out.push_back(static_cast<int>(j));
  return out;
}

Canon canon(const TensorLayout& l, const Ints& refined) {
  Canon c;
  c.dev = refined;
  for (int a : l.tensor_map)
    c.dims.push_back(a < 0 ? std::vector<int>{} : refined_axes(l.device.dims, a, refined));
  for (int a : l.partial)
    for (int r : refined_axes(l.device.dims, a, refined)) c.partial.push_back(r);
  return c;
}

bool is_prefix(const std::vector<int>& p, const std::vector<int>& v) {
  return p.size() <= v.size() && std::equal(p.begin(), p.end(), v.begin());
}

// Builds the steps for one rank, tracking the local shape.
struct Planner {
  Ints dev;
  Ints coords;
  int64_t rank;
  Shape local;
  DType dtype;
  RedistPlan plan;

  Ints group(const std::vector<int>& axes) const { return DeviceMatrix{dev}.group(rank, axes); }
  int64_t bytes() const { return shard::bytes_of(numel(local), dtype); }

  void add(RedistStep s) {
    plan.comm_bytes += s.bytes;
    plan.steps.push_back(std::move(s));
  }
  // Moves dim d to the front (and back): our all_gather and reduce_scatter work on dim 0.
  Ints front_perm(size_t d) const {
    Ints p = {static_cast<int64_t>(d)};
    for (size_t i = 0; i < local.size(); ++i)
      if (i != d) p.push_back(static_cast<int64_t>(i));
    return p;
  }
  Ints inverse(const Ints& p) const {
    Ints q(p.size());
    for (size_t i = 0; i < p.size(); ++i) q[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
    return q;
  }
  void on_dim0(size_t d, RedistStep s) {
    if (d != 0) add({"transpose", {{"perm", front_perm(d)}}, {}, 0});
    add(std::move(s));
    if (d != 0) add({"transpose", {{"perm", inverse(front_perm(d))}}, {}, 0});
  }
  void all_gather(size_t d, int a) {
    RedistStep s{"all_gather", {}, group({a}), bytes()};
    on_dim0(d, s);
    local[d] *= dev[a];
  }
  void reduce_scatter(size_t d, int a) {
    RedistStep s{"reduce_scatter", {{"reduce_op", std::string("sum")}}, group({a}), bytes()};
    on_dim0(d, s);
    local[d] /= dev[a];
  }
  void all_reduce(const std::vector<int>& axes) {
    add({"all_reduce", {{"reduce_op", std::string("sum")}}, group(axes), bytes()});
  }
  void all_to_all(size_t split, size_t concat, int a) {
    add({"all_to_all",
         {{"split_count", dev[a]},
          {"split_dim", static_cast<int64_t>(split)},
          {"concat_dim", static_cast<int64_t>(concat)}},
         group({a}),
         bytes()});
    local[split] /= dev[a];
    local[concat] *= dev[a];
  }
  void split(size_t d, int64_t parts, int64_t index) {
    Ints begin(local.size(), 0), size = local;
    size[d] = local[d] / parts;
    begin[d] = index * size[d];
    add({"slice", {{"begin", begin}, {"size", size}}, {}, 0});
    local[d] = size[d];
  }

  // Gathers every axis `cur` uses that `want` does not start with, preferring AlltoAll into a
  // dim that takes the axis next; then settles pending sums.
  void gather(Canon& cur, const Canon* want) {
    auto target = [&](size_t d) { return want ? want->dims[d] : std::vector<int>{}; };
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t d = 0; d < cur.dims.size(); ++d) {
        if (is_prefix(cur.dims[d], target(d))) continue;
        const int a = cur.dims[d].back();
        cur.dims[d].pop_back();
        moved = true;
        bool done = false;
        for (size_t e = 0; e < cur.dims.size() && want && !done; ++e) {
          if (e == d) continue;
          std::vector<int> next = cur.dims[e];
          next.push_back(a);
          if (is_prefix(next, target(e))) {
            all_to_all(e, d, a);
            cur.dims[e] = next;
            done = true;
          }
        }
        if (!done) all_gather(d, a);
      }
    }
    std::vector<int> rest;
    for (int a : cur.partial) {
      bool done = false;
      for (size_t d = 0; d < cur.dims.size() && want && !done; ++d) {
        std::vector<int> next = cur.dims[d];
        next.push_back(a);
        if (is_prefix(next, target(d))) {
          reduce_scatter(d, a);
          cur.dims[d] = next;
          done = true;
        }
      }
      if (!done) rest.push_back(a);
    }
    if (!rest.empty()) all_reduce(rest);
    cur.partial.clear();
  }

  // Slices locally what `want` splits beyond `cur`.
  void slice_to(const Canon& cur, const Canon& want, const Ints& want_coords) {
    for (size_t d = 0; d < want.dims.size(); ++d)
      for (size_t k = cur.dims[d].size(); k < want.dims[d].size(); ++k) {
        const int a = want.dims[d][k];
        split(d, want.dev[a], want_coords[a]);
      }
  }
};

}  // namespace

std::string RedistStep::str() const {
  std::ostringstream s;
  s << op << "(";
  bool first = true;
  for (auto& [k, v] : attrs) {
    s << (first ? "" : ", ") << k << "=";
    first = false;
    if (auto* i = std::get_if<int64_t>(&v))
      s << *i;
    else if (auto* str = std::get_if<std::string>(&v))
      s << *str;
    else if (auto* is = std::get_if<std::vector<int64_t>>(&v))
      s << shape_str(*is);
  }
  if (!group.empty()) s << (first ? "" : ", ") << "ranks=" << shape_str(group);
  s << ")";
  return s.str();
}

std::string RedistPlan::str() const {
  std::string s;
  for (size_t i = 0; i < steps.size(); ++i) s += (i ? " -> " : "") + steps[i].str();
  return s.empty() ? "(nothing)" : s;
}

RedistPlan plan_redistribution(const TensorLayout& from, const TensorLayout& to, int64_t rank,
                               DType dtype) {
  from.check("redistribution");
  to.check("redistribution");
  if (from.shape != to.shape)
    MYCEL_THROW(ValueError, "[redistribution] layouts of different tensors: ", from.str(), " vs ",
                to.str());
  const int64_t n = from.device.size();
  if (to.device.size() != n)
    MYCEL_THROW(ValueError, "[redistribution] layouts on ", n, " and ", to.device.size(),
                " devices: ", from.str(), " vs ", to.str());
  if (!to.partial.empty())
    MYCEL_THROW(ValueError, "[redistribution] the target layout ", to.str(), " has a pending sum");
  if (rank < 0 || rank >= n)
    MYCEL_THROW(ValueError, "[redistribution] rank ", rank, " is not in [0, ", n, ")");
  Planner p;
  p.rank = rank;
  p.local = from.slice_shape();
  p.dtype = dtype;
  Ints refined = refine(from.device.dims, to.device.dims, n);
  if (!refined.empty()) {
    p.dev = refined;
    Canon cur = canon(from, refined), want = canon(to, refined);
    p.gather(cur, &want);
    p.slice_to(cur, want, DeviceMatrix{refined}.coords(rank));
  } else {  // no common refinement: through the whole tensor
    p.dev = from.device.dims;
    Canon cur = canon(from, from.device.dims);
    p.gather(cur, nullptr);
    Canon want = canon(to, to.device.dims);
    p.slice_to(cur, want, to.device.coords(rank));
  }
  return p.plan;
}

std::string group_for(const std::vector<int64_t>& ranks) {
  if (ranks.size() == static_cast<size_t>(world_size())) {
    bool identity = true;
    for (size_t i = 0; i < ranks.size(); ++i)
      identity = identity && ranks[i] == static_cast<int64_t>(i);
    if (identity) return kWorldGroup;
  }
  std::string name = "autopar";
  std::vector<int> r;
  for (int64_t k : ranks) {
    name += "_" + std::to_string(k);
    r.push_back(static_cast<int>(k));
  }
  static std::set<std::string>
      made;  // groups live until release(); names are unique per member list
  if (!made.count(name)) {
    create_group(name, r);
    made.insert(name);
  }
  return name;
}

Tensor run_step(const Tensor& x, const RedistStep& s) {
  std::map<std::string, AttrValue> a = s.attrs;
  if (!s.group.empty()) a["group"] = group_for(s.group);
  return call_op(s.op, {x}, a)[0];
}

Tensor redistribute(const Tensor& x, const TensorLayout& from, const TensorLayout& to) {
  if (x.shape() != from.slice_shape())
    MYCEL_THROW(ValueError, "[redistribute] x has shape ", shape_str(x.shape()), " but layout ",
                from.str(), " gives slices of ", shape_str(from.slice_shape()));
  if (from.device.size() != world_size())
    MYCEL_THROW(ValueError, "[redistribute] layout ", from.str(), " is on ", from.device.size(),
                " devices but the world has ", world_size(), " processes");
  RedistPlan p = plan_redistribution(from, to, world_rank(), x.dtype());
  Tensor y = x;
  for (const RedistStep& s : p.steps) y = run_step(y, s);
  return y;
}

}  // namespace mycel::parallel
