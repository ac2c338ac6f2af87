// TE schedules (te::Stage: the loop list after split/reorder, the checks) and the lowering that
// follows them, without compiling; and the custom_call host-function table.
#include <gtest/gtest.h>

#include "mycel/core/error.h"
#include "mycel/ops/custom_call.h"
#include "mycel/ops/registry.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

Tensor matmul(int64_t n, int64_t m, int64_t p) {
  auto a = placeholder({n, m}, DType::float32, "a");
  auto b = placeholder({m, p}, DType::float32, "b");
  auto i = make_var("i", 0, n, false), j = make_var("j", 0, p, false),
       k = make_var("k", 0, m, true);
  return compute({n, p}, {i, j},
                 reduce(ReduceKind::sum,
                        binary(Op::Mul, load(a, {var(i), var(k)}), load(b, {var(k), var(j)})), {k}),
                 "c");
}

std::vector<std::string> names(const Stage& s) {
  std::vector<std::string> r;
  for (auto& l : s.loops()) r.push_back(l->name);
  return r;
}

TEST(TeSchedule, SplitAndReorderGiveTheLoopOrder) {
  Tensor c = matmul(8, 6, 10);
  auto st = std::make_shared<Stage>(c);
  EXPECT_EQ(names(*st), (std::vector<std::string>{"i", "j", "k"}));
  auto [jo, ji] = st->split(c->axes[1], 4);
  EXPECT_EQ(jo->hi, 3);  // ceil(10 / 4)
  EXPECT_EQ(ji->hi, 4);
  st->reorder({c->body->raxes[0], jo});  // k and j.outer swap their places
  EXPECT_EQ(names(*st), (std::vector<std::string>{"i", "k", "j.inner", "j.outer"}));
  st->reorder({jo, ji});
  EXPECT_EQ(names(*st), (std::vector<std::string>{"i", "k", "j.outer", "j.inner"}));
  st->set_kind(ji, LoopKind::vectorized);
  st->set_kind(c->axes[0], LoopKind::parallel);
  std::string src = generate_cpp(
      {c->body->args[0]->args[0]->tensor, c->body->args[0]->args[1]->tensor}, {c}, {st});
  EXPECT_NE(src.find("(scheduled)"), std::string::npos) << src;
  EXPECT_NE(src.find("#pragma omp simd"), std::string::npos) << src;
  EXPECT_NE(src.find("< 10) {"), std::string::npos) << src;  // 10 = 2*4 + 2: the remainder guard
}

TEST(TeSchedule, BadStepsThrow) {
  Tensor c = matmul(4, 4, 4);
  Stage st(c);
  const IterVar& k = c->body->raxes[0];
  EXPECT_THROW(st.set_kind(k, LoopKind::parallel), ValueError);
  EXPECT_THROW(st.split(c->axes[0], 0), ValueError);
  st.split(c->axes[0], 2);
  EXPECT_THROW(st.split(c->axes[0], 2), ValueError);  // no longer a loop
  EXPECT_THROW(st.reorder({k, k}), ValueError);
  EXPECT_THROW(Stage(c->body->args[0]->args[0]->tensor), ValueError);  // a placeholder
}

}  // namespace
}  // namespace mycel::te

namespace mycel {
namespace {

TEST(CustomCall, HostFunctionsAreNumberedAndChecked) {
  auto f = std::make_shared<HostFunction>();
  f->name = "twice";
  f->infer = [](const std::vector<TensorMeta>& in) { return in; };
  f->run = [](const std::vector<Tensor>& in, std::vector<Tensor>& out) {
    const float* x = static_cast<const float*>(in[0].data());
    float* y = static_cast<float*>(out[0].data());
    for (int64_t i = 0; i < in[0].numel(); ++i) y[i] = 2 * x[i];
  };
  int64_t id = register_host_function(f);
  EXPECT_EQ(host_function_at(id)->name, "twice");
  EXPECT_EQ(register_host_function(f), id + 1);
  EXPECT_THROW(host_function_at(id + 1000), ValueError);
  EXPECT_THROW(register_host_function(std::make_shared<HostFunction>()), ValueError);
  Tensor x = Tensor::empty({3}, DType::float32);
  for (int i = 0; i < 3; ++i) static_cast<float*>(x.data())[i] = static_cast<float>(i) + 0.5f;
  auto out = call_op("custom_call", {x}, {{"fn", id}});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<float*>(out[0].data())[i], 2 * (i + 0.5f));
}

}  // namespace
}  // namespace mycel
