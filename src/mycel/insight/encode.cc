// One step's values -> a serialized TensorBoard Event: scalars as simple_value, histograms as
// HistogramProto, images as PNG, tensors as TensorProto with raw little-endian content.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "mycel/insight/detail.h"
#include "mycel/insight/proto/event.pb.h"

namespace mycel::insight::detail {

namespace pb = mycel::insight::proto;

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> r(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = static_cast<double>(static_cast<compute_t<T>>(p[i]));
  });
  return r;
}

Histogram histogram(const std::vector<double>& x, int bins) {
  Histogram h;
  h.min = std::numeric_limits<double>::infinity();
  h.max = -h.min;
  for (double v : x) {
    if (!std::isfinite(v)) continue;  // NaN/inf have no bucket; num counts what is drawn
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (h.num == 0) {
    h.min = h.max = 0;
    h.edges = {0, 0};
    h.counts = {0};
    return h;
  }
  if (h.min == h.max) bins = 1;  // one bucket [v, v]
  h.edges.resize(bins + 1);
  for (int i = 0; i <= bins; ++i) h.edges[i] = h.min + (h.max - h.min) * i / bins;
  h.edges[bins] = h.max;
  h.counts.assign(bins, 0);
  const double scale = h.max > h.min ? bins / (h.max - h.min) : 0;
  for (double v : x) {
    if (!std::isfinite(v)) continue;
    int k = std::clamp(static_cast<int>((v - h.min) * scale), 0, bins - 1);
    // The scaled index can be off by one at an edge: settle it against the edges themselves.
    if (v < h.edges[k])
      --k;
    else if (k < bins - 1 && v >= h.edges[k + 1])
      ++k;
    h.counts[k] += 1;
  }
  return h;
}

int proto_dtype(DType t, bool exact) {
  switch (t) {
    case DType::bool_:
      return pb::DT_BOOL;
    case DType::int8:
      return pb::DT_INT8;
    case DType::uint8:
      return pb::DT_UINT8;
    case DType::int16:
      return pb::DT_INT16;
    case DType::int32:
      return pb::DT_INT32;
    case DType::int64:
      return pb::DT_INT64;
    case DType::float16:
      return pb::DT_HALF;
    case DType::float32:
      return pb::DT_FLOAT;
    case DType::float64:
      return pb::DT_DOUBLE;
    case DType::bfloat16:
      return exact ? pb::DT_BFLOAT16 : pb::DT_FLOAT;  // data: converted to float32 first
    case DType::uint16:
      return pb::DT_UINT16;
    case DType::uint32:
      return pb::DT_UINT32;
    case DType::uint64:
      return pb::DT_UINT64;
    case DType::complex64:
      return pb::DT_COMPLEX64;
    case DType::complex128:
      return pb::DT_COMPLEX128;
  }
  return pb::DT_FLOAT;
}

namespace {

void set_plugin(pb::Summary::Value* v, const char* plugin, pb::DataClass c) {
  auto* md = v->mutable_metadata();
  md->mutable_plugin_data()->set_plugin_name(plugin);
  md->set_data_class(c);
}

void encode_tensor(const Tensor& given, pb::TensorProto* tp) {
  Tensor t = given;
  if (t.dtype() == DType::bfloat16) {
    std::vector<double> d = to_doubles(t);
    t = Tensor::empty(t.shape(), DType::float32);
    for (size_t i = 0; i < d.size(); ++i) t.data<float>()[i] = static_cast<float>(d[i]);
  }
  tp->set_dtype(static_cast<pb::DataType>(proto_dtype(t.dtype())));
  for (int64_t d : t.shape()) tp->mutable_tensor_shape()->add_dim()->set_size(d);
  tp->set_tensor_content(t.data(), t.nbytes());  // x86-64 is little-endian, as the format wants
}

void encode_value(const SummaryValue& sv, pb::Summary::Value* v) {
  v->set_tag(sv.tag);
  switch (sv.kind) {
    case SummaryKind::kScalar:
      v->set_simple_value(static_cast<float>(to_doubles(sv.value).at(0)));
      return;
    case SummaryKind::kHistogram: {
      Histogram h = histogram(to_doubles(sv.value), kHistogramBins);
      auto* hp = v->mutable_histo();
      hp->set_min(h.min);
      hp->set_max(h.max);
      hp->set_num(h.num);
      hp->set_sum(h.sum);
      hp->set_sum_squares(h.sum_squares);
      for (size_t k = 0; k < h.counts.size(); ++k) {
        hp->add_bucket_limit(h.edges[k + 1]);
        hp->add_bucket(h.counts[k]);
      }
      return;
    }
    case SummaryKind::kImage: {
      Canvas c = image_canvas(sv.value);
      auto* im = v->mutable_image();
      im->set_height(c.height);
      im->set_width(c.width);
      im->set_colorspace(c.channels);
      im->set_encoded_image_string(encode_png(c));
      return;
    }
    case SummaryKind::kTensor:
      encode_tensor(sv.value, v->mutable_tensor());
      set_plugin(v, "tensor", pb::DATA_CLASS_TENSOR);
      return;
  }
}

}  // namespace

std::string version_event(double wall_time) {
  pb::Event e;
  e.set_wall_time(wall_time);
  e.set_file_version("brain.Event:2");
  return e.SerializeAsString();
}

std::string summary_event(int64_t step, double wall_time, const std::vector<SummaryValue>& values) {
  pb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  auto* s = e.mutable_summary();
  for (const SummaryValue& sv : values) encode_value(sv, s->add_value());
  return e.SerializeAsString();
}

}  // namespace mycel::insight::detail
