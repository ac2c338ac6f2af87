// Insight internals: CRC-32C against its published check value, TFRecord framing, histogram
// buckets at their edges, the summary queue's latest-per-tag rule, MindSpore's tag suffixes,
// the profiler's site and event buffers, and the debugger's copies of overwritten inputs.
#include <gtest/gtest.h>

#include <cstring>

#include "mycel/insight/crc32c.h"
#include "mycel/insight/detail.h"

namespace mycel::insight {
namespace {

TEST(Insight, Crc32cCheckValue) {
  EXPECT_EQ(detail::crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C catalogue's check value
  EXPECT_EQ(detail::crc32c("", 0), 0u);
  uint8_t zeros[32] = {};
  EXPECT_EQ(detail::crc32c(zeros, 32), 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
}

TEST(Insight, FrameRecordLayout) {
  std::string out;
  detail::frame_record("abc", out);
  ASSERT_EQ(out.size(), 8u + 4u + 3u + 4u);
  uint64_t n;
  std::memcpy(&n, out.data(), 8);
  EXPECT_EQ(n, 3u);
  uint32_t c;
  std::memcpy(&c, out.data() + 8, 4);
  EXPECT_EQ(c, detail::masked_crc32c(out.data(), 8));
  EXPECT_EQ(out.substr(12, 3), "abc");
  std::memcpy(&c, out.data() + 15, 4);
  EXPECT_EQ(c, detail::masked_crc32c("abc", 3));
}

TEST(Insight, HistogramEdgesAreHalfOpenLastClosed) {
  detail::Histogram h = detail::histogram({0.0, 1.0, 2.0, 3.0, 4.0}, 4);
  ASSERT_EQ(h.counts.size(), 4u);
  EXPECT_EQ(h.counts, (std::vector<double>{1, 1, 1, 2}));  // 4.0 == max falls in the last bucket
  EXPECT_EQ(h.edges.front(), 0.0);
  EXPECT_EQ(h.edges.back(), 4.0);
  EXPECT_EQ(h.num, 5);
  EXPECT_EQ(h.sum_squares, 30);
}

TEST(Insight, QueueKeepsLatestPerTagOnlyWhileAttached) {
  SummaryQueue& q = SummaryQueue::get();
  Tensor a = Tensor::scalar(1.0, DType::float32), b = Tensor::scalar(2.0, DType::float32);
  q.push(SummaryKind::kScalar, "x", a);  // nobody attached: the op's kernel would not push
  q.attach();
  q.take();
  q.push(SummaryKind::kScalar, "x", a);
  q.push(SummaryKind::kHistogram, "x", a);
  q.push(SummaryKind::kScalar, "x", b);
  std::vector<SummaryValue> v = q.take();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].kind, SummaryKind::kScalar);
  EXPECT_EQ(v[0].value.item_as_double(), 2.0);
  EXPECT_TRUE(q.take().empty());
  q.detach();
}

TEST(Insight, MindSporeTagSuffixes) {
  EXPECT_EQ(summary_tag(SummaryKind::kScalar, "loss[:Scalar]", "t"), "loss");
  EXPECT_EQ(summary_tag(SummaryKind::kImage, "in[:Image]", "t"), "in");
  EXPECT_EQ(summary_tag(SummaryKind::kHistogram, "w[:Histogram]", "t"), "w");
  EXPECT_EQ(summary_tag(SummaryKind::kTensor, "x[:Tensor]", "t"), "x");
  EXPECT_EQ(summary_tag(SummaryKind::kScalar, "a[b]", "t"), "a[b]");  // not a kind suffix
  EXPECT_THROW(summary_tag(SummaryKind::kScalar, "loss[:Image]", "t"), ValueError);
  EXPECT_THROW(summary_tag(SummaryKind::kScalar, "[:Scalar]", "t"), ValueError);
}

TEST(Insight, ProfilerSitesEventsAndSpans) {
  profiler::start();
  int key = 0;
  int made = 0;
  auto make = [&] {
    ++made;
    SiteInfo s;
    s.op = "add";
    return s;
  };
  const int32_t a = profiler::eager_site(&key, make);
  EXPECT_EQ(profiler::eager_site(&key, make), a);  // described once per session
  EXPECT_EQ(made, 1);
  SiteInfo g;
  g.op = "dense";
  g.where = "net.py:3:4";
  g.weights = {"fc.weight"};
  g.graph = true;
  const int32_t b = profiler::add_site(g);
  profiler::push_scope("Default/fc-Dense");
  profiler::record(b, 10, 20, 64);
  profiler::pop_scope();
  profiler::record(a, 30, 35, 8);
  profiler::span("step", "step", 5, 40, 128);
  profiler::stop();
  std::vector<profiler::OpEvent> ev = profiler::take();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].site, b);
  EXPECT_EQ(ev[0].end_ns - ev[0].start_ns, 10);
  EXPECT_EQ(ev[0].bytes, 64);
  EXPECT_EQ(ev[1].scope, -1);
  std::vector<std::string> scopes = profiler::scopes();
  ASSERT_EQ(scopes.size(), 1u);
  EXPECT_EQ(scopes[ev[0].scope], "Default/fc-Dense");
  std::vector<SiteInfo> sites = profiler::sites();
  EXPECT_EQ(sites[b].weights, std::vector<std::string>{"fc.weight"});
  EXPECT_EQ(sites[a].op, "add");
  std::vector<profiler::Span> spans = profiler::take_spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].value, 128);
  const uint32_t e = profiler::epoch();
  profiler::start();  // a new session: sites re-registered
  EXPECT_NE(profiler::epoch(), e);
  EXPECT_TRUE(profiler::sites().empty());
  profiler::stop();
}

TEST(Insight, DebuggerCopiesOnlyInputsAnOutputOverwrites) {
  Tensor x = Tensor::empty({4}, DType::float32);
  Tensor y = Tensor::empty({4}, DType::float32);
  Tensor out_over_x = Tensor(x.storage(), x.offset() + 2 * 4, {2}, DType::float32);
  std::vector<Tensor> before = debugger::inputs_before({x, y, Tensor()}, {out_over_x});
  ASSERT_EQ(before.size(), 3u);
  EXPECT_NE(before[0].data(), x.data());  // overlapped: a copy
  EXPECT_EQ(before[1].data(), y.data());  // untouched: itself
  EXPECT_FALSE(before[2].defined());
}

}  // namespace
}  // namespace mycel::insight
