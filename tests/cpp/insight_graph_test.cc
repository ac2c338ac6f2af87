// Graph summaries: a GraphDef event's bytes parse back (by the generated protobuf classes, the
// independent reader) to the nodes, inputs and typed attributes written, and garbage is refused.
#include <gtest/gtest.h>

#include "mycel/core/error.h"
#include "mycel/insight/insight.h"
#include "mycel/insight/proto/event.pb.h"
#include "mycel/insight/proto/graph.pb.h"

namespace mycel::insight {
namespace {

namespace pb = mycel::insight::proto;

TEST(InsightGraph, EventHoldsTheGraphDefAsWritten) {
  std::vector<GraphNode> nodes = {
      {"Default/x", "Input", {}, {{"_output_shapes", std::vector<std::vector<int64_t>>{{2, -1}}}}},
      {"Default/fc/dense-op3",
       "dense",
       {"Default/x", "Default/fc/weight"},
       {{"T", DType::bfloat16},
        {"keep", true},
        {"stride", std::vector<int64_t>{1, 2}},
        {"_source", std::string("net.py:7:8")},
        {"alpha", 0.5}}}};
  pb::Event e;
  ASSERT_TRUE(e.ParseFromString(graph_event(12, 3.5, nodes)));
  EXPECT_EQ(e.step(), 12);
  EXPECT_EQ(e.wall_time(), 3.5);
  pb::GraphDef g;
  ASSERT_TRUE(g.ParseFromString(e.graph_def()));
  ASSERT_EQ(g.node_size(), 2);
  const pb::NodeDef& d = g.node(1);
  EXPECT_EQ(d.name(), "Default/fc/dense-op3");
  EXPECT_EQ(d.op(), "dense");
  ASSERT_EQ(d.input_size(), 2);
  EXPECT_EQ(d.input(1), "Default/fc/weight");
  EXPECT_EQ(d.attr().at("T").type(), pb::DT_BFLOAT16);
  EXPECT_TRUE(d.attr().at("keep").b());
  EXPECT_EQ(d.attr().at("stride").list().i(1), 2);
  EXPECT_EQ(d.attr().at("_source").s(), "net.py:7:8");
  EXPECT_EQ(d.attr().at("alpha").f(), 0.5f);
  const auto& shape = g.node(0).attr().at("_output_shapes").list().shape(0);
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(1).size(), -1);

  std::vector<GraphNode> back = decode_graph_def(e.graph_def());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].inputs, nodes[1].inputs);
  ASSERT_EQ(back[1].attrs.size(), 5u);  // sorted by name
  EXPECT_EQ(back[1].attrs[0].first, "T");
  EXPECT_EQ(std::get<DType>(back[1].attrs[0].second), DType::bfloat16);
  EXPECT_EQ(std::get<std::vector<int64_t>>(back[1].attrs[4].second), (std::vector<int64_t>{1, 2}));
}

TEST(InsightGraph, GarbageIsAValueError) {
  EXPECT_THROW(decode_graph_def(std::string("\xff\xff\xff\xff", 4)), ValueError);
}

}  // namespace
}  // namespace mycel::insight
