// numpy's array printing (numpy/_core/arrayprint.py with its default options) re-done in C++:
// digits come from std::to_chars (shortest round-trip, or correctly rounded to a precision),
// FloatFormat picks one layout per array the way numpy's FloatingFormat does, and ArrayWriter
// lays out brackets, separators, "..." and line wraps the way numpy's _formatArray does.
#include "mycel/core/tensor_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mycel {
namespace {

// np.get_printoptions() defaults.
constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;  // more elements than this: show kEdgeItems per edge and "..."
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 75;

// ---- one number ----

/// value = ±0.digits × 10^point; digits has no leading or trailing zeros ("0" for zero).
struct Decimal {
  bool neg = false;
  std::string digits = "0";
  int point = 1;
};

/// Reads what std::to_chars writes: "-1.25e-03", "0.0010", "12".
Decimal parse(std::string_view s) {
  Decimal d;
  d.digits.clear();
  d.point = 0;
  size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    d.neg = true;
    ++i;
  }
  bool after_dot = false;
  for (; i < s.size() && s[i] != 'e'; ++i) {
    if (s[i] == '.') {
      after_dot = true;
    } else if (d.digits.empty() && s[i] == '0') {
      d.point -= after_dot;  // a leading zero
    } else {
      d.digits += s[i];
      d.point += !after_dot;
    }
  }
  if (i < s.size()) d.point += std::atoi(std::string(s.substr(i + 1)).c_str());  // "e-03"
  while (!d.digits.empty() && d.digits.back() == '0') d.digits.pop_back();
  if (d.digits.empty()) {
    d.digits = "0";
    d.point = 1;
  }
  return d;
}

template <class V, class... Format>
Decimal to_decimal(V v, Format... format) {
  char buf[400];  // room for any double in fixed notation with kPrecision decimals
  auto r = std::to_chars(buf, buf + sizeof buf, v, format...);
  return parse({buf, static_cast<size_t>(r.ptr - buf)});
}

/// The fewest digits that read back as h, the closest to h among those (what numpy's Dragon4
/// gives): tries the n-digit decimals around h for n = 1, 2, ...
Decimal shortest_half(Half h) {
  double x = std::fabs(static_cast<float>(h));
  for (int n = 1;; ++n) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific, n - 1);
    std::string s(buf, r.ptr);  // "d.ddde+XX": the nearest n-digit decimal, m × 10^e
    size_t at = s.find('e');
    std::string mantissa = s.substr(0, at);
    mantissa.erase(std::remove(mantissa.begin(), mantissa.end(), '.'), mantissa.end());
    long long m = std::atoll(mantissa.c_str());
    int e = std::atoi(s.c_str() + at + 1) - (n - 1);
    for (long long c : {m, m - 1, m + 1}) {
      std::string text = std::to_string(c) + "e" + std::to_string(e);
      double y = std::strtod(text.c_str(), nullptr);
      if (Half(static_cast<float>(y)).bits == Half(static_cast<float>(x)).bits) {
        Decimal d = parse(text);
        d.neg = std::signbit(static_cast<float>(h));
        return d;
      }
    }
  }
}

/// The shortest digits that read back as v in v's own precision.
template <class T>
Decimal shortest(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return shortest_half(v);
  else
    return to_decimal(static_cast<compute_t<T>>(v), std::chars_format::scientific);
}

/// v's digits for positional notation: shortest, or rounded to `precision` decimals if longer.
template <class T>
Decimal positional_digits(T v, int precision) {
  Decimal d = shortest(v);
  if (precision >= 0 && static_cast<int>(d.digits.size()) - d.point > precision)
    d = to_decimal(static_cast<double>(v), std::chars_format::fixed, precision);
  return d;
}

/// v's digits for scientific notation: shortest, or rounded to 1 + `precision` digits if longer.
template <class T>
Decimal scientific_digits(T v, int precision) {
  Decimal d = shortest(v);
  if (precision >= 0 && static_cast<int>(d.digits.size()) - 1 > precision)
    d = to_decimal(static_cast<double>(v), std::chars_format::scientific, precision);
  return d;
}

std::string padded(std::string s, int width) {
  if (static_cast<int>(s.size()) < width) s.insert(0, width - s.size(), ' ');
  return s;
}

/// The integer part (with the sign) and the fraction of d written positionally.
std::pair<std::string, std::string> positional_parts(const Decimal& d) {
  int n = static_cast<int>(d.digits.size());
  std::string ip, fp;
  if (d.point <= 0) {
    ip = "0";
    fp = std::string(-d.point, '0') + d.digits;
  } else if (d.point >= n) {
    ip = d.digits + std::string(d.point - n, '0');
  } else {
    ip = d.digits.substr(0, d.point);
    fp = d.digits.substr(d.point);
  }
  return {(d.neg ? "-" : "") + ip, fp};
}

/// "12.5": pad_left/pad_right pad with spaces to that many characters before/after the point;
/// one_zero writes "1.0" where numpy's arrays write "1.".
std::string positional(const Decimal& d, int pad_left, int pad_right, bool one_zero) {
  auto [ip, fp] = positional_parts(d);
  if (fp.empty() && one_zero) fp = "0";
  std::string s = padded(ip, pad_left) + "." + fp;
  if (static_cast<int>(fp.size()) < pad_right) s.append(pad_right - fp.size(), ' ');
  return s;
}

int exponent_digits(const Decimal& d) {
  return std::max<int>(2, static_cast<int>(std::to_string(std::abs(d.point - 1)).size()));
}

/// "1.25e-03": the fraction padded with zeros to min_digits, the exponent to exp_digits (at
/// least 2); point=false drops a point with no digits after it ("1e+20").
std::string scientific(const Decimal& d, int min_digits, bool point, int pad_left, int exp_digits) {
  std::string ip = (d.neg ? "-" : "") + d.digits.substr(0, 1), fp = d.digits.substr(1);
  if (static_cast<int>(fp.size()) < min_digits) fp.append(min_digits - fp.size(), '0');
  int e = d.point - 1;
  std::string es = std::to_string(std::abs(e));
  int width = std::max(2, exp_digits);
  if (static_cast<int>(es.size()) < width) es.insert(0, width - es.size(), '0');
  return padded(ip, pad_left) + (point || !fp.empty() ? "." + fp : "") + (e < 0 ? "e-" : "e+") + es;
}

/// d rounded to T as numpy rounds a Python float compared with a T value (NEP 50).
template <class T>
double as_type(double d) {
  return static_cast<double>(static_cast<T>(static_cast<compute_t<T>>(d)));
}

/// A 0-d float as numpy's str(scalar) writes it (Python's repr for float64).
template <class T>
std::string scalar_str(T v) {
  double x = static_cast<double>(v), a = std::fabs(x);
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  double max_positional = std::is_same_v<T, Half> ? 1e3 : std::is_same_v<T, float> ? 1e6 : 1e16;
  if (a == 0 || (a >= 1e-4 && a < max_positional)) return positional(shortest(v), 0, 0, true);
  return scientific(shortest(v), 0, false, 0, 0);
}

// ---- one array's element format ----

/// numpy's FloatingFormat with the default options (floatmode "maxprec", precision 8, sign "-"):
/// one notation and one width for all the elements shown.
template <class T>
class FloatFormat {
 public:
  explicit FloatFormat(const std::vector<T>& shown) {
    std::vector<T> finite;
    bool neg_inf = false;
    double lo = INFINITY, hi = 0;
    // 10^min(8, decimal digits of T): larger values switch the array to scientific notation
    const double max_positional = std::is_same_v<T, Half>    ? 1e3
                                  : std::is_same_v<T, float> ? 1e6
                                                             : 1e8;
    for (T v : shown) {
      double x = static_cast<double>(v);
      if (!std::isfinite(x)) {
        neg_inf |= x < 0;
        continue;
      }
      finite.push_back(v);
      if (x != 0) {
        lo = std::min(lo, std::fabs(x));
        hi = std::max(hi, std::fabs(x));
      }
    }
    if (hi > 0) {
      double ratio = hi / lo;
      if (ratio < 2000) ratio = as_type<T>(ratio);  // the division happens in T
      exp_ = hi >= max_positional || lo < as_type<T>(1e-4) || ratio > 1000;
    }
    int exp_size = -1;
    for (T v : finite) {
      if (exp_) {
        Decimal d = scientific_digits(v, kPrecision);
        pad_left_ = std::max(pad_left_, 1 + d.neg);
        precision_ = std::max(precision_, static_cast<int>(d.digits.size()) - 1);
        exp_size = std::max(exp_size, exponent_digits(d));
      } else {
        auto [ip, fp] = positional_parts(positional_digits(v, kPrecision));
        pad_left_ = std::max(pad_left_, static_cast<int>(ip.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(fp.size()));
      }
    }
    if (exp_) {
      exp_size_ = exp_size;
      pad_right_ = exp_size + 2 + precision_;
    } else {
      precision_ = kPrecision;
    }
    if (finite.size() != shown.size()) {  // room for "nan", "inf", "-inf"
      int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + neg_inf - offset});
    }
  }

  std::string operator()(T v) const {
    double x = static_cast<double>(v);
    if (!std::isfinite(x))
      return padded(std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf", pad_left_ + pad_right_ + 1);
    if (exp_) {  // every element with precision_ digits: the shorter ones get more real digits
      Decimal d = scientific_digits(v, precision_);
      if (static_cast<int>(d.digits.size()) - 1 < precision_)
        d = to_decimal(static_cast<double>(v), std::chars_format::scientific, precision_);
      return scientific(d, precision_, true, pad_left_, exp_size_);
    }
    return positional(positional_digits(v, precision_), pad_left_, pad_right_, false);
  }

 private:
  bool exp_ = false;
  int precision_ = 0;  // scientific: the most fraction digits any element needs
  int pad_left_ = 0, pad_right_ = 0, exp_size_ = -1;
};

using ElementFn = std::function<std::string(int64_t)>;  // flat index -> text

/// The format of t's elements, fitted (widths, notation) to the elements at flat indices `shown`.
ElementFn element_format(const Tensor& t, const std::vector<int64_t>& shown) {
  return visit_any_dtype(t.dtype(), [&](auto tag) -> ElementFn {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      return [p](int64_t i) { return std::string(p[i] ? " True" : "False"); };
    } else if constexpr (is_complex_v<T>) {
      // numpy's "1.+2.j": real and imaginary parts each fitted like a float array.
      using V = typename T::value_type;
      std::vector<V> re, im;
      for (int64_t i : shown) re.push_back(p[i].real()), im.push_back(std::abs(p[i].imag()));
      return [p, fr = FloatFormat<V>(re), fi = FloatFormat<V>(im)](int64_t i) {
        std::string b = fi(std::abs(p[i].imag()));
        b.erase(0, b.find_first_not_of(' '));
        return fr(p[i].real()) + (std::signbit(p[i].imag()) ? "-" : "+") + b + "j";
      };
    } else if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, uint8_t>) {
      auto text = [p](int64_t i) { return std::to_string(static_cast<uint64_t>(p[i])); };
      int width = 0;
      for (int64_t i : shown) width = std::max(width, static_cast<int>(text(i).size()));
      return [text, width](int64_t i) { return padded(text(i), width); };
    } else if constexpr (std::is_integral_v<T>) {
      auto text = [p](int64_t i) { return std::to_string(static_cast<int64_t>(p[i])); };
      int width = 0;
      for (int64_t i : shown) width = std::max(width, static_cast<int>(text(i).size()));
      return [text, width](int64_t i) { return padded(text(i), width); };
    } else {
      std::vector<T> values;
      for (int64_t i : shown) values.push_back(p[i]);
      return [p, f = FloatFormat<T>(values)](int64_t i) { return f(p[i]); };
    }
  });
}

// ---- layout ----

/// numpy's _formatArray: nested brackets, `sep` between elements, rows wrapped to kLineWidth
/// with `prefix` (what precedes the array on its first line) worth of indent, "..." for the
/// middle of a dimension longer than 2 * kEdgeItems when summarizing.
class ArrayWriter {
 public:
  ArrayWriter(const Tensor& t, std::string sep, bool summarize)
      : shape_(t.shape()),
        strides_(contiguous_strides(t.shape())),
        sep_(std::move(sep)),
        summarize_(summarize) {}

  /// Flat indices of the elements shown, in order.
  void collect(size_t axis, int64_t offset, std::vector<int64_t>& out) const {
    if (axis == shape_.size()) return out.push_back(offset);
    for (int64_t i : rows(axis))
      if (i >= 0) collect(axis + 1, offset + i * strides_[axis], out);
  }

  std::string write(const ElementFn& element, const std::string& indent) {
    element_ = &element;
    return recurse(0, 0, indent, kLineWidth);
  }

 private:
  /// The indices shown along `axis`; -1 marks the "...".
  std::vector<int64_t> rows(size_t axis) const {
    int64_t n = shape_[axis];
    std::vector<int64_t> r;
    bool cut = summarize_ && 2 * kEdgeItems < n;
    for (int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdgeItems) {
        r.push_back(-1);
        i = n - kEdgeItems - 1;
        continue;
      }
      r.push_back(i);
    }
    return r;
  }

  static std::string rstrip(std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }

  // numpy's _extendLine: start a new line when `word` would pass `width` (and that helps).
  static void extend(std::string& s, std::string& line, const std::string& word, int width,
                     const std::string& indent) {
    if (line.size() + word.size() > static_cast<size_t>(width) && line.size() > indent.size()) {
      s += rstrip(line) + "\n";
      line = indent;
    }
    line += word;
  }

  std::string recurse(size_t axis, int64_t offset, const std::string& indent, int width) {
    if (axis == shape_.size()) return (*element_)(offset);
    std::string s, next_indent = indent + " ";
    std::vector<int64_t> idx = rows(axis);
    auto item = [&](int64_t i) {
      return i < 0 ? std::string("...")
                   : recurse(axis + 1, offset + i * strides_[axis], next_indent, width - 1);
    };
    if (axis + 1 == shape_.size()) {  // a row: elements wrapped to the line width
      int elem_width = width - std::max<int>(rstrip(sep_).size(), 1);
      std::string line = indent;
      for (size_t k = 0; k < idx.size(); ++k) {
        extend(s, line, item(idx[k]), elem_width, indent);
        if (k + 1 < idx.size()) line += sep_;
      }
      s += line;
    } else {  // rows of rows: one line between rows, one more per extra dimension
      std::string line_sep = rstrip(sep_) + std::string(shape_.size() - axis - 1, '\n');
      for (size_t k = 0; k < idx.size(); ++k)
        s += indent + item(idx[k]) + (k + 1 < idx.size() ? line_sep : "");
    }
    return "[" + s.substr(indent.size()) + "]";
  }

  Shape shape_;
  std::vector<int64_t> strides_;
  std::string sep_;
  bool summarize_;
  const ElementFn* element_ = nullptr;
};

/// np.array2string(t, separator=sep, prefix=prefix) for t with at least one dimension.
std::string array_string(const Tensor& t, const std::string& sep, const std::string& prefix) {
  if (t.numel() == 0) return "[]";
  ArrayWriter w(t, sep, t.numel() > kThreshold);
  std::vector<int64_t> shown;
  w.collect(0, 0, shown);
  return w.write(element_format(t, shown), std::string(1 + prefix.size(), ' '));
}

/// A 0-d tensor's element as Python's str() of the numpy scalar (or of .item() if as_python).
std::string scalar_string(const Tensor& t, bool as_python) {
  return visit_any_dtype(t.dtype(), [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    T v = *t.data<T>();
    if constexpr (std::is_same_v<T, bool>)
      return v ? "True" : "False";
    else if constexpr (is_complex_v<T>)  // Python's "(1+2j)"
      return "(" + format_float(static_cast<double>(v.real())) +
             (std::signbit(v.imag()) ? "-" : "+") +
             format_float(std::abs(static_cast<double>(v.imag()))) + "j)";
    else if constexpr (std::is_unsigned_v<T>)
      return std::to_string(static_cast<uint64_t>(v));
    else if constexpr (std::is_integral_v<T>)
      return std::to_string(static_cast<int64_t>(v));
    else
      return as_python ? format_float(static_cast<double>(v)) : scalar_str(v);
  });
}

/// Tensor.asnumpy() widens bfloat16 to float32; print what eager code sees.
Tensor as_printed(const Tensor& t) {
  return t.dtype() == DType::bfloat16 ? t.to(DType::float32) : t;
}

}  // namespace

std::string format_values(const Tensor& t0) {
  Tensor t = as_printed(t0);
  return t.ndim() == 0 ? scalar_string(t, false) : array_string(t, " ", "");
}

std::string format_repr(const Tensor& t0) {
  Tensor t = as_printed(t0);
  std::string dtype = dtype_name(t0.dtype());
  dtype[0] = static_cast<char>(std::toupper(dtype[0]));  // MindSpore's spelling: Float32, Bool
  std::string body = t.ndim() == 0 ? scalar_string(t, true) : array_string(t, ", ", "Tensor(");
  return "Tensor(" + body + ", dtype=" + dtype + ")";
}

std::string format_float(double v) { return scalar_str(v); }

}  // namespace mycel
