// TE node construction with the static checks (dtype, rank, constant index range, reduce axes).
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

std::atomic<int64_t> next_id{1};

std::string shape_str(const std::vector<int64_t>& s) { return shape_string(s); }

std::string extent_str(int64_t d) { return is_symbolic(d) ? size_var_name(d) : std::to_string(d); }

// The process's size variable names; a code is -1 - its index (never reused, never removed).
// Never destroyed: a background build (MYCEL_TE_FUSION=async) may still lower a chain at exit.
std::mutex& size_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::vector<std::string>& size_names() {
  static auto* names = new std::vector<std::string>;
  return *names;
}

// Sizes written as expressions (size_expr): their definitions, by code and by text.
std::map<int64_t, Expr>& size_defs() {
  static auto* defs = new std::map<int64_t, Expr>;
  return *defs;
}
std::map<std::string, int64_t>& size_def_codes() {
  static auto* codes = new std::map<std::string, int64_t>;
  return *codes;
}

Expr make(Op op, DType t, std::vector<Expr> args) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->dtype = t;
  n->args = std::move(args);
  return n;
}

bool is_logical(Op op) { return op >= Op::Lt && op <= Op::Not; }

// Reduce axes used by e and not bound by a Reduce inside it: these must be bound by a caller.
void collect_free_raxes(const Expr& e, std::set<const IterVarNode*>& bound,
                        std::vector<const IterVarNode*>& out) {
  if (e->op == Op::Var && e->var->reduce && !bound.count(e->var.get())) out.push_back(e->var.get());
  if (e->op == Op::Reduce) {
    for (auto& a : e->raxes) bound.insert(a.get());
    collect_free_raxes(e->args[0], bound, out);
    for (auto& a : e->raxes) bound.erase(a.get());
    return;
  }
  for (auto& a : e->args) collect_free_raxes(a, bound, out);
}

void collect_reduces(const Expr& e, std::vector<const Node*>& out) {
  if (e->op == Op::Reduce) out.push_back(e.get());
  for (auto& a : e->args) collect_reduces(a, out);
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

mycel::DType to_core(DType t) {
  switch (t) {
    case DType::float32:
      return mycel::DType::float32;
    case DType::float64:
      return mycel::DType::float64;
    case DType::int32:
      return mycel::DType::int32;
    case DType::int64:
      return mycel::DType::int64;
    case DType::boolean:
      return mycel::DType::bool_;
  }
  return mycel::DType::float32;
}

DType from_core(mycel::DType t, const char* who) {
  switch (t) {
    case mycel::DType::float32:
      return DType::float32;
    case mycel::DType::float64:
      return DType::float64;
    case mycel::DType::int32:
      return DType::int32;
    case mycel::DType::int64:
      return DType::int64;
    case mycel::DType::bool_:
      return DType::boolean;
    default:
      MYCEL_THROW(TypeError, "[", who, "] unsupported input dtype ", mycel::dtype_name(t));
  }
}

DType dtype_from_name(const std::string& n) {
  if (n == "float32") return DType::float32;
  if (n == "float64") return DType::float64;
  if (n == "int32") return DType::int32;
  if (n == "int64") return DType::int64;
  if (n == "bool") return DType::boolean;
  MYCEL_THROW(TypeError, "[te] unsupported dtype '", n,
              "'; expected one of float32, float64, int32, int64, bool");
}

const char* op_name(Op op) {
  static const char* names[] = {"const", "var",   "load", "add",     "sub",  "mul",    "div",
                                "mod",   "max",   "min",  "pow",     "neg",  "exp",    "log",
                                "sqrt",  "rsqrt", "tanh", "sigmoid", "abs",  "sin",    "cos",
                                "erf",   "lt",    "le",   "gt",      "ge",   "eq",     "ne",
                                "and",   "or",    "not",  "select",  "cast", "reduce", "size"};
  return names[static_cast<int>(op)];
}

int64_t size_var(const std::string& name) {
  MYCEL_CHECK(!name.empty(), ValueError, "[te.var] a size variable needs a name");
  std::lock_guard<std::mutex> lock(size_mu());
  auto& names = size_names();
  const auto& derived = size_def_codes();  // (a te.var may not take a derived size's code)
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == name && !(derived.count(name) && derived.at(name) == -1 - int64_t(k)))
      return -1 - static_cast<int64_t>(k);
  names.push_back(name);
  return -static_cast<int64_t>(names.size());
}

std::string size_var_name(int64_t code) {
  std::lock_guard<std::mutex> lock(size_mu());
  const auto& names = size_names();
  const int64_t k = -1 - code;
  MYCEL_CHECK(code < 0 && k < static_cast<int64_t>(names.size()), ValueError,
              "[te] no size variable has code ", code);
  return names[static_cast<size_t>(k)];
}

namespace {

// A size expression with its derived sizes replaced by their definitions (so a definition holds
// te.var sizes only), checked to be integer arithmetic on sizes.
Expr expand_size(const Expr& e, const std::string& text) {
  switch (e->op) {
    case Op::Const:
      return e;
    case Op::Size: {
      const int64_t code = static_cast<int64_t>(e->value);
      Expr def = size_definition(code);
      return def ? def : e;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Mod:
    case Op::Neg: {
      std::vector<Expr> args;
      for (auto& a : e->args) args.push_back(expand_size(a, text));
      return e->op == Op::Neg ? unary(Op::Neg, args[0]) : binary(e->op, args[0], args[1]);
    }
    default:
      MYCEL_THROW(ValueError,
                  "[te] a dimension may be a number, a te.var or an expression of "
                  "them with + - * // %; ",
                  text, " holds ", op_name(e->op));
  }
}

// "2 * n", "(n + 1) // 2": the name of a derived size.
std::string size_text(const Expr& e) {
  auto operand = [](const Expr& a) {
    std::string t = size_text(a);
    return a->args.size() == 2 ? "(" + t + ")" : t;
  };
  switch (e->op) {
    case Op::Const:
      return std::to_string(static_cast<int64_t>(e->value));
    case Op::Size:
      return size_var_name(static_cast<int64_t>(e->value));
    case Op::Neg:
      return "-" + operand(e->args[0]);
    default: {
      const char* sym = e->op == Op::Add   ? " + "
                        : e->op == Op::Sub ? " - "
                        : e->op == Op::Mul ? " * "
                        : e->op == Op::Div ? " // "
                                           : " % ";
      return operand(e->args[0]) + sym + operand(e->args[1]);
    }
  }
}

}  // namespace

int64_t size_expr(const Expr& e) {
  MYCEL_CHECK(e && e->dtype == DType::int64, ValueError,
              "[te] a dimension expression must be int64 arithmetic on te.var sizes, got ",
              e ? dtype_name(e->dtype) : "null", " ", e ? to_string(e) : "");
  Expr x = simplify(expand_size(e, to_string(e)));
  if (x->op == Op::Const) {
    MYCEL_CHECK(x->value > 0, ValueError, "[te] the dimension ", to_string(e), " is ",
                static_cast<int64_t>(x->value), "; a dimension must be > 0");
    return static_cast<int64_t>(x->value);
  }
  if (x->op == Op::Size) return static_cast<int64_t>(x->value);
  const std::string name = size_text(x);
  std::lock_guard<std::mutex> lock(size_mu());
  auto& codes = size_def_codes();
  if (auto it = codes.find(name); it != codes.end()) return it->second;
  auto& names = size_names();
  names.push_back(name);
  const int64_t code = -static_cast<int64_t>(names.size());
  codes[name] = code;
  size_defs()[code] = x;
  return code;
}

Expr size_definition(int64_t code) {
  std::lock_guard<std::mutex> lock(size_mu());
  auto it = size_defs().find(code);
  return it == size_defs().end() ? nullptr : it->second;
}

std::string shape_string(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + extent_str(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

namespace {
// A loop's range is [lo, hi) with a static lo; hi may be a size variable (assumed above lo).
bool valid_range(int64_t lo, int64_t hi) { return is_symbolic(hi) ? !is_symbolic(lo) : hi > lo; }
}  // namespace

IterVar make_var(const std::string& name, int64_t lo, int64_t hi, bool reduce) {
  MYCEL_CHECK(valid_range(lo, hi), ValueError, "[te.", reduce ? "reduce_axis" : "compute",
              "] axis '", name, "' has an empty range [", extent_str(lo), ", ", extent_str(hi),
              ")");
  auto v = std::make_shared<IterVarNode>();
  v->name = name;
  v->lo = lo;
  v->hi = hi;
  v->reduce = reduce;
  v->id = next_id++;
  return v;
}

Expr constant(double v, DType t) {
  auto n = std::make_shared<Node>();
  n->op = Op::Const;
  n->dtype = t;
  n->value = t == DType::boolean ? (v != 0)
             : is_float(t)       ? v
                                 : static_cast<double>(static_cast<int64_t>(v));
  return n;
}

Expr var(const IterVar& v) {
  auto n = std::make_shared<Node>();
  n->op = Op::Var;
  n->dtype = DType::int64;
  n->var = v;
  return n;
}

Expr size_value(int64_t code) {
  MYCEL_CHECK(is_symbolic(code), ValueError, "[te.var] ", code, " is not a size variable's code");
  size_var_name(code);  // a ValueError for a code no te.var made
  auto n = std::make_shared<Node>();
  n->op = Op::Size;
  n->dtype = DType::int64;
  n->value = static_cast<double>(code);
  return n;
}

Expr load(const Tensor& t, const std::vector<Expr>& idx) {
  MYCEL_CHECK(idx.size() == t->shape.size(), ShapeError, "[te] tensor '", t->name, "' of shape ",
              shape_str(t->shape), " has rank ", t->shape.size(), " but was indexed with ",
              idx.size(), " indices");
  for (size_t k = 0; k < idx.size(); ++k) {
    MYCEL_CHECK(idx[k]->dtype == DType::int64 || idx[k]->dtype == DType::int32, TypeError,
                "[te] index ", k, " of tensor '", t->name, "' must be an integer expression, got ",
                dtype_name(idx[k]->dtype));
    if (idx[k]->op == Op::Const) {
      auto c = static_cast<int64_t>(idx[k]->value);
      MYCEL_CHECK(c >= 0 && (is_symbolic(t->shape[k]) || c < t->shape[k]), IndexError,
                  "[te] constant index ", c, " is out of range for dimension ", k, " (size ",
                  extent_str(t->shape[k]), ") of tensor '", t->name, "' of shape ",
                  shape_str(t->shape));
    }
  }
  auto n = std::make_shared<Node>();
  n->op = Op::Load;
  n->dtype = t->dtype;
  n->tensor = t;
  n->args = idx;
  return n;
}

Expr binary(Op op, Expr a, Expr b) {
  auto ta = a->dtype, tb = b->dtype;
  // int32/int64 mix freely in index arithmetic; other mixes need an explicit cast.
  bool ints =
      (ta == DType::int32 || ta == DType::int64) && (tb == DType::int32 || tb == DType::int64);
  MYCEL_CHECK(ta == tb || ints, TypeError, "[te] ", op_name(op), " of ", dtype_name(ta), " and ",
              dtype_name(tb), ": operands must have the same dtype (use te.cast)");
  DType t = ints ? (ta == DType::int64 || tb == DType::int64 ? DType::int64 : DType::int32) : ta;
  if (op == Op::And || op == Op::Or)
    MYCEL_CHECK(t == DType::boolean, TypeError, "[te] ", op_name(op), " needs bool operands, got ",
                dtype_name(t));
  return make(op, is_logical(op) ? DType::boolean : t, {std::move(a), std::move(b)});
}

Expr unary(Op op, Expr a) {
  bool math = op >= Op::Exp && op <= Op::Erf && op != Op::Abs;
  MYCEL_CHECK(!math || is_float(a->dtype), TypeError, "[te] ", op_name(op),
              " needs a float operand, got ", dtype_name(a->dtype), " (use te.cast)");
  if (op == Op::Not)
    MYCEL_CHECK(a->dtype == DType::boolean, TypeError, "[te] not needs a bool operand, got ",
                dtype_name(a->dtype));
  DType t = a->dtype;
  return make(op, t, {std::move(a)});
}

Expr select(Expr c, Expr a, Expr b) {
  MYCEL_CHECK(c->dtype == DType::boolean, TypeError,
              "[te.if_then_else] condition must be bool, got ", dtype_name(c->dtype));
  MYCEL_CHECK(a->dtype == b->dtype, TypeError,
              "[te.if_then_else] branches differ in dtype: ", dtype_name(a->dtype), " vs ",
              dtype_name(b->dtype));
  DType t = a->dtype;
  return make(Op::Select, t, {std::move(c), std::move(a), std::move(b)});
}

Expr cast(Expr a, DType t) {
  if (a->dtype == t) return a;
  return make(Op::Cast, t, {std::move(a)});
}

Expr reduce(ReduceKind kind, Expr body, const std::vector<IterVar>& axes) {
  MYCEL_CHECK(!axes.empty(), ValueError, "[te.sum] needs at least one reduce axis");
  std::set<const IterVarNode*> seen;
  for (auto& a : axes) {
    MYCEL_CHECK(a->reduce, ValueError, "[te] axis '", a->name,
                "' is a compute axis; reductions take te.reduce_axis axes");
    MYCEL_CHECK(seen.insert(a.get()).second, ValueError, "[te] reduce axis '", a->name,
                "' is listed twice in one reduction");
  }
  // A reduce axis reduced again inside its own body would be reduced twice.
  std::vector<const Node*> inner;
  collect_reduces(body, inner);
  for (auto* r : inner)
    for (auto& a : r->raxes)
      MYCEL_CHECK(!seen.count(a.get()), ValueError, "[te] reduce axis '", a->name,
                  "' is used by two nested reductions");
  MYCEL_CHECK(body->dtype != DType::boolean, TypeError, "[te] cannot reduce a bool expression");
  auto n = std::make_shared<Node>();
  n->op = Op::Reduce;
  n->dtype = body->dtype;
  n->args = {std::move(body)};
  n->rkind = kind;
  n->raxes = axes;
  return n;
}

Tensor placeholder(const std::vector<int64_t>& shape, DType t, const std::string& name) {
  for (auto d : shape)
    MYCEL_CHECK(d > 0 || (is_symbolic(d) && d != 0), ShapeError, "[te.placeholder] '", name,
                "' has a non-positive dimension in ", shape_str(shape));
  auto p = std::make_shared<TensorNode>();
  p->name = name;
  p->shape = shape;
  p->dtype = t;
  p->id = next_id++;
  return p;
}

Tensor compute(const std::vector<int64_t>& shape, const std::vector<IterVar>& axes, Expr body,
               const std::string& name) {
  MYCEL_CHECK(axes.size() == shape.size(), ShapeError, "[te.compute] '", name, "' has shape ",
              shape_str(shape), " but ", axes.size(), " axes");
  for (size_t k = 0; k < shape.size(); ++k)
    MYCEL_CHECK(shape[k] != 0 && axes[k]->lo == 0 && axes[k]->hi == shape[k], ShapeError,
                "[te.compute] '", name, "' axis ", k, " must range over [0, ", extent_str(shape[k]),
                ")");
  std::set<const IterVarNode*> bound;
  std::vector<const IterVarNode*> free;
  collect_free_raxes(body, bound, free);
  MYCEL_CHECK(free.empty(), ValueError, "[te.compute] '", name, "' uses reduce axis '",
              free.empty() ? "" : free[0]->name, "' outside a te.sum/max/min over it");
  auto c = std::make_shared<TensorNode>();
  c->name = name;
  c->shape = shape;
  c->dtype = body->dtype;
  c->axes = axes;
  c->body = std::move(body);
  c->id = next_id++;
  return c;
}

std::string to_string(const Expr& e) {
  std::ostringstream os;
  switch (e->op) {
    case Op::Const:
      os << e->value;
      break;
    case Op::Var:
      os << e->var->name;
      break;
    case Op::Size:
      os << size_var_name(static_cast<int64_t>(e->value));
      break;
    case Op::Load:
      os << e->tensor->name << "[";
      for (size_t i = 0; i < e->args.size(); ++i) os << (i ? ", " : "") << to_string(e->args[i]);
      os << "]";
      break;
    case Op::Reduce:
      os << (e->rkind == ReduceKind::sum   ? "sum"
             : e->rkind == ReduceKind::max ? "max"
                                           : "min")
         << "(" << to_string(e->args[0]) << ", axis=[";
      for (size_t i = 0; i < e->raxes.size(); ++i) os << (i ? ", " : "") << e->raxes[i]->name;
      os << "])";
      break;
    case Op::Cast:
      os << dtype_name(e->dtype) << "(" << to_string(e->args[0]) << ")";
      break;
    default:
      os << op_name(e->op) << "(";
      for (size_t i = 0; i < e->args.size(); ++i) os << (i ? ", " : "") << to_string(e->args[i]);
      os << ")";
  }
  return os.str();
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t->name << shape_str(t->shape) << ":" << dtype_name(t->dtype);
  if (t->body) {
    os << " = compute(";
    for (size_t i = 0; i < t->axes.size(); ++i) os << (i ? ", " : "") << t->axes[i]->name;
    os << " -> " << to_string(t->body) << ")";
  } else {
    os << " = placeholder";
  }
  return os.str();
}

}  // namespace mycel::te
