// Symbolic sizes (te.var): which size variables a lowering reads, in what order, and binding
// them from the shapes a built function is called with. The generated kernel reads the values
// from the buffer after its outputs, so one library serves every size.
#include <algorithm>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

void add_bases(std::vector<int64_t>& out, const Expr& e);

// A size variable; a derived one (2 * n) after the te.var sizes it is computed from.
void add(std::vector<int64_t>& out, int64_t d) {
  if (!is_symbolic(d) || std::find(out.begin(), out.end(), d) != out.end()) return;
  if (Expr def = size_definition(d)) add_bases(out, def);
  out.push_back(d);
}

void add_bases(std::vector<int64_t>& out, const Expr& e) {
  if (e->op == Op::Size) add(out, static_cast<int64_t>(e->value));
  for (auto& a : e->args) add_bases(out, a);
}

// Python's floor division and modulo (te's // and % on int64).
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// A derived size's value from the bound ones (false while one it reads is unknown).
bool eval_size(const Expr& e, const std::vector<int64_t>& sizes, const std::vector<int64_t>& values,
               int64_t& out, const char* who) {
  if (e->op == Op::Const) {
    out = static_cast<int64_t>(e->value);
    return true;
  }
  if (e->op == Op::Size) {
    const auto at = std::find(sizes.begin(), sizes.end(), static_cast<int64_t>(e->value));
    out = at == sizes.end() ? -1 : values[static_cast<size_t>(at - sizes.begin())];
    return out >= 0;
  }
  int64_t a = 0, b = 0;
  if (!eval_size(e->args[0], sizes, values, a, who)) return false;
  if (e->op == Op::Neg) {
    out = -a;
    return true;
  }
  if (!eval_size(e->args[1], sizes, values, b, who)) return false;
  MYCEL_CHECK(b != 0 || (e->op != Op::Div && e->op != Op::Mod), ShapeError, "[", who,
              "] the dimension ", size_var_name(size_expr(e)), " divides by zero");
  switch (e->op) {
    case Op::Add:
      out = a + b;
      break;
    case Op::Sub:
      out = a - b;
      break;
    case Op::Mul:
      out = a * b;
      break;
    case Op::Div:
      out = floor_div(a, b);
      break;
    default:
      out = a - floor_div(a, b) * b;
  }
  return true;
}

// e as a * u + b, u the one unknown size, the others bound; false when it is not affine in u
// (u under // or %, or times itself).
bool affine(const Expr& e, int64_t u, const std::vector<int64_t>& sizes,
            const std::vector<int64_t>& values, int64_t& a, int64_t& b, const char* who) {
  if (e->op == Op::Size && static_cast<int64_t>(e->value) == u) {
    a = 1, b = 0;
    return true;
  }
  if (e->op == Op::Const || e->op == Op::Size) {
    a = 0;
    return eval_size(e, sizes, values, b, who);
  }
  int64_t a0 = 0, b0 = 0, a1 = 0, b1 = 0;
  if (!affine(e->args[0], u, sizes, values, a0, b0, who)) return false;
  if (e->op == Op::Neg) {
    a = -a0, b = -b0;
    return true;
  }
  if (!affine(e->args[1], u, sizes, values, a1, b1, who)) return false;
  switch (e->op) {
    case Op::Add:
      a = a0 + a1, b = b0 + b1;
      return true;
    case Op::Sub:
      a = a0 - a1, b = b0 - b1;
      return true;
    case Op::Mul:
      if (a0 != 0 && a1 != 0) return false;
      a = a0 * b1 + a1 * b0, b = b0 * b1;
      return true;
    default:  // // and %: only without u
      if (a0 != 0 || a1 != 0) return false;
      a = 0;
      return eval_size(e, sizes, values, b, who);
  }
}

// Reduce extents and size values read in index arithmetic.
void add_ranges(std::vector<int64_t>& out, const Expr& e) {
  if (e->op == Op::Size) add(out, static_cast<int64_t>(e->value));
  for (auto& r : e->raxes) add(out, r->hi);
  for (auto& a : e->args) add_ranges(out, a);
}

}  // namespace

std::vector<int64_t> size_vars(const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& outputs) {
  std::vector<int64_t> out;
  for (auto& t : inputs)
    for (int64_t d : t->shape) add(out, d);
  for (auto& t : topo_order(outputs)) {
    for (int64_t d : t->shape) add(out, d);
    if (t->body) add_ranges(out, t->body);
  }
  return out;
}

std::vector<int64_t> Function::bind(const std::vector<std::vector<int64_t>>& in_shapes,
                                    const char* who) const {
  MYCEL_CHECK(in_shapes.size() == inputs.size(), TypeError, "[", who, "] expects ", inputs.size(),
              " arguments, got ", in_shapes.size());
  std::vector<int64_t> values(sizes.size(), -1);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& p = inputs[k]->shape;
    const auto& s = in_shapes[k];
    bool ok = s.size() == p.size();
    for (size_t d = 0; ok && d < p.size(); ++d) {
      if (!is_symbolic(p[d])) {
        ok = s[d] == p[d];
        continue;
      }
      auto at = static_cast<size_t>(std::find(sizes.begin(), sizes.end(), p[d]) - sizes.begin());
      MYCEL_CHECK(at < sizes.size(), ValueError, "[", who, "] size variable '", size_var_name(p[d]),
                  "' is not one of the function's");
      ok = s[d] >= 0;
      if (size_definition(p[d])) continue;  // a dimension written as an expression: below
      if (values[at] < 0) {
        values[at] = s[d];
      } else {
        MYCEL_CHECK(values[at] == s[d], ShapeError, "[", who, "] argument ", k, " ('",
                    inputs[k]->name, "') has ", s[d], " for size variable '", size_var_name(p[d]),
                    "', which an earlier argument set to ", values[at], "; got ", shape_string(s),
                    " for ", shape_string(p));
      }
    }
    MYCEL_CHECK(ok, ShapeError, "[", who, "] argument ", k, " ('", inputs[k]->name,
                "') must have shape ", shape_string(p), ", got ", shape_string(s));
  }
  bind_derived(in_shapes, values, who);
  for (size_t q = 0; q < sizes.size(); ++q)
    MYCEL_CHECK(values[q] >= 0, ValueError, "[", who, "] size variable '", size_var_name(sizes[q]),
                "' is the dimension of no input, so no call can set it");
  check_indices(checks, sizes, values, who);
  return values;
}

// Dimensions written as expressions (2 * n): a te.var that only they hold is solved from one
// whose other sizes are known and in which it is affine (2 * n = 6 gives n = 3; n // 2 solves
// nothing), until nothing more is; then every derived size is computed and the inputs' dims
// checked against them.
void Function::bind_derived(const std::vector<std::vector<int64_t>>& in_shapes,
                            std::vector<int64_t>& values, const char* who) const {
  auto slot = [&](int64_t code) {
    return static_cast<size_t>(std::find(sizes.begin(), sizes.end(), code) - sizes.begin());
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t k = 0; k < inputs.size(); ++k)
      for (size_t d = 0; d < inputs[k]->shape.size(); ++d) {
        const int64_t code = inputs[k]->shape[d];
        Expr def = is_symbolic(code) ? size_definition(code) : nullptr;
        if (!def || values[slot(code)] >= 0) continue;
        std::vector<int64_t> bases, unknown;
        add_bases(bases, def);
        for (int64_t b : bases)
          if (values[slot(b)] < 0) unknown.push_back(b);
        int64_t a = 0, c = 0;
        if (unknown.size() != 1 || !affine(def, unknown[0], sizes, values, a, c, who) || a == 0)
          continue;
        const int64_t s = in_shapes[k][d], q = floor_div(s - c, a);
        MYCEL_CHECK(q * a + c == s && q >= 0, ShapeError, "[", who, "] argument ", k, " ('",
                    inputs[k]->name, "') has ", s, " for dimension ", d, ", ", size_var_name(code),
                    ", which no size ", size_var_name(unknown[0]), " >= 0 gives; got ",
                    shape_string(in_shapes[k]), " for ", shape_string(inputs[k]->shape));
        values[slot(unknown[0])] = q;
        progress = true;
      }
  }
  for (size_t q = 0; q < sizes.size(); ++q) {
    Expr def = size_definition(sizes[q]);
    if (!def) continue;
    std::vector<int64_t> bases;
    add_bases(bases, def);
    for (int64_t b : bases)
      MYCEL_CHECK(values[slot(b)] >= 0, ValueError, "[", who, "] size variable '", size_var_name(b),
                  "' cannot be solved from the inputs' shapes: it is in ", size_var_name(sizes[q]),
                  ", and no input has it as a dimension or in an affine dimension (a * ",
                  size_var_name(b), " + b) whose other sizes are known");
    int64_t v = 0;
    eval_size(def, sizes, values, v, who);
    MYCEL_CHECK(v >= 0, ShapeError, "[", who, "] the dimension ", size_var_name(sizes[q]), " is ",
                v, " for these sizes; a dimension must be >= 0");
    values[q] = v;
  }
  for (size_t k = 0; k < inputs.size(); ++k)
    for (size_t d = 0; d < inputs[k]->shape.size(); ++d) {
      const int64_t code = inputs[k]->shape[d];
      if (!is_symbolic(code) || !size_definition(code)) continue;
      MYCEL_CHECK(values[slot(code)] == in_shapes[k][d], ShapeError, "[", who, "] argument ", k,
                  " ('", inputs[k]->name, "') has ", in_shapes[k][d], " for dimension ", d, ", ",
                  size_var_name(code), ", which the other sizes make ", values[slot(code)],
                  "; got ", shape_string(in_shapes[k]), " for ", shape_string(inputs[k]->shape));
    }
}

std::vector<int64_t> Function::resolve(const std::vector<int64_t>& shape,
                                       const std::vector<int64_t>& values) const {
  std::vector<int64_t> r = shape;
  for (auto& d : r) {
    if (!is_symbolic(d)) continue;
    auto at = static_cast<size_t>(std::find(sizes.begin(), sizes.end(), d) - sizes.begin());
    MYCEL_CHECK(at < values.size(), ValueError, "[te function] size variable '", size_var_name(d),
                "' has no value");
    d = values[at];
  }
  return r;
}

void Function::run(std::vector<void*> bufs, const std::vector<int64_t>& values) const {
  MYCEL_CHECK(bufs.size() == inputs.size() + outputs.size() && values.size() == sizes.size(),
              ValueError, "[te function] ", bufs.size(), " buffers and ", values.size(),
              " sizes for a function of ", inputs.size(), " inputs, ", outputs.size(),
              " outputs and ", sizes.size(), " size variables");
  if (!sizes.empty()) bufs.push_back(const_cast<int64_t*>(values.data()));
  kernel->run(bufs.data());
}

}  // namespace mycel::te
