// "Did you mean ...?" for misspelt names in error messages (keywords, attributes, op names):
// the closest candidate by case-insensitive edit distance, as Python's difflib would pick it.
#pragma once
#include <string>
#include <vector>

namespace mycel {

/// Edit distance between a and b, ignoring case (insert, delete, replace, swap neighbours).
size_t edit_distance(const std::string& a, const std::string& b);
/// The candidate closest to `given` if it is close enough (at most 40% of the longer name
/// differs), else "".
std::string closest_name(const std::string& given, const std::vector<std::string>& candidates);
/// "; did you mean 'x'?" for the closest candidate, else "; expected one of: a, b, c" (or "" when
/// there are none or more than 12). Same wording as python/mycel/common/suggest.py.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& candidates);

}  // namespace mycel
