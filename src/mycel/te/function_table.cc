// The table of built TE functions that te_call ops refer to by id, and their gradients.
#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

struct Table {
  std::mutex mu;
  std::vector<std::shared_ptr<Function>> fns;
  std::map<int64_t, int64_t> grads;
  std::map<std::pair<int64_t, DType>, std::shared_ptr<Function>> retyped;
};

// A copy of a tensor graph in which every float value has dtype `to` (MindSpore's Custom ops are
// written once and used at the caller's float precision).
struct Retyper {
  DType to;
  std::map<const TensorNode*, Tensor> done;

  Tensor tensor(const Tensor& t) {
    if (auto it = done.find(t.get()); it != done.end()) return it->second;
    DType dt = is_float(t->dtype) ? to : t->dtype;
    Tensor r = t->body ? compute(t->shape, t->axes, expr(t->body), t->name)
                       : placeholder(t->shape, dt, t->name);
    return done[t.get()] = r;
  }
  Expr expr(const Expr& e) {
    auto n = std::make_shared<Node>(*e);
    for (auto& a : n->args) a = expr(a);
    if (n->op == Op::Load) n->tensor = tensor(e->tensor);
    if (is_float(n->dtype)) n->dtype = to;
    return n;
  }
};

Table& table() {
  static Table* t = new Table;  // never destroyed: kernels may run during static teardown
  return *t;
}

}  // namespace

std::shared_ptr<Function> build(std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                                const Schedule& schedule) {
  auto f = std::make_shared<Function>();
  f->sizes = size_vars(inputs, outputs);
  // A size is bound by the shape of an input at each call: a dimension that is the size, or an
  // expression holding it (solved by bind when it can be); a derived size is computed.
  std::function<bool(const Expr&, int64_t)> holds = [&](const Expr& e, int64_t s) {
    if (e->op == Op::Size && static_cast<int64_t>(e->value) == s) return true;
    return std::any_of(e->args.begin(), e->args.end(), [&](const Expr& a) { return holds(a, s); });
  };
  for (int64_t s : f->sizes) {
    bool bound = size_definition(s) != nullptr;
    for (auto& t : inputs)
      for (int64_t d : t->shape) {
        Expr def = is_symbolic(d) ? size_definition(d) : nullptr;
        bound = bound || d == s || (def && holds(def, s));
      }
    MYCEL_CHECK(bound, ValueError, "[te.build] size variable '", size_var_name(s),
                "' is the dimension of no input, so no call could set it");
  }
  if (!f->sizes.empty()) f->checks = index_checks(outputs);
  f->source = generate_cpp(inputs, outputs, schedule);
  f->kernel = compile(f->source);
  f->inputs = std::move(inputs);
  f->outputs = std::move(outputs);
  return f;
}

int64_t register_function(std::shared_ptr<Function> f) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.fns.push_back(std::move(f));
  return static_cast<int64_t>(t.fns.size()) - 1;
}

std::shared_ptr<Function> function_at(int64_t id) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  MYCEL_CHECK(id >= 0 && id < static_cast<int64_t>(t.fns.size()), ValueError,
              "[te_call] no TE function with id ", id, " (", t.fns.size(), " registered)");
  return t.fns[id];
}

std::shared_ptr<Function> function_for(int64_t id, const std::vector<DType>& dtypes) {
  auto f = function_at(id);
  std::optional<DType> target;
  bool same = dtypes.size() == f->inputs.size();
  for (size_t k = 0; same && k < dtypes.size(); ++k) {
    DType want = f->inputs[k]->dtype;
    if (dtypes[k] == want) continue;
    if (!is_float(want) || !is_float(dtypes[k]) || (target && *target != dtypes[k])) {
      same = false;
      break;
    }
    target = dtypes[k];
  }
  if (!same || !target) return f;  // the caller's shape/dtype check reports any mismatch
  auto& t = table();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (auto it = t.retyped.find({id, *target}); it != t.retyped.end()) return it->second;
  }
  Retyper r{*target, {}};
  std::vector<Tensor> ins, outs;
  for (auto& x : f->inputs) ins.push_back(r.tensor(x));
  for (auto& y : f->outputs) outs.push_back(r.tensor(y));
  auto g = build(ins, outs);
  std::lock_guard<std::mutex> lock(t.mu);
  return t.retyped.emplace(std::make_pair(id, *target), g).first->second;
}

int64_t gradient_function(int64_t id) {
  {
    auto& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    if (auto it = t.grads.find(id); it != t.grads.end()) return it->second;
  }
  auto f = function_at(id);
  std::vector<Tensor> heads, adjoint;
  for (auto& o : f->outputs) heads.push_back(placeholder(o->shape, o->dtype, "d_" + o->name));
  // Several outputs: the adjoints of each add up (linearity of the chain rule).
  std::vector<std::vector<Tensor>> parts;
  for (size_t q = 0; q < f->outputs.size(); ++q)
    parts.push_back(differentiate(f->outputs[q], f->inputs, heads[q], {}));
  for (size_t k = 0; k < f->inputs.size(); ++k) {
    Tensor sum = parts[0][k];
    for (size_t q = 1; q < parts.size(); ++q) {
      std::vector<IterVar> ax;
      std::vector<Expr> idx;
      for (size_t d = 0; d < sum->shape.size(); ++d) {
        ax.push_back(make_var("i" + std::to_string(d), 0, sum->shape[d], false));
        idx.push_back(var(ax.back()));
      }
      sum = compute(sum->shape, ax, binary(Op::Add, load(sum, idx), load(parts[q][k], idx)),
                    sum->name);
    }
    adjoint.push_back(sum);
  }
  std::vector<Tensor> ins = f->inputs;
  ins.insert(ins.end(), heads.begin(), heads.end());
  int64_t gid = register_function(build(ins, adjoint));
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.grads.emplace(id, gid).first->second;
}

}  // namespace mycel::te
