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

void check_value(SummaryKind k, const std::string& tag, const TensorMeta& m, const char* who) {
  MYCEL_CHECK(!tag.empty(), ValueError, "[", who, "] name must be a non-empty string");
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

void SummaryQueue::push(SummaryKind k, const std::string& tag, const Tensor& value) {
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
