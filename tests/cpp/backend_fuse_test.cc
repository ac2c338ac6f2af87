// Backend fusion (fuse_post_ops.cc, fuse_elementwise.cc): the program listing before and after,
// results equal to eager bit for bit, and the cases that must not fuse.
#include "backend_util.h"

namespace mycel::backend::testing {
namespace {

const CompileOptions kUnfused{false}, kFused{true};

Tensor scalar32(double v) { return Tensor::scalar(v, DType::float32); }

TEST(BackendFuse, MatmulAddReluBecomesOnePrimitive) {
  Module m;
  FuncGraph* g = m.add_graph("mlp");
  Tensor w = randn({8, 16}, 1), b = randn({16}, 2);
  NodePtr x = param(g, "x", tensor_abs({5, 8}));
  NodePtr W = weight(g, "w", w), B = weight(g, "b", b);
  g->set_output(op(g, "relu", {op(g, "add", {op(g, "matmul", {x, W}), B})}));
  EXPECT_EQ(compile(*g, kUnfused)->dump(),
            "function @mlp(r0)\n"
            "  r2 = matmul(r0, r1)\n"
            "  r4 = add(r2, r3)\n"
            "  r5 = relu(r4)\n"
            "  return r5\n");
  auto prog = compile(*g, kFused);
  EXPECT_EQ(prog->dump(),
            "function @mlp(r0)\n"
            "  r5 = matmul+add+relu(r0, r1, r3)\n"
            "  return r5\n");
  Tensor X = randn({5, 8}, 3);
  Tensor ref = eager("relu", {eager("add", {eager("matmul", {X, w})[0], b})[0]})[0];
  expect_same(prog->run({X})[0], ref);
  EXPECT_EQ(prog->stats().num_kernel_launches, 1u);
  EXPECT_EQ(prog->stats().num_fused, 1u);
}

TEST(BackendFuse, ConvReluAndDenseRelu) {
  Module m;
  FuncGraph* g = m.add_graph("net");
  Tensor cw = randn({4, 2, 3, 3}, 1), dw = randn({6, 4 * 6 * 6}, 2), db = randn({6}, 3);
  NodePtr x = param(g, "x", tensor_abs({3, 2, 8, 8}));
  NodePtr CW = weight(g, "cw", cw), DW = weight(g, "dw", dw), DB = weight(g, "db", db);
  NodePtr c = op(g, "relu", {op(g, "conv2d", {x, CW}, {{"pad_mode", std::string("valid")}})});
  NodePtr flat = op(g, "reshape", {c}, {{"shape", std::vector<int64_t>{3, -1}}});
  g->set_output(op(g, "relu", {op(g, "dense", {flat, DW, DB})}));
  auto prog = compile(*g, kFused);
  EXPECT_EQ(prog->dump(),
            "function @net(r0)\n"
            "  r3 = conv2d+relu(r0, r1, None)\n"
            "  r4 = view reshape(r3)\n"
            "  r8 = dense+relu(r4, r5, r6)\n"
            "  return r8\n");
  Tensor X = randn({3, 2, 8, 8}, 4);
  Tensor h = eager(
      "relu", {eager("conv2d", {X, cw, Tensor()}, {{"pad_mode", std::string("valid")}})[0]})[0];
  h = eager("reshape", {h}, {{"shape", std::vector<int64_t>{3, -1}}})[0];
  expect_same(prog->run({X})[0], eager("relu", {eager("dense", {h, dw, db})[0]})[0]);
}

TEST(BackendFuse, ElementwiseChainIsOneLoop) {
  Module m;
  FuncGraph* g = m.add_graph("chain");
  NodePtr x = param(g, "x", tensor_abs({1000, 3})), a = param(g, "a", tensor_abs({1000, 3}));
  NodePtr two = g->constant(ir::tensor_value(scalar32(2)));
  two->set_abstract(tensor_abs({}));
  // sigmoid(relu(x * a + 2) - a) / 2
  NodePtr y = op(g, "add", {op(g, "mul", {x, a}), two});
  y = op(g, "sub", {op(g, "relu", {y}), a});
  g->set_output(op(g, "div", {op(g, "sigmoid", {y}), two}));
  auto prog = compile(*g, kFused);
  EXPECT_EQ(prog->dump(),
            "function @chain(r0, r1)\n"
            "  r8 = fused_elementwise{t0=mul(i0,i1); t1=add(t0,i2); t2=relu(t1); t3=sub(t2,i1); "
            "t4=sigmoid(t3); t5=div(t4,i2)}(r0, r1, r3)\n"
            "  return r8\n");
  Tensor X = randn({1000, 3}, 1), A = randn({1000, 3}, 2), T = scalar32(2);
  Tensor r = eager("add", {eager("mul", {X, A})[0], T})[0];
  r = eager("sub", {eager("relu", {r})[0], A})[0];
  r = eager("div", {eager("sigmoid", {r})[0], T})[0];
  expect_same(prog->run({X, A})[0], r);
  EXPECT_EQ(prog->stats().num_kernel_launches, 1u);
}

TEST(BackendFuse, SharedIntermediateSplitsTheChain) {
  Module m;
  FuncGraph* g = m.add_graph("shared");
  NodePtr x = param(g, "x", tensor_abs({4, 4}));
  NodePtr e = op(g, "exp", {x});  // read twice: stays a tensor of its own
  NodePtr s = op(g, "neg", {op(g, "square", {e})});
  g->set_output(prim(g, Prim::kMakeTuple, {op(g, "mul", {s, e}), op(g, "relu", {x})},
                     std::make_shared<AbstractTuple>(
                         std::vector<AbstractPtr>{tensor_abs({4, 4}), tensor_abs({4, 4})})));
  auto prog = compile(*g, kFused);
  EXPECT_EQ(prog->dump(),
            "function @shared(r0)\n"
            "  r1 = exp(r0)\n"
            "  r4 = fused_elementwise{t0=square(i0); t1=neg(t0); t2=mul(t1,i0)}(r1)\n"
            "  r5 = relu(r0)\n"
            "  return r4, r5\n");
  Tensor X = randn({4, 4}, 5);
  Tensor E = eager("exp", {X})[0];
  auto out = prog->run({X});
  expect_same(out[0], eager("mul", {eager("neg", {eager("square", {E})[0]})[0], E})[0]);
  expect_same(out[1], eager("relu", {X})[0]);
}

TEST(BackendFuse, NoReadMovesAcrossAMutation) {
  // y = m * 2 reads the running mean before batch_norm updates it; fusing y into the add after
  // batch_norm would read the updated mean.
  Module m;
  FuncGraph* g = m.add_graph("bn");
  Tensor mean = randn({3}, 1), var = eager("abs", {randn({3}, 2)})[0];
  Tensor scale = randn({3}, 3), bias = randn({3}, 4);
  NodePtr x = param(g, "x", tensor_abs({5, 3}));
  NodePtr M = weight(g, "mean", mean), V = weight(g, "var", var);
  NodePtr S = weight(g, "scale", scale), B = weight(g, "bias", bias);
  NodePtr two = g->constant(ir::tensor_value(scalar32(2)));
  two->set_abstract(tensor_abs({}));
  NodePtr y = op(g, "mul", {M, two});
  NodePtr bn = op(g, "batch_norm", {x, S, B, M, V}, {{"is_training", true}});
  NodePtr saved = prim(g, Prim::kTupleGetItem, {bn, g->constant(ir::integer(1))}, tensor_abs({3}));
  g->set_output(op(g, "add", {y, saved}));
  Tensor before = mean.clone();
  auto prog = compile(*g, kFused);
  EXPECT_EQ(prog->stats().num_fused, 0u) << prog->dump();
  Tensor X = randn({5, 3}, 5);
  Tensor out = prog->run({X})[0];
  Tensor saved_ref = eager("mean", {X}, {{"axis", std::vector<int64_t>{0}}})[0];
  Tensor ref = eager("add", {eager("mul", {before, scalar32(2)})[0], saved_ref})[0];
  Tensor diff = eager("abs", {eager("sub", {out, ref})[0]})[0];
  for (int64_t i = 0; i < 3; ++i) EXPECT_LT(diff.data<float>()[i], 1e-5f);
}

}  // namespace
}  // namespace mycel::backend::testing
