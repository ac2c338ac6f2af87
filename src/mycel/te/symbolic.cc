// Symbolic sizes (te.var): which size variables a lowering reads, in what order, and binding
// them from the shapes a built function is called with. The generated kernel reads the values
// from the buffer after its outputs, so one library serves every size.
#include <algorithm>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

void add(std::vector<int64_t>& out, int64_t d) {
  if (is_symbolic(d) && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
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
  for (size_t q = 0; q < sizes.size(); ++q)
    MYCEL_CHECK(values[q] >= 0, ValueError, "[", who, "] size variable '", size_var_name(sizes[q]),
                "' is the dimension of no input, so no call can set it");
  check_indices(checks, sizes, values, who);
  return values;
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
