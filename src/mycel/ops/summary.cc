// Summary ops (MindSpore's ScalarSummary, ImageSummary, HistogramSummary, TensorSummary): each
// hands a copy of its input to the insight queue that SummaryRecord.record drains, eagerly or from
// inside a compiled step (no Python call there). They carry OpDef::effect, so the optimizer never
// folds, merges, drops or reorders them, and are record-only (OpDef::record_only): their output is
// a placeholder int32 [1] (as MindSpore's), and a gradient's recomputed forward skips them.
#include "mycel/insight/insight.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

template <insight::SummaryKind K>
std::vector<TensorMeta> infer_summary(const InferContext& c) {
  insight::check_value(K, c.attrs.get_str("name"), c.in(0), c.op.class_name.c_str());
  return {TensorMeta{Shape{1}, DType::int32}};
}

template <insight::SummaryKind K>
void summary_kernel(const KernelContext& c) {
  c.out(0).data<int32_t>()[0] = 0;
  insight::SummaryQueue& q = insight::SummaryQueue::get();
  if (q.active()) q.push(K, c.attrs.get_str("name"), c.in(0));  // else nobody would read it
}

template <insight::SummaryKind K>
OpDef summary_op(const char* name, const char* cls, const char* doc) {
  OpDef d = make_op(name, cls, doc, {{"value"}}, {attr("name", AttrKind::kStr)}, infer_summary<K>,
                    summary_kernel<K>, all_dtypes(), "none");
  d.effect = true;
  d.record_only = true;
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(summary) {
  using K = insight::SummaryKind;
  r.add(summary_op<K::kScalar>(
      "scalar_summary", "ScalarSummary",
      "Records a one-element tensor as scalar `name` of the next summary step."));
  r.add(summary_op<K::kImage>("image_summary", "ImageSummary",
                              "Records an NCHW image batch (1, 3 or 4 channels) as image `name`."));
  r.add(summary_op<K::kHistogram>("histogram_summary", "HistogramSummary",
                                  "Records the histogram of a tensor's values as `name`."));
  r.add(summary_op<K::kTensor>("tensor_summary", "TensorSummary",
                               "Records a tensor's values as tensor `name`."));
}

}  // namespace mycel
