// Backend: straight-line programs against eager call_op (exact), allocation-free warm runs,
// outputs that survive the next run, views, in-place reuse, weights, mutation, errors.
#include "backend_util.h"
#include "mycel/core/random.h"

namespace mycel::backend::testing {
namespace {

// x -> matmul(w1) -> add(b1) -> relu -> matmul(w2) -> softmax, weights bound.
struct Mlp {
  Module m;
  FuncGraph* g;
  Tensor w1 = randn({8, 16}, 1), b1 = randn({16}, 2), w2 = randn({16, 4}, 3);
  explicit Mlp(int64_t batch = 5) {
    g = m.add_graph("mlp");
    NodePtr x = param(g, "x", tensor_abs({batch, 8}));
    NodePtr W1 = weight(g, "w1", w1), B1 = weight(g, "b1", b1), W2 = weight(g, "w2", w2);
    NodePtr h = op(g, "relu", {op(g, "add", {op(g, "matmul", {x, W1}), B1})});
    g->set_output(op(g, "softmax", {op(g, "matmul", {h, W2})}));
  }
  Tensor reference(const Tensor& x) const {
    Tensor h = eager("relu", {eager("add", {eager("matmul", {x, w1})[0], b1})[0]})[0];
    return eager("softmax", {eager("matmul", {h, w2})[0]})[0];
  }
};

TEST(Backend, MlpMatchesEagerExactly) {
  Mlp mlp;
  auto prog = compile(*mlp.g, CompileOptions{false});  // counts below are per unfused op
  Tensor x = randn({5, 8}, 7);
  auto out = prog->run({x});
  ASSERT_EQ(out.size(), 1u);
  expect_same(out[0], mlp.reference(x));
  ProgramStats s = prog->stats();
  EXPECT_EQ(s.num_kernel_launches, 5u);
  EXPECT_EQ(s.num_instructions, 5u);
  // The arena is smaller than the four intermediates plus the output side by side.
  size_t naive = 4 * (5 * 16 + 5 * 16 + 5 * 4 + 5 * 4);
  EXPECT_LT(s.arena_bytes, naive);
  EXPECT_GE(s.num_inplace, 2u);  // add over the matmul result, relu over the add
}

TEST(Backend, WarmRunCallsTheAllocatorOnlyForOutputs) {
  Mlp mlp;
  auto prog = compile(*mlp.g);
  Tensor x = randn({5, 8}, 7);
  prog->run({x});
  size_t before = allocator_stats().num_allocs;
  auto out = prog->run({x});
  size_t after = allocator_stats().num_allocs;
  EXPECT_EQ(after - before, 1u) << "one allocation: the copied-out output";
  expect_same(out[0], mlp.reference(x));
}

TEST(Backend, OutputsStayValidAfterTheNextRun) {
  Mlp mlp;
  auto prog = compile(*mlp.g);
  Tensor x1 = randn({5, 8}, 11), x2 = randn({5, 8}, 12);
  Tensor y1 = prog->run({x1})[0];
  Tensor keep = y1.clone();
  Tensor y2 = prog->run({x2})[0];
  expect_same(y1, keep);
  expect_same(y2, mlp.reference(x2));
}

TEST(Backend, TupleOutputAndMultiOutputOps) {
  // (y, mean, rstd) = layer_norm(x, g, b); return (y * 2, rstd, x)
  Module m;
  FuncGraph* g = m.add_graph("ln");
  NodePtr x = param(g, "x", tensor_abs({3, 6}));
  NodePtr gam = param(g, "gamma", tensor_abs({6})), bet = param(g, "beta", tensor_abs({6}));
  NodePtr ln = op(g, "layer_norm", {x, gam, bet});
  auto item = [&](int i) {
    auto* t = static_cast<const AbstractTuple*>(ln->abstract().get());
    return prim(g, Prim::kTupleGetItem, {ln, g->constant(integer(i))}, t->items()[i]);
  };
  NodePtr two = param(g, "two", tensor_abs({}));
  NodePtr y2 = op(g, "mul", {item(0), two});
  g->set_output(prim(g, Prim::kMakeTuple, {y2, item(2), x},
                     std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{
                         y2->abstract(), item(2)->abstract(), x->abstract()})));
  auto prog = compile(*g);
  Tensor X = randn({3, 6}, 1), G = randn({6}, 2), B = randn({6}, 3),
         T = Tensor::scalar(2, DType::float32);
  auto out = prog->run({X, G, B, T});
  auto ref = eager("layer_norm", {X, G, B});
  ASSERT_EQ(out.size(), 3u);
  expect_same(out[0], eager("mul", {ref[0], T})[0]);
  expect_same(out[1], ref[2]);
  EXPECT_EQ(out[2].storage(), X.storage()) << "an input returned as is";
}

TEST(Backend, ViewsAliasWithoutInstructions) {
  // y = reshape(exp(x), (6,)); z = expand_dims(y, 0) + 1
  Module m;
  FuncGraph* g = m.add_graph("v");
  NodePtr x = param(g, "x", tensor_abs({2, 3}));
  NodePtr e = op(g, "exp", {x});
  NodePtr y = op(g, "reshape", {e}, {{"shape", std::vector<int64_t>{6}}});
  NodePtr z = op(g, "expand_dims", {y}, {{"axis", int64_t{0}}});
  NodePtr one = g->constant(tensor_value(Tensor::scalar(1, DType::float32)));
  one->set_abstract(tensor_abs({}));
  g->set_output(op(g, "add", {z, one}));
  auto prog = compile(*g);
  Tensor X = randn({2, 3}, 5);
  Tensor ref = eager(
      "add",
      {eager("expand_dims",
             {eager("reshape", {eager("exp", {X})[0]}, {{"shape", std::vector<int64_t>{6}}})[0]},
             {{"axis", int64_t{0}}})[0],
       Tensor::scalar(1, DType::float32)})[0];
  expect_same(prog->run({X})[0], ref);
  EXPECT_EQ(prog->stats().num_instructions, 2u) << prog->dump();
  EXPECT_EQ(prog->stats().num_kernel_launches, 2u);
}

TEST(Backend, ViewOfAnInputAliasesAtRunTime) {
  Module m;
  FuncGraph* g = m.add_graph("v");
  NodePtr x = param(g, "x", tensor_abs({2, 3}));
  g->set_output(op(g, "neg", {op(g, "flatten", {x})}));
  auto prog = compile(*g);
  Tensor X = randn({2, 3}, 5);
  expect_same(prog->run({X})[0], eager("neg", {eager("flatten", {X})[0]})[0]);
}

TEST(Backend, BatchNormUpdatesBoundRunningStatsLikeEager) {
  Tensor mean = Tensor::zeros({3}, DType::float32), var = randn({3}, 4).to(DType::float32);
  for (int i = 0; i < 3; ++i) var.data<float>()[i] = 1.0f + i;
  Tensor mean_e = mean.clone(), var_e = var.clone();
  Tensor scale = randn({3}, 5), bias = randn({3}, 6);
  Module m;
  FuncGraph* g = m.add_graph("bn");
  NodePtr x = param(g, "x", tensor_abs({4, 3, 2, 2}));
  NodePtr s = weight(g, "scale", scale), b = weight(g, "bias", bias);
  NodePtr mu = weight(g, "mean", mean), v = weight(g, "variance", var);
  NodePtr bn = op(g, "batch_norm", {x, s, b, mu, v}, {{"is_training", true}});
  auto* t = static_cast<const AbstractTuple*>(bn->abstract().get());
  g->set_output(prim(g, Prim::kTupleGetItem, {bn, g->constant(integer(0))}, t->items()[0]));
  auto prog = compile(*g);
  Tensor X = randn({4, 3, 2, 2}, 8);
  for (int step = 0; step < 2; ++step) {
    Tensor y = prog->run({X})[0];
    auto ref = call_op("batch_norm", {X, scale, bias, mean_e, var_e}, {{"is_training", true}});
    expect_same(y, ref[0]);
    expect_same(mean, mean_e);
    expect_same(var, var_e);
  }
}

TEST(Backend, RandomOpsDrawFromTheGlobalGeneratorAsEager) {
  Module m;
  FuncGraph* g = m.add_graph("r");
  NodePtr x = param(g, "x", tensor_abs({4, 5}));
  NodePtr u = op(g, "uniform", {}, {{"shape", std::vector<int64_t>{4, 5}}});
  g->set_output(op(g, "add", {x, u}));
  auto prog = compile(*g);
  Tensor X = randn({4, 5}, 1);
  Generator::global().set_seed(42);
  Tensor a = prog->run({X})[0], a2 = prog->run({X})[0];
  Generator::global().set_seed(42);
  Tensor u1 = call_op("uniform", {}, {{"shape", std::vector<int64_t>{4, 5}}})[0];
  expect_same(a, eager("add", {X, u1})[0]);
  Tensor u2 = call_op("uniform", {}, {{"shape", std::vector<int64_t>{4, 5}}})[0];
  expect_same(a2, eager("add", {X, u2})[0]);
}

TEST(Backend, WrongInputsNameTheParameter) {
  Mlp mlp;
  auto prog = compile(*mlp.g);
  try {
    prog->run({});
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("takes 1 inputs (x), got 0"), std::string::npos)
        << e.what();
  }
  try {
    prog->run({randn({5, 9}, 1)});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' expects shape (5, 8), got (5, 9)"),
              std::string::npos)
        << e.what();
  }
  try {
    prog->run({randn({5, 8}, 1, DType::float64)});
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' expects dtype float32, got float64"),
              std::string::npos)
        << e.what();
  }
}

TEST(Backend, RejectsGraphsWithoutAbstracts) {
  Module m;
  FuncGraph* g = m.add_graph("f");
  NodePtr x = g->add_parameter("x");
  g->set_output(x);
  EXPECT_THROW(compile(*g), RuntimeError);
}

}  // namespace
}  // namespace mycel::backend::testing
