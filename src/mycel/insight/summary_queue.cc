// Summary kinds, their value checks, and the process-wide queue that summary ops fill.
#include <algorithm>

#include "mycel/core/error.h"
#include "mycel/insight/insight.h"

namespace mycel::insight {

const char* kind_name(SummaryKind k) {
  switch (k) {
    case SummaryKind::kScalar:
      return "scalar";
    case SummaryKind::kImage:
      return "image";
    case SummaryKind::kHistogram:
      return "histogram";
    case SummaryKind::kTensor:
      return "tensor";
  }
  return "?";
}

SummaryKind kind_from_name(std::string_view plugin, const char* who) {
  for (SummaryKind k :
       {SummaryKind::kScalar, SummaryKind::kImage, SummaryKind::kHistogram, SummaryKind::kTensor})
    if (plugin == kind_name(k)) return k;
  MYCEL_THROW(ValueError, "[", who,
              "] plugin must be one of 'scalar', 'image', 'histogram', 'tensor', got '", plugin,
              "'");
}

std::string summary_tag(SummaryKind k, const std::string& tag, const char* who) {
  static const char* const kSuffix[] = {"[:Scalar]", "[:Image]", "[:Histogram]", "[:Tensor]"};
  const size_t open = tag.rfind("[:");
  if (open == std::string::npos || tag.back() != ']') return tag;
  const std::string suffix = tag.substr(open);
  const char* mine = kSuffix[static_cast<int>(k)];
  if (suffix == mine) {
    MYCEL_CHECK(open > 0, ValueError, "[", who, "] name '", tag, "' has no name before ", mine);
    return tag.substr(0, open);
  }
  for (const char* other : kSuffix)
    MYCEL_CHECK(suffix != other, ValueError, "[", who, "] name '", tag, "' says ", other,
                " but the value is recorded as ", kind_name(k), " (suffix ", mine, ")");
  return tag;  // brackets of the user's own: part of the name
}

void check_value(SummaryKind k, const std::string& tag, const TensorMeta& m, const char* who) {
  MYCEL_CHECK(!tag.empty(), ValueError, "[", who, "] name must be a non-empty string");
  summary_tag(k, tag, who);  // a MindSpore kind suffix must name this kind
  int64_t n = 1;
  for (int64_t d : m.shape) n *= d;
  switch (k) {
    case SummaryKind::kScalar:
      MYCEL_CHECK(n == 1, ValueError, "[", who, "] '", tag,
                  "' must be a scalar (one element), got shape ", shape_str(m.shape));
      return;
    case SummaryKind::kImage:
      MYCEL_CHECK(m.shape.size() == 4, ValueError, "[", who, "] '", tag,
                  "' must be a 4-D NCHW image batch, got shape ", shape_str(m.shape));
      MYCEL_CHECK(m.shape[1] == 1 || m.shape[1] == 3 || m.shape[1] == 4, ValueError, "[", who,
                  "] '", tag, "' must have 1, 3 or 4 channels (dim 1 of NCHW), got shape ",
                  shape_str(m.shape));
      return;
    case SummaryKind::kHistogram:
    case SummaryKind::kTensor:
      return;
  }
}

SummaryQueue& SummaryQueue::get() {
  static SummaryQueue q;
  return q;
}

void SummaryQueue::detach() {
  if (listeners_.fetch_sub(1) == 1) {  // nobody left to read them
    std::lock_guard lock(mu_);
    values_.clear();
  }
}

void SummaryQueue::push(SummaryKind k, const std::string& name, const Tensor& value) {
  const std::string tag = summary_tag(k, name, "summary");
  Tensor copy = value.clone();  // the step may reuse the buffer as soon as the op returns
  std::lock_guard lock(mu_);
  auto it = std::find_if(values_.begin(), values_.end(),
                         [&](const SummaryValue& v) { return v.kind == k && v.tag == tag; });
  if (it != values_.end())
    it->value = std::move(copy);
  else
    values_.push_back({k, tag, std::move(copy)});
}

std::vector<SummaryValue> SummaryQueue::take() {
  std::lock_guard lock(mu_);
  std::vector<SummaryValue> r;
  r.swap(values_);
  return r;
}

}  // namespace mycel::insight
