// pipeline::split_at_sens (1F1B without recomputation): the forward and backward programs cut
// from a gradient step compute what the whole step computes.
#include "backend_util.h"
#include "graph_test_util.h"
#include "mycel/pipeline/pipeline.h"

namespace mycel::backend::testing {
namespace {

using ir::testing::uop;

void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  Tensor x = a.to(DType::float64), y = b.to(DType::float64);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_NEAR(x.data<double>()[i], y.data<double>()[i],
                1e-6 + 1e-6 * std::abs(y.data<double>()[i]));
}

// tanh(x @ w) with its gradient w.r.t. x and w, the output's sensitivity an input.
struct Step {
  ir::Module m;
  pipeline::Step step;
  Step() {
    FuncGraph* g = m.add_graph("stage");
    NodePtr x = g->add_parameter("x");
    NodePtr w = weight(g, "w", randn({4, 3}, 2));
    g->set_output(uop(g, "tanh", {uop(g, "matmul", {x, w})}));
    ad::GradSpec spec;
    spec.positions = {0};
    spec.with_weights = true;
    spec.return_value = true;
    spec.sens_param = true;
    spec.weight_params = {1};
    step = pipeline::compile_step(g, {tensor_abs({5, 4}), tensor_abs({5, 3})}, &spec,
                                  pipeline::Options::from_env());
  }
};

TEST(SplitGrad, ForwardAndBackwardEqualTheWholeStep) {
  Step s;
  Tensor x = randn({5, 4}, 1), sens = randn({5, 3}, 3);
  std::vector<Tensor> whole = s.step.program->run({x, sens});  // value, dx, dw
  ASSERT_EQ(whole.size(), 3u);
  pipeline::SplitStep split = pipeline::split_at_sens(s.step, pipeline::Options::from_env());
  std::vector<Tensor> fwd = split.forward_program->run({x});
  ASSERT_EQ(fwd.size(), 1 + split.num_residuals);
  EXPECT_GT(split.num_residuals, 0u);
  expect_close(fwd[0], whole[0]);
  std::vector<Tensor> in(fwd.begin() + 1, fwd.end());
  in.push_back(sens);
  std::vector<Tensor> grads = split.backward_program->run(in);
  ASSERT_EQ(grads.size(), 2u);
  expect_close(grads[0], whole[1]);
  expect_close(grads[1], whole[2]);
  // The forward's matmul and tanh are not recomputed: the backward graph has no tanh.
  EXPECT_EQ(ir::print(*split.backward).find("tanh("), std::string::npos)
      << ir::print(*split.backward);
}

TEST(SplitGrad, RefusesAGradientWithoutItsValue) {
  ir::Module m;
  FuncGraph* g = m.add_graph("f");
  NodePtr x = g->add_parameter("x");
  g->set_output(uop(g, "tanh", {x}));
  ad::GradSpec spec;
  spec.positions = {0};
  spec.sens_param = true;
  pipeline::Step step = pipeline::compile_step(g, {tensor_abs({3}), tensor_abs({3})}, &spec,
                                               pipeline::Options::from_env());
  EXPECT_THROW(pipeline::split_at_sens(step, pipeline::Options::from_env()), TypeError);
}

}  // namespace
}  // namespace mycel::backend::testing
