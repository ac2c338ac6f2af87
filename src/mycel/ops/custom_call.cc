// custom_call: runs a registered host function (ops/custom_call.h) on its inputs. It has no
// gradient of its own: ops.Custom attaches the user's bprop around the call (a Cell bprop).
#include "mycel/ops/custom_call.h"

#include <mutex>

#include "mycel/core/shape.h"
#include "mycel/ops/registry.h"

namespace mycel {
namespace {

struct Table {
  std::mutex mu;
  std::vector<std::shared_ptr<const HostFunction>> fns;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: entries may hold Python callables
  return *t;
}

}  // namespace

int64_t register_host_function(std::shared_ptr<const HostFunction> f) {
  MYCEL_CHECK(f && f->infer && f->run, ValueError,
              "[custom_call] a host function needs infer and run");
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.fns.push_back(std::move(f));
  return static_cast<int64_t>(t.fns.size()) - 1;
}

std::shared_ptr<const HostFunction> host_function_at(int64_t id) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  MYCEL_CHECK(id >= 0 && id < static_cast<int64_t>(t.fns.size()), ValueError,
              "[custom_call] no host function with id ", id, " (", t.fns.size(), " registered)");
  return t.fns[id];
}

MYCEL_REGISTER_OPS(custom_call) {
  OpDef op = make_op(
      "custom_call", "CustomCall",
      "Runs the host function `fn` (ops.Custom func_type 'pyfunc' or 'aot'): its output, or a "
      "tuple of them.",
      {{"inputs", false, true}}, {attr("fn", AttrKind::kInt, {})},
      [](const InferContext& c) {
        auto f = host_function_at(c.attrs.get_int("fn"));
        std::vector<TensorMeta> in;
        for (size_t k = 0; k < c.num_inputs(); ++k) in.push_back(c.in(k));
        auto out = f->infer(in);
        MYCEL_CHECK(!out.empty(), ValueError, "[custom_call] '", f->name, "' declares no output");
        return out;
      },
      [](const KernelContext& c) {
        auto f = host_function_at(c.attrs.get_int("fn"));
        f->run(c.inputs, c.outputs);
      },
      {DType::float32, DType::float64, DType::int32, DType::int64}, "unsupported");
  r.add(std::move(op));
}

}  // namespace mycel
