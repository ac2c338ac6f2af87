// One spatial dim of a sliding window from pad_mode (see window_dim.h).
#include "mycel/ops/window_dim.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "mycel/core/error.h"
#include "mycel/core/shape.h"

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

}  // namespace mycel
