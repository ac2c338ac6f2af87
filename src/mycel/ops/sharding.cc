// Layouts, the rule lookup, and rules written as dim labels (see sharding.h).
#include "mycel/ops/sharding.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/ops/registry.h"

namespace mycel::shard {

// ---- DeviceMatrix / TensorLayout ----------------------------------------------------------

int64_t DeviceMatrix::size() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> DeviceMatrix::coords(int64_t rank) const {
  std::vector<int64_t> c(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    c[i] = rank % dims[i];
    rank /= dims[i];
  }
  return c;
}

std::vector<int64_t> DeviceMatrix::group(int64_t rank, const std::vector<int>& axes) const {
  std::vector<int64_t> base = coords(rank);
  int64_t count = 1;
  for (int a : axes) count *= dims.at(a);
  std::vector<int64_t> out;
  out.reserve(count);
  for (int64_t k = 0; k < count; ++k) {
    // k's digits over `axes` (row-major, last axis fastest) replace base's coordinates there.
    std::vector<int64_t> c = base;
    int64_t rest = k;
    for (size_t j = axes.size(); j-- > 0;) {
      c[axes[j]] = rest % dims[axes[j]];
      rest /= dims[axes[j]];
    }
    int64_t r = 0;
    for (size_t i = 0; i < dims.size(); ++i) r = r * dims[i] + c[i];
    out.push_back(r);
  }
  return out;
}

Dims TensorLayout::split_counts() const {
  Dims d(shape.size(), 1);
  for (size_t i = 0; i < tensor_map.size() && i < shape.size(); ++i)
    if (tensor_map[i] >= 0) d[i] = device.dims.at(tensor_map[i]);
  return d;
}

Shape TensorLayout::slice_shape() const {
  Shape s = shape;
  Dims d = split_counts();
  for (size_t i = 0; i < s.size(); ++i) s[i] /= d[i];
  return s;
}

std::vector<int64_t> TensorLayout::slice_offset(int64_t rank) const {
  std::vector<int64_t> c = device.coords(rank), off(shape.size(), 0);
  Shape sl = slice_shape();
  for (size_t i = 0; i < shape.size(); ++i)
    if (tensor_map[i] >= 0) off[i] = c[tensor_map[i]] * sl[i];
  return off;
}

bool TensorLayout::operator==(const TensorLayout& o) const {
  return device == o.device && tensor_map == o.tensor_map && shape == o.shape &&
         partial == o.partial;
}

namespace {
template <class T>
std::string list_str(const std::vector<T>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "]";
  return s.str();
}
}  // namespace

std::string TensorLayout::str() const {
  std::string s =
      "dev" + list_str(device.dims) + " map" + list_str(tensor_map) + " shape" + shape_str(shape);
  if (!partial.empty()) s += " partial" + list_str(partial);
  return s;
}

void TensorLayout::check(const std::string& what) const {
  if (tensor_map.size() != shape.size())
    MYCEL_THROW(ValueError, "[", what, "] layout ", str(), ": tensor map has ", tensor_map.size(),
                " entries for a ", shape.size(), "-d tensor");
  std::vector<bool> used(device.dims.size(), false);
  for (size_t i = 0; i < shape.size(); ++i) {
    int a = tensor_map[i];
    if (a < -1 || a >= static_cast<int>(device.dims.size()))
      MYCEL_THROW(ValueError, "[", what, "] layout ", str(), ": dim ", i, " maps to axis ", a,
                  " of a ", device.dims.size(), "-axis device matrix");
    if (a < 0) continue;
    if (used[a])
      MYCEL_THROW(ValueError, "[", what, "] layout ", str(), ": axis ", a, " splits two dims");
    used[a] = true;
    if (shape[i] % device.dims[a] != 0)
      MYCEL_THROW(ValueError, "[", what, "] layout ", str(), ": dim ", i, " of size ", shape[i],
                  " does not divide into ", device.dims[a], " slices");
  }
  for (int a : partial)
    if (a < 0 || a >= static_cast<int>(device.dims.size()) || used[a])
      MYCEL_THROW(ValueError, "[", what, "] layout ", str(), ": partial axis ", a,
                  " is invalid or splits a dim");
}

TensorLayout layout_from_dims(const Shape& shape, const Dims& dims, int64_t device_num) {
  if (dims.size() != shape.size())
    MYCEL_THROW(ValueError, "[layout] strategy ", list_str(dims), " has ", dims.size(),
                " entries for shape ", shape_str(shape));
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d < 1)
      MYCEL_THROW(ValueError, "[layout] strategy ", list_str(dims), " has a split count < 1");
    p *= d;
  }
  if (device_num % p != 0)
    MYCEL_THROW(ValueError, "[layout] strategy ", list_str(dims), " uses ", p,
                " devices, which does not divide ", device_num);
  TensorLayout l;
  l.shape = shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    l.device.dims.push_back(dims[i]);
    l.tensor_map.push_back(dims[i] > 1 ? static_cast<int>(i) : -1);
  }
  l.device.dims.push_back(device_num / p);  // the last axis repeats the slices
  l.check("layout");
  return l;
}

TensorLayout replicated(const Shape& shape, int64_t device_num) {
  return layout_from_dims(shape, Dims(shape.size(), 1), device_num);
}

std::string ShardPlan::str() const {
  std::ostringstream s;
  s << "dev" << list_str(device.dims);
  for (size_t i = 0; i < inputs.size(); ++i) s << " in" << i << "{" << inputs[i].str() << "}";
  for (size_t i = 0; i < outputs.size(); ++i) s << " out" << i << "{" << outputs[i].str() << "}";
  for (const Comm& c : comms) s << " " << c.op << "(" << c.reduce_op << ")axes" << list_str(c.axes);
  return s.str();
}

int64_t bytes_of(int64_t n, DType t) { return n * static_cast<int64_t>(itemsize(t)); }

// ---- Labels -------------------------------------------------------------------------------

namespace {

std::string input_name(const ShardContext& c, size_t i) {
  return i < c.op.inputs.size() ? c.op.inputs[i].name : std::to_string(i);
}

// The split count of every label under `s`, checked for agreement, divisibility and fixedness.
std::map<char, int64_t> label_splits(const ShardContext& c, const Strategy& s,
                                     const LabelSpec& spec) {
  const std::string& op = c.op.name;
  if (s.size() != spec.inputs.size())
    MYCEL_THROW(ValueError, "[", op, "] strategy has ", s.size(),
                " entries, expected one per input (", spec.inputs.size(), ")");
  std::map<char, int64_t> split;
  std::map<char, std::string> where;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const std::string& lab = spec.inputs[i];
    if (!c.has_input(i)) {
      if (!s[i].empty() && std::any_of(s[i].begin(), s[i].end(), [](int64_t v) { return v != 1; }))
        MYCEL_THROW(ValueError, "[", op, "] strategy for absent input '", input_name(c, i),
                    "' must be empty");
      continue;
    }
    const Shape& sh = c.in(i).shape;
    if (s[i].size() != lab.size())
      MYCEL_THROW(ValueError, "[", op, "] strategy for input '", input_name(c, i), "' has ",
                  s[i].size(), " entries, expected ", lab.size(), " (its rank; shape ",
                  shape_str(sh), ")");
    for (size_t d = 0; d < lab.size(); ++d) {
      const int64_t v = s[i][d];
      const char l = lab[d];
      const std::string here = "input '" + input_name(c, i) + "' dim " + std::to_string(d);
      if (v < 1)
        MYCEL_THROW(ValueError, "[", op, "] strategy for ", here, " is ", v, ", expected >= 1");
      if (v > 1 && (l == '1' || spec.fixed.find(l) != std::string::npos))
        MYCEL_THROW(ValueError, "[", op, "] ", here, " cannot be split (",
                    l == '1' ? "it is broadcast" : "the op needs it whole", "), strategy gives ",
                    v);
      if (v > 1 && sh[d] % v != 0)
        MYCEL_THROW(ValueError, "[", op, "] ", here, " of size ", sh[d], " does not divide into ",
                    v, " slices");
      if (l == '1') continue;
      auto it = split.find(l);
      if (it == split.end()) {
        split[l] = v;
        where[l] = here;
      } else if (it->second != v) {
        MYCEL_THROW(ValueError, "[", op, "] ", here, " is split in ", v, " but ", where[l],
                    " (the same dimension) in ", it->second, ": they must agree");
      }
    }
  }
  return split;
}

// Labels in order of first appearance over the inputs, without '1'.
std::string label_order(const LabelSpec& spec) {
  std::string order;
  for (const std::string& lab : spec.inputs)
    for (char l : lab)
      if (l != '1' && order.find(l) == std::string::npos) order += l;
  return order;
}

bool in_outputs(const LabelSpec& spec, char l) {
  for (const std::string& o : spec.outputs)
    if (o.find(l) != std::string::npos) return true;
  return false;
}

std::vector<int64_t> divisors_of(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

}  // namespace

ShardPlan plan_from_labels(const ShardContext& c, const Strategy& s, const LabelSpec& spec) {
  std::map<char, int64_t> split = label_splits(c, s, spec);
  int64_t used = 1;
  std::string order = label_order(spec), axes_labels;
  for (char l : order)
    if (split[l] > 1) {
      used *= split[l];
      axes_labels += l;
    }
  if (c.device_num % used != 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] strategy uses ", used,
                " devices, which does not divide device_num ", c.device_num);
  ShardPlan p;
  for (char l : axes_labels) p.device.dims.push_back(split[l]);
  // The last axis repeats the work: splits stay outermost, so an op splitting the batch in 2 of
  // 4 devices lays it out as one splitting it in 2 with a second split inside.
  p.device.dims.push_back(c.device_num / used);
  auto axis_of = [&](char l) {
    size_t k = axes_labels.find(l);
    return k == std::string::npos ? -1 : static_cast<int>(k);
  };
  auto layout = [&](const std::string& lab, const Shape& shape) {
    TensorLayout t;
    t.device = p.device;
    t.shape = shape;
    for (char l : lab) t.tensor_map.push_back(l == '1' ? -1 : axis_of(l));
    return t;
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    p.inputs.push_back(c.has_input(i) ? layout(spec.inputs[i], c.in(i).shape) : TensorLayout{});
  for (size_t o = 0; o < spec.outputs.size() && o < c.outputs.size(); ++o) {
    TensorLayout t = layout(spec.outputs[o], c.outputs[o].shape);
    t.check(c.op.name);
    // Split labels this output lacks were summed over locally: a pending reduction over their axes.
    std::vector<int> partial;
    for (char l : axes_labels)
      if (spec.outputs[o].find(l) == std::string::npos) partial.push_back(axis_of(l));
    if (!partial.empty() && spec.no_partial)
      MYCEL_THROW(ValueError, "[", c.op.name,
                  "] cannot split the dimension it reduces (the strategy splits "
                  "label '",
                  axes_labels[static_cast<size_t>(partial[0])], "', which output ", o, " reduces)");
    if (!partial.empty())
      p.comms.push_back(Comm{"all_reduce", partial, spec.reduce_op, static_cast<int>(o),
                             bytes_of(numel(t.slice_shape()), c.outputs[o].dtype)});
    p.outputs.push_back(t);
  }
  return p;
}

std::vector<Strategy> strategies_from_labels(const ShardContext& c, const LabelSpec& spec) {
  // Each label's size (from the first input that has it) bounds its split.
  std::map<char, int64_t> size;
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (c.has_input(i))
      for (size_t d = 0; d < spec.inputs[i].size(); ++d)
        size.emplace(spec.inputs[i][d], c.in(i).shape[d]);
  std::string labels;
  for (char l : label_order(spec))
    if (spec.fixed.find(l) == std::string::npos && !(spec.no_partial && !in_outputs(spec, l)))
      labels += l;
  const std::vector<int64_t> divs = divisors_of(c.device_num);
  std::vector<Strategy> out;
  std::map<char, int64_t> pick;
  auto emit = [&] {
    Strategy s;
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      Dims d;
      if (c.has_input(i))
        for (char l : spec.inputs[i])
          d.push_back(pick.count(l) ? pick[l] : 1);  // fixed and '1': whole
      s.push_back(d);
    }
    out.push_back(s);
  };
  // Depth-first over labels: every product that divides device_num (the replicated one first).
  std::function<void(size_t, int64_t)> go = [&](size_t k, int64_t used) {
    if (k == labels.size()) {
      if (used > 1) emit();
      return;
    }
    for (int64_t d : divs) {
      if (c.device_num % (used * d) != 0 || size[labels[k]] % d != 0) continue;
      pick[labels[k]] = d;
      go(k + 1, used * d);
    }
    pick[labels[k]] = 1;
  };
  for (char l : labels) pick[l] = 1;
  emit();  // replicated first
  go(0, 1);
  return out;
}

ShardRule label_rule(std::function<LabelSpec(const ShardContext&)> spec_of) {
  ShardRule r;
  r.plan = [spec_of](const ShardContext& c, const Strategy& s) {
    return plan_from_labels(c, s, spec_of(c));
  };
  r.strategies = [spec_of](const ShardContext& c) { return strategies_from_labels(c, spec_of(c)); };
  return r;
}

CostFn label_cost(std::function<LabelSpec(const ShardContext&)> spec_of) {
  return [spec_of](const ShardContext& c, const ShardPlan& p) {
    const LabelSpec spec = spec_of(c);
    OpCost k;
    // Slice size of each label, from the input layouts.
    std::map<char, int64_t> slice;
    bool reduces = false;
    for (size_t i = 0; i < spec.inputs.size() && i < p.inputs.size(); ++i) {
      if (!c.has_input(i)) continue;
      Shape sl = p.inputs[i].slice_shape();
      for (size_t d = 0; d < spec.inputs[i].size(); ++d) {
        slice.emplace(spec.inputs[i][d], sl[d]);
        if (spec.inputs[i][d] != '1' && !in_outputs(spec, spec.inputs[i][d])) reduces = true;
      }
      k.bytes_read += static_cast<double>(bytes_of(numel(sl), c.in(i).dtype));
    }
    for (size_t o = 0; o < p.outputs.size(); ++o)
      k.bytes_written +=
          static_cast<double>(bytes_of(numel(p.outputs[o].slice_shape()), c.outputs[o].dtype));
    if (reduces) {  // a contraction: 2 flops per term over every label
      double f = 2;
      for (auto& [l, n] : slice)
        if (l != '1') f *= static_cast<double>(n);
      k.flops = f;
    } else {
      for (const TensorLayout& t : p.outputs)
        k.flops += static_cast<double>(numel(t.slice_shape()));
    }
    return k;
  };
}

LabelSpec broadcast_spec(const ShardContext& c, const Shape& full) {
  LabelSpec s;
  std::string ol;
  for (size_t d = 0; d < full.size(); ++d) ol += static_cast<char>('a' + d);
  for (size_t i = 0; i < c.op.inputs.size(); ++i) {
    std::string lab;
    if (c.has_input(i)) {
      const Shape& sh = c.in(i).shape;
      const size_t off = full.size() - sh.size();
      for (size_t d = 0; d < sh.size(); ++d)
        lab += (sh[d] == 1 && full[off + d] != 1) ? '1' : ol[off + d];
    }
    s.inputs.push_back(lab);
  }
  s.outputs.push_back(ol);
  return s;
}

LabelSpec elementwise_spec(const ShardContext& c) {
  LabelSpec s = broadcast_spec(c, c.outputs.at(0).shape);
  s.outputs.assign(c.outputs.size(), s.outputs[0]);
  return s;
}

void set_label_rule(OpDef& op, std::function<LabelSpec(const ShardContext&)> spec_of) {
  op.shard = label_rule(spec_of);
  op.cost = label_cost(spec_of);
}

std::string labels(size_t n, char first) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>(first + i);
  return s;
}

// ---- Lookup -------------------------------------------------------------------------------

ShardRule rule_of(const OpDef& op) {
  if (op.shard) return op.shard;
  if (op.elementwise) return label_rule(elementwise_spec);
  return {};
}

ShardPlan plan(const ShardContext& c, const Strategy& strategy) {
  ShardRule r = rule_of(c.op);
  if (r) return r.plan(c, strategy);
  // Replicated only: every input whole on every rank.
  for (size_t i = 0; i < strategy.size(); ++i)
    for (int64_t v : strategy[i])
      if (v != 1)
        MYCEL_THROW(ValueError, "[", c.op.name,
                    "] has no sharding rule: it runs replicated only (strategy for input ", i,
                    " splits a dim in ", v, ")");
  ShardPlan p;
  p.device.dims = {c.device_num};
  for (size_t i = 0; i < c.inputs.size(); ++i)
    p.inputs.push_back(c.has_input(i) ? replicated(c.in(i).shape, c.device_num) : TensorLayout{});
  for (const TensorMeta& m : c.outputs) p.outputs.push_back(replicated(m.shape, c.device_num));
  for (auto& t : p.inputs) t.device = p.device, t.tensor_map.assign(t.shape.size(), -1);
  for (auto& t : p.outputs) t.device = p.device, t.tensor_map.assign(t.shape.size(), -1);
  return p;
}

std::vector<Strategy> strategies(const ShardContext& c) {
  ShardRule r = rule_of(c.op);
  if (r && r.strategies) return r.strategies(c);
  Strategy s;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    s.push_back(c.has_input(i) ? Dims(c.in(i).shape.size(), 1) : Dims{});
  return {s};
}

OpCost cost(const ShardContext& c, const ShardPlan& p) {
  if (c.op.cost) return c.op.cost(c, p);
  if (!c.op.shard && c.op.elementwise) return label_cost(elementwise_spec)(c, p);
  OpCost k;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    if (c.has_input(i))
      k.bytes_read +=
          static_cast<double>(bytes_of(numel(p.inputs[i].slice_shape()), c.in(i).dtype));
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    const double n = static_cast<double>(numel(p.outputs[o].slice_shape()));
    k.flops += n;
    k.bytes_written += static_cast<double>(bytes_of(static_cast<int64_t>(n), c.outputs[o].dtype));
  }
  return k;
}

}  // namespace mycel::shard
