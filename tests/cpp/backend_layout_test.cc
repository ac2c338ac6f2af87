// The layout step (assign_layouts.cc): listings with the activation layout and its reorders,
// results equal to eager within float32 summation order, the padded arena, and the cost check.
#include <cmath>

#include "backend_util.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_ops.h"

namespace mycel::backend::testing {
namespace {

using Layout = CompileOptions::Layout;
CompileOptions with(Layout l) {
  CompileOptions o;
  o.layout = l;
  return o;
}

void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    ASSERT_LE(std::fabs(x - y), 1e-5f + 1e-5f * std::fabs(y)) << "at " << i;
  }
}

const std::map<std::string, AttrValue> kValid{{"pad_mode", std::string("valid")}};
const std::map<std::string, AttrValue> kPool{{"kernel_size", std::vector<int64_t>{2, 2}},
                                             {"strides", std::vector<int64_t>{2, 2}}};

// conv(3 -> 5) + relu, max pool, conv(5 -> 7) + bias, max pool, flatten, dense + bias.
struct Net {
  Module m;
  FuncGraph* g = m.add_graph("net");
  Tensor w1 = randn({5, 3, 3, 3}, 1), w2 = randn({7, 5, 3, 3}, 2), b2 = randn({7}, 7);
  Tensor dw = randn({4, 7 * 2 * 2}, 3), db = randn({4}, 8);
  Net() {
    NodePtr x = param(g, "x", tensor_abs({2, 3, 14, 14}));
    NodePtr W1 = weight(g, "w1", w1), W2 = weight(g, "w2", w2), B2 = weight(g, "b2", b2);
    NodePtr DW = weight(g, "dw", dw), DB = weight(g, "db", db);
    NodePtr h = op(g, "max_pool2d", {op(g, "relu", {op(g, "conv2d", {x, W1}, kValid)})}, kPool);
    h = op(g, "max_pool2d", {op(g, "conv2d", {h, W2, B2}, kValid)}, kPool);
    h = op(g, "reshape", {h}, {{"shape", std::vector<int64_t>{2, -1}}});
    g->set_output(op(g, "dense", {h, DW, DB}));
  }
  Tensor reference(const Tensor& X) const {
    Tensor h = eager("relu", {eager("conv2d", {X, w1, Tensor()}, kValid)[0]})[0];
    h = eager("max_pool2d", {h}, kPool)[0];
    h = eager("max_pool2d", {eager("conv2d", {h, w2, b2}, kValid)[0]}, kPool)[0];
    h = eager("reshape", {h}, {{"shape", std::vector<int64_t>{2, -1}}})[0];
    return eager("dense", {h, dw, db})[0];
  }
};

TEST(BackendLayout, ConvPoolChainStaysInTheActivationLayout) {
#ifndef __AVX512F__
  GTEST_SKIP() << "the listing has the AVX-512 direct conv fused with its pooling";
#endif
  Net net;
  auto prog = compile(*net.g, with(Layout::kAuto));
  const std::string t = cpu::activation_tag_name();
  EXPECT_EQ(prog->dump(),
            "function @net(r0)\n"
            "  r4 = {nchw>" +
                t +
                "}conv2d+relu+max_pool2d(r0, r1, None)\n"
                "  r7 = {" +
                t +
                "}conv2d(r4, r5, r6)\n"
                "  r8 = {" +
                t +
                "}max_pool2d(r7)\n"
                "  r13 = to_nchw(r8)\n"
                "  r9 = view reshape(r13)\n"
                "  r12 = dense(r9, r10, r11)\n"
                "  return r12\n");
  Tensor X = randn({2, 3, 14, 14}, 4);
  expect_close(prog->run({X})[0], net.reference(X));
  expect_close(prog->run({X})[0], net.reference(X));  // a warm run too
}

TEST(BackendLayout, OffGivesThePlainProgramAndTheArenaHoldsThePadding) {
  Net net;
  auto off = compile(*net.g, with(Layout::kOff));
  EXPECT_EQ(off->dump().find('{'), std::string::npos) << off->dump();
  EXPECT_EQ(off->dump().find("to_nchw"), std::string::npos) << off->dump();
  auto on = compile(*net.g, with(Layout::kAlways));
  // Both plans hold the pooled conv1 output (5 channels, padded to the block: conv1, relu and
  // the pooling are one instruction) and one more buffer.
  const size_t padded = cpu::blocked_nbytes({2, 5, 6, 6}, DType::float32);
  EXPECT_GE(on->stats().arena_bytes, padded);
  EXPECT_GE(padded, size_t{2 * 5 * 6 * 6 * 4});
  Tensor X = randn({2, 3, 14, 14}, 5);
  expect_close(on->run({X})[0], off->run({X})[0]);
}

TEST(BackendLayout, CostCheckKeepsNchwWhenReordersWouldMoveMore) {
  // conv -> pool, and the conv's result also returned: the two to_nchw move more than the
  // conv's own reorder, so kAuto keeps NCHW; kAlways does not check.
  Module m;
  FuncGraph* g = m.add_graph("f");
  Tensor w = randn({6, 2, 3, 3}, 6);
  NodePtr x = param(g, "x", tensor_abs({1, 2, 8, 8}));
  NodePtr c = op(g, "conv2d", {x, weight(g, "w", w)}, kValid);
  g->set_output(op(g, "add",
                   {c, op(g, "resize_nearest_neighbor", {op(g, "max_pool2d", {c}, kPool)},
                          {{"size", std::vector<int64_t>{6, 6}}})}));
  EXPECT_EQ(compile(*g, with(Layout::kAuto))->dump().find('{'), std::string::npos);
  const std::string all = compile(*g, with(Layout::kAlways))->dump();
  EXPECT_NE(all.find("}max_pool2d("), std::string::npos) << all;
  EXPECT_NE(all.find("to_nchw("), std::string::npos) << all;
}

TEST(BackendLayout, KernelThatIgnoresTheLayoutIsAnError) {
  // Compiled for oneDNN, then run with the reference loops: pooling would read NHWC as NCHW.
  Net net;
  auto prog = compile(*net.g, with(Layout::kAlways));
  const cpu::NnBackend before = cpu::nn_backend();
  cpu::set_nn_backend(cpu::NnBackend::kRef);
  EXPECT_THROW(prog->run({randn({2, 3, 14, 14}, 9)}), RuntimeError);
  cpu::set_nn_backend(before);
  Tensor X = randn({2, 3, 14, 14}, 10);
  expect_close(prog->run({X})[0], net.reference(X));
}

}  // namespace
}  // namespace mycel::backend::testing
