// Reverse-mode AD on index expressions (the scheme of TVM's te.gradient): for each load
// X[f(i, r)] in Y[i] = body, the adjoint gets dX[j] += sum_{i, r : f(i, r) = j} dY[i] * dbody/dX.
// The index equations f_k = j_k are solved for a summation variable with unit coefficient where
// f is affine (that variable disappears from the sum, its range becomes a guard); otherwise the
// equation stays as a guard. Guards implied by the variable ranges are dropped, and zeros folded.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

using Linear = std::pair<std::map<const IterVarNode*, int64_t>, int64_t>;

std::optional<Linear> linear(const Expr& e) {
  switch (e->op) {
    case Op::Const:
      return Linear{{}, static_cast<int64_t>(e->value)};
    case Op::Var:
      return Linear{{{e->var.get(), 1}}, 0};
    case Op::Add:
    case Op::Sub: {
      auto a = linear(e->args[0]), b = linear(e->args[1]);
      if (!a || !b) return std::nullopt;
      int64_t s = e->op == Op::Add ? 1 : -1;
      for (auto& [v, c] : b->first) a->first[v] += s * c;
      a->second += s * b->second;
      return a;
    }
    case Op::Mul: {
      auto a = linear(e->args[0]), b = linear(e->args[1]);
      if (!a || !b) return std::nullopt;
      if (!a->first.empty() && !b->first.empty()) return std::nullopt;
      if (!a->first.empty()) std::swap(a, b);  // a is the constant factor
      for (auto& [v, c] : b->first) c *= a->second;
      b->second *= a->second;
      return b;
    }
    case Op::Neg: {
      auto a = linear(e->args[0]);
      if (!a) return std::nullopt;
      for (auto& [v, c] : a->first) c = -c;
      a->second = -a->second;
      return a;
    }
    default:
      return std::nullopt;
  }
}

Expr from_linear(const Linear& l, const std::map<const IterVarNode*, IterVar>& vars) {
  Expr r = constant(static_cast<double>(l.second), DType::int64);
  for (auto& [v, c] : l.first)
    if (c != 0)
      r = binary(Op::Add, r,
                 binary(Op::Mul, constant(static_cast<double>(c), DType::int64), var(vars.at(v))));
  return simplify(r);
}

// Inclusive bounds of an affine index expression from the ranges of its variables.
std::optional<std::pair<int64_t, int64_t>> bounds(const Expr& e) {
  auto l = linear(e);
  if (!l) return std::nullopt;
  int64_t lo = l->second, hi = l->second;
  for (auto& [v, c] : l->first) {
    int64_t a = c * v->lo, b = c * (v->hi - 1);
    lo += std::min(a, b);
    hi += std::max(a, b);
  }
  return std::make_pair(lo, hi);
}

// lo <= e < hi as a guard, or nothing when the ranges already imply it.
void add_range_guard(std::vector<Expr>& conds, const Expr& e, int64_t lo, int64_t hi) {
  auto b = bounds(e);
  if (!b || b->first < lo)
    conds.push_back(binary(Op::Ge, e, constant(static_cast<double>(lo), DType::int64)));
  if (!b || b->second >= hi)
    conds.push_back(binary(Op::Lt, e, constant(static_cast<double>(hi), DType::int64)));
}

Expr zero(DType t) { return constant(0, t); }
Expr one(DType t) { return constant(1, t); }

// d e / d (the load node x), forward symbolically; every occurrence of x is the variable.
Expr diff(const Expr& e, const Node* x) {
  if (e.get() == x) return one(e->dtype);
  if (!is_float(e->dtype) && e->op != Op::Select) return zero(e->dtype);
  DType t = e->dtype;
  auto d = [&](int i) { return diff(e->args[i], x); };
  auto a = [&](int i) { return e->args[i]; };
  auto mul = [](Expr p, Expr q) { return binary(Op::Mul, std::move(p), std::move(q)); };
  switch (e->op) {
    case Op::Const:
    case Op::Var:
    case Op::Size:
    case Op::Load:
      return zero(t);
    case Op::Add:
      return binary(Op::Add, d(0), d(1));
    case Op::Sub:
      return binary(Op::Sub, d(0), d(1));
    case Op::Mul:
      return binary(Op::Add, mul(d(0), a(1)), mul(a(0), d(1)));
    case Op::Div:
      return binary(Op::Sub, binary(Op::Div, d(0), a(1)),
                    binary(Op::Div, mul(a(0), d(1)), mul(a(1), a(1))));
    case Op::Neg:
      return unary(Op::Neg, d(0));
    case Op::Exp:
      return mul(e, d(0));
    case Op::Log:
      return binary(Op::Div, d(0), a(0));
    case Op::Sqrt:
      return binary(Op::Div, d(0), mul(constant(2, t), e));
    case Op::Rsqrt:
      return mul(mul(constant(-0.5, t), binary(Op::Div, e, a(0))), d(0));
    case Op::Tanh:
      return mul(binary(Op::Sub, one(t), mul(e, e)), d(0));
    case Op::Sigmoid:
      return mul(mul(e, binary(Op::Sub, one(t), e)), d(0));
    case Op::Abs:
      return select(binary(Op::Ge, a(0), zero(t)), d(0), unary(Op::Neg, d(0)));
    case Op::Sin:
      return mul(unary(Op::Cos, a(0)), d(0));
    case Op::Cos:
      return unary(Op::Neg, mul(unary(Op::Sin, a(0)), d(0)));
    case Op::Erf:  // 2 / sqrt(pi) e**(-x**2)
      return mul(
          mul(constant(1.12837916709551257, t), unary(Op::Exp, unary(Op::Neg, mul(a(0), a(0))))),
          d(0));
    case Op::Pow: {
      Expr da = mul(mul(a(1), binary(Op::Pow, a(0), binary(Op::Sub, a(1), one(t)))), d(0));
      Expr db = simplify(d(1));
      if (db->op == Op::Const && db->value == 0) return da;
      return binary(Op::Add, da, mul(mul(e, unary(Op::Log, a(0))), db));
    }
    case Op::Max:
      return select(binary(Op::Ge, a(0), a(1)), d(0), d(1));
    case Op::Min:
      return select(binary(Op::Le, a(0), a(1)), d(0), d(1));
    case Op::Select:
      return is_float(t) ? select(a(0), d(1), d(2)) : zero(t);
    case Op::Cast:
      return is_float(a(0)->dtype) ? cast(d(0), t) : zero(t);
    case Op::Reduce:  // LiftReductions moved every nested reduction into a compute of its own
      MYCEL_THROW(RuntimeError,
                  "[te.differentiate] internal: a reduction left inside an expression");
    default:
      return zero(t);
  }
}

void collect_loads(const Expr& e, std::vector<const Node*>& out, std::set<const Node*>& seen) {
  if (e->op == Op::Load && is_float(e->dtype) && seen.insert(e.get()).second)
    out.push_back(e.get());
  for (auto& a : e->args) collect_loads(a, out, seen);
}

std::vector<IterVar> fresh_axes(const std::vector<int64_t>& shape, const std::string& base) {
  std::vector<IterVar> ax;
  for (size_t k = 0; k < shape.size(); ++k)
    ax.push_back(make_var(base + std::to_string(k), 0, shape[k], false));
  return ax;
}

Expr load_axes(const Tensor& t, const std::vector<IterVar>& ax) {
  std::vector<Expr> idx;
  for (auto& a : ax) idx.push_back(var(a));
  return load(t, idx);
}

Tensor filled(const Tensor& like, double v, const std::string& name) {
  auto ax = fresh_axes(like->shape, "i");
  return compute(like->shape, ax, constant(v, like->dtype), name);
}

Tensor add_all(const std::vector<Tensor>& ts, const Tensor& like) {
  if (ts.size() == 1) return ts[0];
  auto ax = fresh_axes(like->shape, "i");
  Expr s = load_axes(ts[0], ax);
  for (size_t k = 1; k < ts.size(); ++k) s = binary(Op::Add, s, load_axes(ts[k], ax));
  return compute(like->shape, ax, s, "d_" + like->name);
}

// The contribution of one load x = X[f(...)] in y's body to X's adjoint, given y's adjoint.
Tensor load_adjoint(const Tensor& y, const Tensor& dy, const Node* x) {
  const Tensor& X = x->tensor;
  Expr body = y->body;
  std::vector<IterVar> sum_vars(y->axes.begin(), y->axes.end());
  Expr partial;
  if (body->op == Op::Reduce) {
    Expr g = body->args[0];
    sum_vars.insert(sum_vars.end(), body->raxes.begin(), body->raxes.end());
    partial = diff(g, x);
    if (body->rkind != ReduceKind::sum)  // the gradient flows to the arg-extremum
      partial = select(binary(Op::Eq, g, load_axes(y, y->axes)), partial, zero(y->dtype));
  } else {
    partial = diff(body, x);
  }
  partial = simplify(partial);
  Expr term = simplify(binary(Op::Mul, load_axes(dy, y->axes), partial));
  if (X->dtype != y->dtype) term = cast(term, X->dtype);

  auto jax = fresh_axes(X->shape, "j");
  std::map<const IterVarNode*, IterVar> all;
  for (auto& v : sum_vars) all[v.get()] = v;
  for (auto& v : jax) all[v.get()] = v;
  std::set<const IterVarNode*> free;
  for (auto& v : sum_vars) free.insert(v.get());
  std::vector<Expr> idx = x->args, conds;
  for (size_t k = 0; k < idx.size(); ++k) {
    Expr jk = var(jax[k]);
    auto lin = linear(simplify(idx[k]));
    const IterVarNode* pick = nullptr;
    if (lin)
      for (auto& [v, c] : lin->first)
        if (free.count(v) && (c == 1 || c == -1)) {
          pick = v;
          break;
        }
    if (!pick) {
      conds.push_back(binary(Op::Eq, idx[k], jk));
      continue;
    }
    // f = c*v + rest = j  =>  v = c*(j - rest) for c = +-1.
    int64_t c = lin->first[pick];
    lin->first.erase(pick);
    Expr rest = from_linear(*lin, all);
    Expr sol = simplify(c == 1 ? binary(Op::Sub, jk, rest) : binary(Op::Sub, rest, jk));
    add_range_guard(conds, sol, pick->lo, pick->hi);
    VarMap m{{pick, sol}};
    term = substitute(term, m);
    for (auto& e : conds) e = substitute(e, m);
    for (size_t q = k + 1; q < idx.size(); ++q) idx[q] = substitute(idx[q], m);
    free.erase(pick);
  }
  // Variables left free are summed: fresh reduce axes over their ranges.
  std::vector<IterVar> raxes;
  VarMap m;
  for (auto& v : sum_vars)
    if (free.count(v.get())) {
      raxes.push_back(make_var(v->name + "_r", v->lo, v->hi, true));
      m.emplace_back(v.get(), var(raxes.back()));
    }
  Expr guard;
  for (auto& e : conds) {
    Expr s = simplify(substitute(e, m));
    guard = guard ? binary(Op::And, guard, s) : s;
  }
  Expr val = substitute(term, m);
  if (guard) val = select(guard, val, zero(X->dtype));
  val = simplify(val);
  if (!raxes.empty()) val = simplify(reduce(ReduceKind::sum, val, raxes));
  return compute(X->shape, jax, val, "d_" + X->name);
}

bool uses_var(const Expr& e, const IterVarNode* v) {
  if (e->op == Op::Var) return e->var.get() == v;
  for (auto& a : e->args)
    if (uses_var(a, v)) return true;
  return false;
}

// Rewrites a tensor graph so that every reduction is the top of its compute: a reduction nested
// in an expression (sum(x[i, k]) / n), or in another reduction's body (sum_j exp(sum_k ...)),
// becomes a compute of its own over the variables around it (the compute's axes, and the
// enclosing reduce axes it uses), read back at those variables.
struct LiftReductions {
  std::map<const TensorNode*, Tensor> done;

  Tensor tensor(const Tensor& t) {
    if (!t->body) return t;
    if (auto it = done.find(t.get()); it != done.end()) return it->second;
    Expr body = t->body;
    if (body->op == Op::Reduce) {
      Expr inner = lift(body->args[0], t, body->raxes);
      if (inner != body->args[0]) body = reduce(body->rkind, inner, body->raxes);
    } else {
      body = lift(body, t, {});
    }
    Tensor r = body == t->body ? t : compute(t->shape, t->axes, body, t->name);
    return done[t.get()] = r;
  }

  Expr rebuilt(const Expr& e, std::vector<Expr> args, Tensor tensor_ref) {
    bool same = tensor_ref == e->tensor;
    for (size_t i = 0; i < args.size(); ++i) same = same && args[i] == e->args[i];
    if (same) return e;
    auto n = std::make_shared<Node>(*e);
    n->args = std::move(args);
    n->tensor = std::move(tensor_ref);
    return n;
  }

  // outer: the reduce axes of the reduction whose body e is part of (empty outside one).
  Expr lift(const Expr& e, const Tensor& t, const std::vector<IterVar>& outer) {
    if (e->op == Op::Reduce) {
      std::vector<IterVar> around(t->axes.begin(), t->axes.end());
      for (auto& r : outer)
        if (uses_var(e, r.get())) around.push_back(r);
      std::vector<IterVar> ax;
      std::vector<int64_t> shape;
      VarMap m;
      std::vector<Expr> idx;
      for (auto& a : around) {  // axis a' = a - lo, so the new compute's axes start at 0
        ax.push_back(make_var(a->name, 0, a->hi - a->lo, false));
        shape.push_back(a->hi - a->lo);
        Expr lo = constant(static_cast<double>(a->lo), DType::int64);
        m.emplace_back(a.get(), a->lo ? binary(Op::Add, var(ax.back()), lo) : var(ax.back()));
        idx.push_back(a->lo ? binary(Op::Sub, var(a), lo) : var(a));
      }
      Expr red = reduce(e->rkind, substitute(e->args[0], m), e->raxes);
      // The new compute is lifted in turn: reductions nested deeper move out the same way.
      return load(tensor(compute(shape, ax, red, t->name + "_red")), idx);
    }
    std::vector<Expr> args;
    for (auto& a : e->args) args.push_back(lift(a, t, outer));
    return rebuilt(e, std::move(args), e->op == Op::Load ? tensor(e->tensor) : e->tensor);
  }
};

// The adjoint's index algebra drops guards its ranges imply and solves equations within them,
// which needs every extent as a number: symbolic sizes are refused by name.
bool symbolic_ranges(const Expr& e) {
  if (e->op == Op::Size) return true;
  for (auto& r : e->raxes)
    if (is_symbolic(r->hi)) return true;
  for (auto& a : e->args)
    if (symbolic_ranges(a)) return true;
  return false;
}

void check_static(const Tensor& out) {
  for (auto& t : topo_order({out})) {
    bool sym = std::any_of(t->shape.begin(), t->shape.end(), is_symbolic);
    MYCEL_CHECK(!sym && !(t->body && symbolic_ranges(t->body)), ValueError, "[te.differentiate] '",
                t->name, "' of shape ", shape_string(t->shape),
                " has a symbolic size (te.var): differentiate needs static shapes (build the "
                "gradient per size, as ops.Custom does)");
  }
}

}  // namespace

std::vector<Tensor> differentiate(const Tensor& out_in, const std::vector<Tensor>& inputs_in,
                                  const Tensor& head, const std::vector<Override>& overrides_in) {
  check_static(out_in);
  LiftReductions lift;
  Tensor out = lift.tensor(out_in);
  std::vector<Tensor> inputs;
  for (auto& x : inputs_in) inputs.push_back(lift.tensor(x));
  std::vector<Override> overrides = overrides_in;
  for (auto& o : overrides) {
    o.tensor = lift.tensor(o.tensor);
    for (auto& x : o.inputs) x = lift.tensor(x);
  }
  MYCEL_CHECK(is_float(out->dtype), TypeError, "[te.differentiate] output '", out->name,
              "' must be float, got ", dtype_name(out->dtype));
  Tensor h = head;
  if (h) {
    MYCEL_CHECK(h->shape == out->shape && h->dtype == out->dtype, ShapeError,
                "[te.differentiate] head '", h->name, "' must match output '", out->name,
                "' in shape and dtype, got ", to_string(h), " vs ", to_string(out));
  } else {
    h = filled(out, 1.0, "head");
  }
  auto order = topo_order({out});
  std::set<const TensorNode*> wanted;
  for (auto& t : inputs) wanted.insert(t.get());
  // Only tensors that depend on a requested input need adjoints.
  std::set<const TensorNode*> depends(wanted);
  for (auto& t : order) {
    if (!t->body) continue;
    std::vector<const Node*> loads;
    std::set<const Node*> seen;
    collect_loads(t->body, loads, seen);
    for (auto* l : loads)
      if (depends.count(l->tensor.get())) depends.insert(t.get());
  }
  std::map<const TensorNode*, std::vector<Tensor>> contrib;
  contrib[out.get()].push_back(h);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Tensor& y = *it;
    if (!y->body || !depends.count(y.get()) || contrib[y.get()].empty()) continue;
    Tensor dy = add_all(contrib[y.get()], y);
    const Override* ov = nullptr;
    for (auto& o : overrides)
      if (o.tensor.get() == y.get()) ov = &o;
    if (ov) {
      auto res = ov->fn(y, ov->inputs, dy);
      MYCEL_CHECK(res.size() == ov->inputs.size(), ValueError, "[te.differentiate] override for '",
                  y->name, "' returned ", res.size(), " adjoints for ", ov->inputs.size(),
                  " inputs");
      for (size_t k = 0; k < res.size(); ++k) {
        MYCEL_CHECK(res[k] && res[k]->shape == ov->inputs[k]->shape, ShapeError,
                    "[te.differentiate] override for '", y->name, "': adjoint ", k,
                    " must have the shape of input '", ov->inputs[k]->name, "'");
        contrib[ov->inputs[k].get()].push_back(res[k]);
      }
      continue;
    }
    std::vector<const Node*> loads;
    std::set<const Node*> seen;
    collect_loads(y->body, loads, seen);
    for (auto* l : loads)
      if (depends.count(l->tensor.get()))
        contrib[l->tensor.get()].push_back(load_adjoint(y, dy, l));
  }
  std::vector<Tensor> result;
  for (auto& x : inputs) {
    auto& c = contrib[x.get()];
    result.push_back(c.empty() ? filled(x, 0.0, "d_" + x->name) : add_all(c, x));
  }
  return result;
}

}  // namespace mycel::te
