// Shapes and the arithmetic on them (element counts, broadcasting, axis normalization).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mycel {

using Shape = std::vector<int64_t>;

/// Number of elements (1 for a 0-d shape).
int64_t numel(const Shape& s);
/// "(2, 3)" for error messages.
std::string shape_str(const Shape& s);
/// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
/// numpy broadcasting of a and b; throws ShapeError naming `op` if they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Maps axis in [-ndim, ndim) to [0, ndim); throws ValueError naming op and argument otherwise.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op, const char* arg = "axis");
/// Normalizes an axis list against rank (empty = all axes), sorted; rejects duplicates.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t ndim,
                                    const std::string& op, const char* arg = "axis");

}  // namespace mycel
