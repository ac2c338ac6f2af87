// The TE side of the te_call op (ops/te_call.cc): shape inference from the function's
// placeholders, the kernel that runs its compiled code, and its bprop (the function's
// te::differentiate gradient, built on first use). Installed at static initialization, so only
// libraries that link the TE compiler can run te_call.
#include "mycel/core/shape.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/te_call.h"
#include "mycel/te/te.h"

namespace mycel {
namespace {

// The function for these inputs' dtypes (a float32 function also runs float64 inputs, retyped).
template <class Get>
std::shared_ptr<te::Function> resolve(int64_t id, size_t n, Get dtype_of) {
  std::vector<te::DType> dts;
  for (size_t k = 0; k < n; ++k) dts.push_back(te::from_core(dtype_of(k), "te_call"));
  return te::function_for(id, dts);
}

std::vector<TensorMeta> infer_te_call(const InferContext& c) {
  auto f =
      resolve(c.attrs.get_int("kernel"), c.num_inputs(), [&](size_t k) { return c.in(k).dtype; });
  MYCEL_CHECK(c.num_inputs() == f->inputs.size(), TypeError, "[te_call] function ",
              c.attrs.get_int("kernel"), " takes ", f->inputs.size(), " inputs, got ",
              c.num_inputs());
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < f->inputs.size(); ++k) {
    const auto& p = f->inputs[k];
    shapes.emplace_back(c.in(k).shape.begin(), c.in(k).shape.end());
    MYCEL_CHECK(
        (!f->sizes.empty() || c.in(k).shape == p->shape) && c.in(k).dtype == te::to_core(p->dtype),
        ShapeError, "[te_call] input ", k, " ('", p->name, "') must be ", te::dtype_name(p->dtype),
        f->sizes.empty() ? shape_str(p->shape) : te::shape_string(p->shape), ", got ",
        dtype_name(c.in(k).dtype), shape_str(c.in(k).shape));
  }
  // A function over size variables (te.var) binds them from the input shapes.
  const auto values = f->sizes.empty() ? std::vector<int64_t>{} : f->bind(shapes, "te_call");
  std::vector<TensorMeta> out;
  for (auto& o : f->outputs) out.push_back({f->resolve(o->shape, values), te::to_core(o->dtype)});
  return out;
}

void te_call_kernel(const KernelContext& c) {
  auto f = resolve(c.attrs.get_int("kernel"), c.inputs.size(),
                   [&](size_t k) { return c.in(k).dtype(); });
  std::vector<void*> bufs;
  std::vector<std::vector<int64_t>> shapes;
  for (auto& t : c.inputs) {
    bufs.push_back(t.data());
    shapes.emplace_back(t.shape().begin(), t.shape().end());
  }
  for (auto& t : c.outputs) bufs.push_back(t.data());
  f->run(std::move(bufs), f->sizes.empty() ? std::vector<int64_t>{} : f->bind(shapes, "te_call"));
}

[[maybe_unused]] const bool installed = [] {
  set_te_call_hooks({infer_te_call, te_call_kernel});
  return true;
}();

}  // namespace

// The adjoints come from the function's TE gradient, fed the forward inputs and every output's
// sensitivity; an integer input gets zeros.
MYCEL_REGISTER_BPROPS(te_call) {
  b.add("te_call", [](BpropBuilder& g) -> std::vector<GradVar> {
    int64_t id = g.attrs().get_int("kernel");
    auto f = te::function_at(id);
    GradVar xs = g.input(0), dout = g.dout();
    std::vector<GradVar> items;
    for (size_t k = 0; k < f->inputs.size(); ++k) items.push_back(g.tuple_get(xs, k));
    // One output (or adjoint) is a tensor, several a tuple: the op is not tuple_output.
    for (size_t q = 0; q < f->outputs.size(); ++q)
      items.push_back(f->outputs.size() == 1 ? dout : g.tuple_get(dout, q));
    GradVar res = g.call("te_call", {g.make_tuple(items)}, {{"kernel", te::gradient_function(id)}});
    std::vector<GradVar> dx;
    for (size_t k = 0; k < f->inputs.size(); ++k) {
      GradVar d = f->inputs.size() == 1 ? res : g.tuple_get(res, k);
      dx.push_back(te::is_float(f->inputs[k]->dtype) ? d : g.zeros_like(items[k]));
    }
    return {g.make_tuple(dx)};
  });
}

}  // namespace mycel
