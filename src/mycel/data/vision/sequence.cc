// Array transforms of mycel.dataset.transforms (MindSpore's Slice, Concatenate, Mask, PadEnd):
// dtype-agnostic copies of elements (bytes of the element size) for the shape changes, and
// comparisons in double for Mask. Slice, Concatenate and Mask also take string columns
// (data/string_tensor.h): Slice selects along the string dimensions, Concatenate adds strings,
// Mask compares strings bytewise (UTF-8 order is code point order).
#include <climits>
#include <cstring>
#include <functional>

#include "mycel/data/string_tensor.h"
#include "mycel/data/vision/image.h"

namespace mycel::data::vision {
namespace {

constexpr int64_t kNone = INT64_MIN;  // an omitted slice bound (Python None)

// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// out[i...] = in[idx[0][i0], idx[1][i1], ...]: a gather of one index list per dimension.
Tensor gather_dims(const Tensor& x, const std::vector<std::vector<int64_t>>& idx) {
  Shape out_shape;
  for (const auto& v : idx) out_shape.push_back(static_cast<int64_t>(v.size()));
  Tensor out = Tensor::empty(out_shape, x.dtype());
  const int64_t n = out.numel(), es = static_cast<int64_t>(itemsize(x.dtype()));
  const auto in_st = strides_of(x.shape());
  const auto* src = static_cast<const char*>(x.data());
  auto* dst = static_cast<char*>(out.data());
  std::vector<int64_t> pos(out_shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < pos.size(); ++d) off += idx[d][pos[d]] * in_st[d];
    std::memcpy(dst + k * es, src + off * es, es);
    for (int64_t d = static_cast<int64_t>(pos.size()) - 1; d >= 0; --d) {
      if (++pos[d] < out_shape[d]) break;
      pos[d] = 0;
    }
  }
  return out;
}

// One dimension's indices from a spec: kind 0 all, 1 one index, 2 slice(start, stop, step),
// 3 a list of indices (the next `count` values).
std::vector<int64_t> dim_indices(const std::vector<int64_t>& spec, size_t* at, int64_t n,
                                 int64_t dim) {
  int64_t kind = spec.at((*at)++);
  std::vector<int64_t> out;
  auto check = [&](int64_t i) {
    int64_t j = i < 0 ? i + n : i;
    if (j < 0 || j >= n)
      MYCEL_THROW(IndexError, "[Slice] index ", i, " is out of range for dimension ", dim,
                  " of size ", n);
    return j;
  };
  if (kind == 0) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  } else if (kind == 1) {
    out.push_back(check(spec.at((*at)++)));
  } else if (kind == 2) {
    int64_t start = spec.at((*at)++), stop = spec.at((*at)++), step = spec.at((*at)++);
    if (step == kNone) step = 1;
    if (step == 0) MYCEL_THROW(ValueError, "[Slice] slice step must not be zero");
    // Python's slice.indices: clamp the bounds into the dimension.
    auto clamp = [&](int64_t v, int64_t dflt) {
      if (v == kNone) return dflt;
      if (v < 0) v += n;
      return step > 0 ? std::min(std::max(v, int64_t{0}), n)
                      : std::min(std::max(v, int64_t{-1}), n - 1);
    };
    int64_t b = clamp(start, step > 0 ? 0 : n - 1), e = clamp(stop, step > 0 ? n : -1);
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  } else {
    int64_t count = spec.at((*at)++);
    for (int64_t k = 0; k < count; ++k) out.push_back(check(spec.at((*at)++)));
  }
  return out;
}

// A transform applied to each input column that also takes string columns.
class ArrayFn : public Transform {
 public:
  using Fn = std::function<Tensor(const Tensor&)>;
  ArrayFn(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    if (in.empty()) MYCEL_THROW(ValueError, "[", name_, "] expected at least one input column");
    std::vector<Tensor> out;
    for (const Tensor& t : in) out.push_back(fn_(t));
    return out;
  }
  std::string name() const override { return name_; }
  bool takes_strings() const override { return true; }

 private:
  std::string name_;
  Fn fn_;
};

bool compare(const std::string& op, int cmp) {
  return op == "EQ"   ? cmp == 0
         : op == "NE" ? cmp != 0
         : op == "GT" ? cmp > 0
         : op == "GE" ? cmp >= 0
         : op == "LT" ? cmp < 0
                      : cmp <= 0;
}

Tensor values_like(const std::vector<double>& v, DType dt) {
  Tensor t = Tensor::empty(Shape{static_cast<int64_t>(v.size())}, dt);
  convert_elements(v.data(), DType::float64, t.data(), dt, static_cast<int64_t>(v.size()));
  return t;
}

}  // namespace

MYCEL_REGISTER_DATA(sequence) {
  register_transform("Slice", [](const Params& p, const TransformList&) {
    std::vector<int64_t> spec = p.get_ints("spec");
    int64_t dims = p.get_int("dims");
    return std::make_shared<ArrayFn>("Slice", [spec, dims](const Tensor& x) {
      // A string tensor's last dimension holds the bytes of each string: never sliced.
      auto kind = string_kind(x);
      const int64_t rank = kind ? x.ndim() - 1 : x.ndim();
      if (dims > rank)
        MYCEL_THROW(ValueError, "[Slice] ", dims, " slices given for a tensor of rank ", rank, " ",
                    shape_str(kind ? string_shape(x) : x.shape()));
      std::vector<std::vector<int64_t>> idx;
      size_t at = 0;
      for (int64_t d = 0; d < x.ndim(); ++d) {
        if (d < dims)
          idx.push_back(dim_indices(spec, &at, x.dim(d), d));
        else {
          std::vector<int64_t> all(static_cast<size_t>(x.dim(d)));
          for (int64_t i = 0; i < x.dim(d); ++i) all[i] = i;
          idx.push_back(all);
        }
      }
      Tensor out = gather_dims(x, idx);
      return kind ? tag_string_tensor(out, *kind) : out;
    });
  });
  register_transform("Concatenate", [](const Params& p, const TransformList&) {
    int64_t axis = p.get_int("axis", 0);
    std::vector<double> pre = p.get_floats("prepend", std::vector<double>{});
    std::vector<double> app = p.get_floats("append", std::vector<double>{});
    auto pre_s = p.get_strs("prepend_strs", std::vector<std::string>{});
    auto app_s = p.get_strs("append_strs", std::vector<std::string>{});
    bool strs = p.get_bool("strings", false);
    return std::make_shared<ArrayFn>("Concatenate", [=](const Tensor& x) {
      auto kind = string_kind(x);
      Shape shape = kind ? string_shape(x) : x.shape();
      if (shape.size() != 1)
        MYCEL_THROW(ValueError,
                    "[Concatenate] only 1-d tensors are supported (as MindSpore), got shape ",
                    shape_str(shape));
      if (axis != 0 && axis != -1)
        MYCEL_THROW(ValueError, "[Concatenate] axis must be 0 or -1, got ", axis);
      if (kind.has_value() != strs && (!pre.empty() || !app.empty() || strs))
        MYCEL_THROW(TypeError, "[Concatenate] prepend/append hold ", strs ? "strings" : "numbers",
                    " but the column holds ", kind ? "strings" : "numbers");
      if (kind) {
        std::vector<std::string> all = pre_s;
        for (auto& v : string_items(x)) all.push_back(std::move(v));
        all.insert(all.end(), app_s.begin(), app_s.end());
        return make_string_tensor(all, {static_cast<int64_t>(all.size())}, *kind);
      }
      Tensor a = values_like(pre, x.dtype()), b = values_like(app, x.dtype());
      const int64_t es = static_cast<int64_t>(itemsize(x.dtype()));
      Tensor out = Tensor::empty(Shape{a.numel() + x.numel() + b.numel()}, x.dtype());
      char* dst = static_cast<char*>(out.data());
      std::memcpy(dst, a.data(), a.numel() * es);
      std::memcpy(dst + a.numel() * es, x.data(), x.numel() * es);
      std::memcpy(dst + (a.numel() + x.numel()) * es, b.data(), b.numel() * es);
      return out;
    });
  });
  register_transform("Mask", [](const Params& p, const TransformList&) {
    std::string op = p.get_str("operator");
    bool text = p.has("constant_str");
    double c = text ? 0.0 : p.get_float("constant");
    std::string cs = text ? p.get_str("constant_str") : std::string();
    DType to = p.get_dtype("dtype", DType::bool_);
    if (op != "EQ" && op != "NE" && op != "GT" && op != "GE" && op != "LT" && op != "LE")
      MYCEL_THROW(ValueError, "[Mask] operator must be one of EQ, NE, GT, GE, LT, LE, got '", op,
                  "'");
    return std::make_shared<ArrayFn>("Mask", [op, c, cs, text, to](const Tensor& x) {
      auto kind = string_kind(x);
      if (kind.has_value() != text)
        MYCEL_THROW(TypeError, "[Mask] the constant is ", text ? "a string" : "a number",
                    " but the column holds ", kind ? "strings" : "numbers");
      if (kind) {
        std::vector<std::string> items = string_items(x);
        std::vector<double> r(items.size());
        for (size_t i = 0; i < items.size(); ++i) r[i] = compare(op, items[i].compare(cs));
        Tensor out = Tensor::empty(string_shape(x), to);
        convert_elements(r.data(), DType::float64, out.data(), to, out.numel());
        return out;
      }
      Tensor v = x.to(DType::float64);
      const double* pv = v.data<double>();
      std::vector<double> r(static_cast<size_t>(x.numel()));
      for (int64_t i = 0; i < x.numel(); ++i) {
        double a = pv[i];
        bool t = op == "EQ"   ? a == c
                 : op == "NE" ? a != c
                 : op == "GT" ? a > c
                 : op == "GE" ? a >= c
                 : op == "LT" ? a < c
                              : a <= c;
        r[i] = t ? 1.0 : 0.0;
      }
      Tensor out = Tensor::empty(x.shape(), to);
      convert_elements(r.data(), DType::float64, out.data(), to, x.numel());
      return out;
    });
  });
  register_transform("PadEnd", [](const Params& p, const TransformList&) {
    std::vector<int64_t> pad_shape = p.get_ints("pad_shape");
    double value = p.get_float("pad_value", 0.0);
    for (int64_t d : pad_shape)
      if (d < 0) MYCEL_THROW(ValueError, "[PadEnd] pad_shape must not be negative, got ", d);
    return image_fn("PadEnd", false, [pad_shape, value](const Tensor& x, RowRng&) {
      if (static_cast<int64_t>(pad_shape.size()) != x.ndim())
        MYCEL_THROW(ValueError, "[PadEnd] pad_shape ",
                    shape_str(Shape(pad_shape.begin(), pad_shape.end())),
                    " must have the rank of the input ", shape_str(x.shape()));
      // The output: pad_value everywhere, then the input's overlap copied in (a larger input is
      // cut).
      Shape out_shape(pad_shape.begin(), pad_shape.end());
      Tensor out = Tensor::empty(out_shape, x.dtype());
      const int64_t n = out.numel(), es = static_cast<int64_t>(itemsize(x.dtype()));
      Tensor fill = values_like({value}, x.dtype());
      char* dst = static_cast<char*>(out.data());
      for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * es, fill.data(), es);
      const auto in_st = strides_of(x.shape());
      const auto* src = static_cast<const char*>(x.data());
      std::vector<int64_t> pos(out_shape.size(), 0);
      for (int64_t k = 0; k < n; ++k) {
        bool inside = true;
        int64_t off = 0;
        for (size_t d = 0; d < pos.size(); ++d) {
          inside &= pos[d] < x.dim(static_cast<int64_t>(d));
          off += pos[d] * in_st[d];
        }
        if (inside) std::memcpy(dst + k * es, src + off * es, es);
        for (int64_t d = static_cast<int64_t>(pos.size()) - 1; d >= 0; --d) {
          if (++pos[d] < out_shape[d]) break;
          pos[d] = 0;
        }
      }
      return out;
    });
  });
}

}  // namespace mycel::data::vision
