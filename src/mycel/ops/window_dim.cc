// Sliding-window attributes, one spatial dim's size from pad_mode, and the convolution's shape
// checks (see window_dim.h).
#include "mycel/ops/window_dim.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "mycel/core/dynamic_dims.h"
#include "mycel/core/error.h"
#include "mycel/core/shape.h"
#include "mycel/ops/infer_util.h"

namespace mycel {

PadMode pad_mode(const OpSchema& op, const Attrs& a) {
  std::string s = a.get_str("pad_mode");
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (s == "valid") return PadMode::kValid;
  if (s == "same") return PadMode::kSame;
  if (s == "pad") return PadMode::kPad;
  MYCEL_THROW(ValueError, "[", op.name,
              "] attribute 'pad_mode' must be 'valid', 'same' or 'pad', got '",
              a.get_str("pad_mode"), "'");
}

namespace {

// a + b or a * b of window sizes, or a ValueError naming the op when it overflows (huge padding,
// dilation or stride must not wrap around into a plausible size).
int64_t window_math(const OpSchema& op, const char* dim, int64_t a, char how, int64_t b) {
  int64_t r;
  if (how == '+' ? __builtin_add_overflow(a, b, &r) : __builtin_mul_overflow(a, b, &r))
    MYCEL_THROW(ValueError, "[", op.name, "] the ", dim, " window sizes overflow int64 (", a, " ",
                how, " ", b, "): padding, dilation or stride is too large");
  return r;
}

}  // namespace

// Output size and padding of one spatial dim; throws if the (dilated) kernel exceeds the input.
void window_dim(const OpSchema& op, PadMode mode, const char* dim, int64_t in, int64_t k, int64_t s,
                int64_t d, int64_t& p0, int64_t& p1, int64_t& out) {
  auto add = [&](int64_t a, int64_t b) { return window_math(op, dim, a, '+', b); };
  auto mul = [&](int64_t a, int64_t b) { return window_math(op, dim, a, '*', b); };
  const int64_t ek = add(mul(d, k - 1), 1);
  if (mode == PadMode::kSame) {
    out = add(in, s - 1) / s;
    const int64_t total = std::max<int64_t>(add(mul(out - 1, s), ek) - in, 0);
    p0 = total / 2;
    p1 = total - p0;
    return;
  }
  if (mode == PadMode::kValid) p0 = p1 = 0;
  if (add(add(in, p0), p1) < ek)
    MYCEL_THROW(ShapeError, "[", op.name, "] kernel ", dim, " ", k, " (", ek,
                " with dilation) is larger than the padded input ", dim, " ", in + p0 + p1);
  out = (in + p0 + p1 - ek) / s + 1;
}

void spatial_attr(const OpSchema& op, const Attrs& a, const char* name, size_t n, int64_t lo,
                  int64_t* out) {
  const auto& v = a.get_ints(name);
  if (v.size() != 1 && v.size() != n && v.size() != n + 2)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name, "' takes 1, ", n, " or ", n + 2,
                " values, got ", v.size());
  for (size_t i = 0; i < n; ++i) {
    out[i] = v.size() == 1 ? v[0] : v[v.size() - n + i];
    if (out[i] < lo)
      MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name, "' values must be >= ", lo,
                  ", got ", shape_str(v));
  }
}

void pad_attr(const OpSchema& op, const Attrs& a, PadMode mode, size_t n, int64_t* p0,
              int64_t* p1) {
  const auto& pad = a.get_ints("pad");
  if (pad.size() != 1 && pad.size() != n && pad.size() != 2 * n)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute 'pad' takes 1, ", n, " or ", 2 * n,
                " values (", 2 * n, ": before and after each spatial dim), got ", pad.size());
  for (int64_t p : pad) {
    if (p < 0)
      MYCEL_THROW(ValueError, "[", op.name, "] attribute 'pad' values must be >= 0, got ",
                  shape_str(pad));
    if (p != 0 && mode != PadMode::kPad)
      MYCEL_THROW(ValueError, "[", op.name,
                  "] attribute 'pad' must be 0 unless pad_mode is 'pad', got ", shape_str(pad));
  }
  for (size_t i = 0; i < n; ++i) {
    p0[i] = pad.size() == 1 ? pad[0] : pad.size() == n ? pad[i] : pad[2 * i];
    p1[i] = pad.size() == 1 ? pad[0] : pad.size() == n ? pad[i] : pad[2 * i + 1];
  }
}

void check_conv_channels(const InferContext& c, const Shape& xs, const Shape& ws) {
  const std::string& op = c.op.name;
  const int64_t groups = c.attrs.get_int("groups");
  if (groups < 1)
    MYCEL_THROW(ValueError, "[", op, "] attribute 'groups' must be >= 1, got ", groups);
  if (xs[1] % groups != 0)
    MYCEL_THROW(ShapeError, "[", op, "] input 'x' shape ", shape_str(xs), " has ", xs[1],
                " channels, not divisible by groups (", groups, ")");
  if (ws[0] % groups != 0)
    MYCEL_THROW(ShapeError, "[", op, "] input 'w' shape ", shape_str(ws), " has ", ws[0],
                " output channels, not divisible by groups (", groups, ")");
  if (ws[1] * groups != xs[1])
    MYCEL_THROW(ShapeError, "[", op, "] input 'x' shape ", shape_str(xs), " and 'w' shape ",
                shape_str(ws), ": w.shape[1] * groups (", ws[1], " * ", groups,
                ") must equal the input channels x.shape[1] (", xs[1], ")");
  for (size_t i = 2; i < ws.size(); ++i)
    if (ws[i] < 1)
      MYCEL_THROW(ShapeError, "[", op, "] input 'w' shape ", shape_str(ws), " has an empty kernel");
}

void check_conv_bias(const InferContext& c, const Shape& ws) {
  if (!c.has_input(2)) return;
  check_same_dtype(c, 0, 2);
  const Shape& bs = c.in(2).shape;
  if (bs.size() != 1 || bs[0] != ws[0])
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'b' must have shape (", ws[0], ",), got ",
                shape_str(bs));
}

Shape full_shape_attr(const InferContext& c, const char* name, size_t rank, const char* dims,
                      int64_t batch) {
  const auto& v = c.attrs.get_ints(name);
  if (v.size() != rank)
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute '", name, "' must have ", rank,
                " values (", dims, "), got ", shape_str(v));
  Shape s(v.begin(), v.end());
  if (batch >= 0) s[0] = batch;
  for (int64_t x : s)
    if (x < 0)
      MYCEL_THROW(ValueError, "[", c.op.name, "] attribute '", name, "' must not be negative, got ",
                  shape_str(v));
  return s;
}

void check_conv_dout(const InferContext& c, const Shape& want, const Shape& xs, const Shape& ws,
                     const char* forward) {
  if (!shapes_agree(c.in(0).shape, want))  // a dynamic dim is checked when it runs
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dout' shape ", shape_str(c.in(0).shape),
                " must be the ", forward, " output shape ", shape_str(want), " for input shape ",
                shape_str(xs), " and weight shape ", shape_str(ws));
}

std::vector<TensorMeta> infer_conv_backprop(const InferContext& c, size_t rank, const char* dims,
                                            bool filter, ConvDyCheck check_dy) {
  check_rank(c, 0, rank, rank);
  check_rank(c, 1, rank, rank);
  check_same_dtype(c, 0, 1);
  if (filter) {
    const Shape ws = full_shape_attr(c, "filter_size", rank, dims);
    check_dy(c, c.in(1).shape, ws);
    return {{ws, c.in(0).dtype}};
  }
  const Shape xs = full_shape_attr(c, "input_size", rank, dims, c.in(0).shape[0]);
  check_dy(c, xs, c.in(1).shape);
  return {{xs, c.in(0).dtype}};
}

}  // namespace mycel
