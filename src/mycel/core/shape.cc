#include "mycel/core/shape.h"

#include <algorithm>
#include <sstream>

#include "mycel/core/error.h"

namespace mycel {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  if (s.size() == 1) os << ",";
  os << ")";
  return os.str();
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      MYCEL_THROW(ShapeError, "[", op, "] shapes ", shape_str(a), " and ", shape_str(b),
                  " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op, const char* arg) {
  if (axis < -ndim || axis >= ndim)
    MYCEL_THROW(ValueError, "[", op, "] ", arg, " ", axis, " is out of range for a tensor of rank ",
                ndim, " (expected ", -ndim, " <= ", arg, " < ", ndim, ")");
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim,
                                    const std::string& op, const char* arg) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, ndim, op.c_str(), arg);
    if (std::find(out.begin(), out.end(), n) != out.end())
      MYCEL_THROW(ValueError, "[", op, "] ", arg, " contains axis ", a, " more than once");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mycel
