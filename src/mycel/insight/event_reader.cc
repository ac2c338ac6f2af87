// Reading event files back (the dashboard's source): TFRecord framing with both CRCs checked,
// then each Event's summary values decoded into plain structs.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <type_traits>

#include "mycel/core/error.h"
#include "mycel/insight/crc32c.h"
#include "mycel/insight/detail.h"
#include "mycel/insight/proto/event.pb.h"

namespace mycel::insight {

namespace pb = mycel::insight::proto;

namespace detail {
bool dtype_from_proto(int t, DType* out) {
  switch (t) {
    case pb::DT_BOOL:
      *out = DType::bool_;
      return true;
    case pb::DT_INT8:
      *out = DType::int8;
      return true;
    case pb::DT_UINT8:
      *out = DType::uint8;
      return true;
    case pb::DT_INT16:
      *out = DType::int16;
      return true;
    case pb::DT_INT32:
      *out = DType::int32;
      return true;
    case pb::DT_INT64:
      *out = DType::int64;
      return true;
    case pb::DT_HALF:
      *out = DType::float16;
      return true;
    case pb::DT_BFLOAT16:
      *out = DType::bfloat16;
      return true;
    case pb::DT_FLOAT:
      *out = DType::float32;
      return true;
    case pb::DT_DOUBLE:
      *out = DType::float64;
      return true;
    case pb::DT_UINT16:
      *out = DType::uint16;
      return true;
    case pb::DT_UINT32:
      *out = DType::uint32;
      return true;
    case pb::DT_UINT64:
      *out = DType::uint64;
      return true;
    case pb::DT_COMPLEX64:
      *out = DType::complex64;
      return true;
    case pb::DT_COMPLEX128:
      *out = DType::complex128;
      return true;
    default:
      return false;
  }
}
}  // namespace detail

namespace {
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// A TensorProto as a Tensor: raw content, or the typed value lists (one value fills the shape,
// as TensorFlow's readers do). False for dtypes Mycel has no tensor of (strings).
// The largest tensor a value list may fill by repeating its last value (a file can declare any
// shape; the dashboard must not allocate what the file does not hold).
constexpr uint64_t kMaxFilledElements = uint64_t(1) << 24;

bool decode_tensor(const pb::TensorProto& tp, Tensor* out) {
  DType dt;
  if (!detail::dtype_from_proto(tp.dtype(), &dt)) return false;
  Shape shape;
  uint64_t numel = 1;
  for (const auto& d : tp.tensor_shape().dim()) {
    if (d.size() < 0 || __builtin_mul_overflow(numel, static_cast<uint64_t>(d.size()), &numel) ||
        numel > (uint64_t(1) << 40))
      return false;  // a negative or absurd shape: not a tensor this file can hold
    shape.push_back(d.size());
  }
  if (!tp.tensor_content().empty()) {
    if (tp.tensor_content().size() != numel * itemsize(dt)) return false;
    Tensor t = Tensor::empty(shape, dt);
    std::memcpy(t.data(), tp.tensor_content().data(), t.nbytes());
    *out = t;
    return true;
  }
  // complex values come in scomplex_val/dcomplex_val, which this reader does not decode
  if (numel > kMaxFilledElements || is_complex(dt)) return false;
  Tensor t = Tensor::empty(shape, dt);
  std::vector<double> vals;
  for (float v : tp.float_val()) vals.push_back(v);
  for (double v : tp.double_val()) vals.push_back(v);
  for (int32_t v : tp.int_val()) vals.push_back(v);
  for (int64_t v : tp.int64_val()) vals.push_back(static_cast<double>(v));
  for (bool v : tp.bool_val()) vals.push_back(v);
  if (vals.empty() && t.numel() > 0) return false;
  visit_any_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = vals[std::min<size_t>(static_cast<size_t>(i), vals.size() - 1)];
      if constexpr (std::is_integral_v<C>) {  // saturate: a float outside C's range is UB to cast
        constexpr double lo = static_cast<double>(std::numeric_limits<C>::lowest());
        constexpr double hi = static_cast<double>(std::numeric_limits<C>::max());
        v = std::isnan(v) ? 0.0 : std::clamp(v, lo, hi);
        t.data<T>()[i] =
            static_cast<T>(v >= hi ? std::numeric_limits<C>::max() : static_cast<C>(v));
      } else {
        t.data<T>()[i] = static_cast<T>(static_cast<C>(v));
      }
    }
  });
  *out = t;
  return true;
}

bool decode_value(const pb::Summary::Value& v, ReadValue* r) {
  r->tag = v.tag().empty() ? v.node_name() : v.tag();
  switch (v.value_case()) {
    case pb::Summary::Value::kSimpleValue:
      r->kind = SummaryKind::kScalar;
      r->scalar = v.simple_value();
      return true;
    case pb::Summary::Value::kHisto: {
      const auto& h = v.histo();
      r->kind = SummaryKind::kHistogram;
      r->min = h.min(), r->max = h.max(), r->num = h.num(), r->sum = h.sum(),
      r->sum_squares = h.sum_squares();
      r->bucket_limit.assign(h.bucket_limit().begin(), h.bucket_limit().end());
      r->bucket.assign(h.bucket().begin(), h.bucket().end());
      return true;
    }
    case pb::Summary::Value::kImage:
      r->kind = SummaryKind::kImage;
      r->height = v.image().height(), r->width = v.image().width(),
      r->channels = v.image().colorspace();
      r->png = v.image().encoded_image_string();
      return true;
    case pb::Summary::Value::kTensor: {
      if (!decode_tensor(v.tensor(), &r->tensor)) return false;
      // TensorBoard's own writers put scalars in one-element tensors of the "scalars" plugin.
      if (v.metadata().plugin_data().plugin_name() == "scalars" && r->tensor.numel() == 1) {
        r->kind = SummaryKind::kScalar;
        r->scalar = r->tensor.item_as_double();
        r->tensor = Tensor();
        return true;
      }
      r->kind = SummaryKind::kTensor;
      return true;
    }
    default:
      return false;
  }
}
}  // namespace

std::vector<ReadEvent> read_event_file(const std::string& path, bool* complete) {
  std::ifstream f(path, std::ios::binary);
  if (!f) MYCEL_THROW(ValueError, "cannot open event file '", path, "': ", std::strerror(errno));
  const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<ReadEvent> out;
  size_t pos = 0;
  bool ok = true;
  while (pos < data.size()) {
    // A record: length (8 bytes), its CRC (4), the payload (length bytes), the payload's CRC (4).
    if (data.size() - pos < 16) {
      ok = false;
      break;
    }
    const uint64_t n = get_le(data.data() + pos, 8);
    if (get_le(data.data() + pos + 8, 4) != detail::masked_crc32c(data.data() + pos, 8) ||
        n > data.size() - pos - 16 || n > static_cast<uint64_t>(INT_MAX)) {
      ok = false;
      break;
    }
    const char* payload = data.data() + pos + 12;
    if (get_le(payload + n, 4) != detail::masked_crc32c(payload, n)) {
      ok = false;
      break;
    }
    pb::Event e;
    if (!e.ParseFromArray(payload, static_cast<int>(n))) {
      ok = false;
      break;
    }
    ReadEvent re;
    re.step = e.step();
    re.wall_time = e.wall_time();
    if (e.what_case() == pb::Event::kGraphDef) re.graph_def = e.graph_def();
    for (const auto& v : e.summary().value()) {
      ReadValue r;
      if (decode_value(v, &r)) re.values.push_back(std::move(r));
    }
    out.push_back(std::move(re));
    pos += 16 + n;
  }
  if (complete) *complete = ok;
  return out;
}

}  // namespace mycel::insight
