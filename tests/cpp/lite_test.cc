// The lite runtime from C++: MINDIR round trip, the optimizer's rewrites against the unoptimized
// graph, the static plan across input shapes, the C API, and rejection of damaged files.
#ifdef MYCEL_WITH_LITE
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "mycel/lite/c_api.h"
#include "mycel/lite/session.h"

namespace mycel::lite {
namespace {

Tensor filled(Shape s, float start, float step) {
  Tensor t = Tensor::empty(s, DType::float32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = start + step * static_cast<float>(i % 17);
  return t;
}

int value(Graph& g, const std::string& name, Shape shape, int weight = -1) {
  g.values.push_back(ValueInfo{name, DType::float32, std::move(shape), weight});
  return static_cast<int>(g.values.size()) - 1;
}

int weight(Graph& g, const std::string& name, Tensor t) {
  g.weights.push_back(t);
  return value(g, name, t.shape(), static_cast<int>(g.weights.size()) - 1);
}

NodeInfo node(const std::string& op, std::vector<int> in, std::vector<int> out,
              const std::map<std::string, AttrValue>& attrs = {}) {
  NodeInfo n;
  n.op = &Registry::get().at(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = make_attrs(*n.op, attrs);
  return n;
}

// x -> conv2d -> batch_norm -> relu -> mean over H, W: every rewrite has something to do.
Graph conv_bn_relu() {
  Graph g;
  int x = value(g, "x", {-1, 2, 5, 5});
  g.inputs = {x};
  int w = weight(g, "w", filled({3, 2, 3, 3}, -0.4f, 0.05f));
  int gamma = weight(g, "gamma", filled({3}, 0.5f, 0.3f));
  int beta = weight(g, "beta", filled({3}, -0.2f, 0.1f));
  int mean = weight(g, "mean", filled({3}, 0.1f, -0.05f));
  int var = weight(g, "var", filled({3}, 0.7f, 0.4f));
  int y = value(g, "y", {-1, 3, 5, 5}), z = value(g, "z", {-1, 3, 5, 5}), sm = value(g, "sm", {3}),
      si = value(g, "si", {3}), r = value(g, "r", {-1, 3, 5, 5}), o = value(g, "o", {-1, 3});
  g.nodes.push_back(node("conv2d", {x, w, -1}, {y},
                         {{"pad_mode", std::string("pad")}, {"pad", std::vector<int64_t>{1}}}));
  g.nodes.push_back(node("batch_norm", {y, gamma, beta, mean, var}, {z, sm, si}));
  g.nodes.push_back(node("relu", {z}, {r}));
  g.nodes.push_back(node("mean", {r}, {o}, {{"axis", std::vector<int64_t>{2, 3}}}));
  g.outputs = {o};
  return g;
}

Graph reparse(const Graph& g) {
  auto bytes = std::make_shared<std::string>(serialize(g));
  return parse(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), bytes);
}

TEST(Lite, OptimizedRunMatchesUnoptimizedAcrossShapes) {
  SessionOptions plain;
  plain.optimize = false;
  Session opt(reparse(conv_bn_relu())), ref(reparse(conv_bn_relu()), plain);
  EXPECT_EQ(opt.stats().optimized.batch_norms_folded, 1);
  EXPECT_EQ(opt.stats().optimized.activations_fused, 1);
  EXPECT_EQ(opt.graph().nodes.size(), 2u);  // conv2d+relu, mean
  for (int64_t n : {1, 4, 1}) {
    Tensor x = filled({n, 2, 5, 5}, -1.0f, 0.13f);
    Tensor a = opt.run({x})[0], b = ref.run({x})[0];
    ASSERT_EQ(a.shape(), (Shape{n, 3}));
    for (int64_t i = 0; i < a.numel(); ++i)
      EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5);
  }
  EXPECT_EQ(opt.stats().num_plans, 3);
}

TEST(Lite, LoaderRejectsDamage) {
  std::string bytes = serialize(conv_bn_relu());
  auto try_parse = [](std::string s) {
    auto keep = std::make_shared<std::string>(std::move(s));
    parse(reinterpret_cast<const uint8_t*>(keep->data()), keep->size(), keep);
  };
  EXPECT_THROW(try_parse(bytes.substr(0, bytes.size() - 1)), ValueError);
  EXPECT_THROW(try_parse(bytes.substr(0, 10)), ValueError);
  std::string flipped = bytes;
  flipped[100] ^= 0x40;
  EXPECT_THROW(try_parse(flipped), ValueError);
  Graph cyclic = conv_bn_relu();
  std::swap(cyclic.nodes[0], cyclic.nodes[2]);  // relu reads z before batch_norm defines it
  EXPECT_THROW(serialize(cyclic), ValueError);
}

TEST(Lite, CApi) {
  const std::string path = ::testing::TempDir() + "lite_c_api.mindir";
  {
    std::ofstream f(path, std::ios::binary);
    const std::string bytes = serialize(conv_bn_relu());
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  char err[256] = {0};
  EXPECT_EQ(mycel_lite_session_create("/nonexistent.mindir", 1, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("cannot open"), std::string::npos) << err;
  MycelLiteSession* s = mycel_lite_session_create(path.c_str(), 1, err, sizeof err);
  ASSERT_NE(s, nullptr) << err;
  EXPECT_EQ(mycel_lite_num_inputs(s), 1);
  Tensor x = filled({2, 2, 5, 5}, -1.0f, 0.13f);
  const float* in[] = {x.data<float>()};
  const int64_t shape[] = {2, 2, 5, 5};
  const int64_t* shapes[] = {shape};
  int rank[] = {4};
  ASSERT_EQ(mycel_lite_run_f32(s, 1, in, shapes, rank, err, sizeof err), 0) << err;
  const float* out;
  const int64_t* oshape;
  int orank;
  ASSERT_EQ(mycel_lite_output_f32(s, 0, &out, &oshape, &orank), 0);
  EXPECT_EQ(orank, 2);
  EXPECT_EQ(oshape[0], 2);
  Session ref(reparse(conv_bn_relu()));
  Tensor want = ref.run({x})[0];
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(out[i], want.data<float>()[i], 1e-5);
  // The caller's buffer must hold the shape it declares (the API cannot see its size): a wrong
  // shape over a buffer of that size is rejected by the graph's input check.
  const int64_t bad_shape[] = {2, 3, 5, 5};
  const int64_t* bad_shapes[] = {bad_shape};
  std::vector<float> bad_data(2 * 3 * 5 * 5, 0.5f);
  const float* bad_in[] = {bad_data.data()};
  EXPECT_NE(mycel_lite_run_f32(s, 1, bad_in, bad_shapes, rank, err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("input 0"), std::string::npos) << err;
  mycel_lite_session_destroy(s);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mycel::lite
#endif  // MYCEL_WITH_LITE
