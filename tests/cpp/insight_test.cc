// Insight internals: CRC-32C against its published check value, TFRecord framing, histogram
// buckets at their edges, and the summary queue's latest-per-tag rule.
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

}  // namespace
}  // namespace mycel::insight
