#include "mycel/core/suggest.h"

#include <algorithm>
#include <cctype>

namespace mycel {

size_t edit_distance(const std::string& a, const std::string& b) {
  // optimal string alignment: a swap of two neighbours ("scael" for "scale") costs one edit
  auto same = [&](size_t i, size_t j) {
    return std::tolower(static_cast<unsigned char>(a[i])) ==
           std::tolower(static_cast<unsigned char>(b[j]));
  };
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same(i - 1, j - 1) ? 0 : 1)});
      if (i > 1 && j > 1 && same(i - 1, j - 2) && same(i - 2, j - 1))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closest_name(const std::string& given, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = static_cast<size_t>(-1);
  for (const std::string& c : candidates) {
    size_t d = edit_distance(given, c);
    if (d < best_d) best_d = d, best = c;
  }
  // close enough: at most 40% of the longer name differs (about difflib's 0.6 cutoff)
  if (best.empty() || best_d * 5 > 2 * std::max(given.size(), best.size())) return "";
  return best;
}

std::string did_you_mean(const std::string& given, const std::vector<std::string>& candidates) {
  std::string best = closest_name(given, candidates);
  if (!best.empty()) return "; did you mean '" + best + "'?";
  if (candidates.empty() || candidates.size() > 12) return "";  // a long list does not help
  std::string all;
  for (const std::string& c : candidates) all += (all.empty() ? "" : ", ") + c;
  return "; expected one of: " + all;
}

}  // namespace mycel
