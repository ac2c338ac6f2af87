// Jieba segmentation: dictionary and HMM loaders, the MP route, the HMM Viterbi cut and MIX.
#include "mycel/data/text/jieba.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>

namespace mycel::data::text {
namespace {

constexpr const char* kOp = "JiebaTokenizer";
constexpr double kMinLog = -3.14e100;  // cppjieba's "impossible" log probability
constexpr size_t kMaxWordRunes = 512;  // longest dictionary word tried at one position
enum { B = 0, E = 1, M = 2, S = 3 };

std::vector<std::string> split(const std::string& s, const char* seps) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of(seps, i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// A finite number filling the whole field; ValueError naming the file and line otherwise.
double parse_number(const std::string& field, const std::string& path, int64_t line) {
  char* end = nullptr;
  double v = std::strtod(field.c_str(), &end);
  if (field.empty() || end != field.c_str() + field.size() || std::isnan(v))
    MYCEL_THROW(ValueError, kOp, ": ", path, ":", line, ": '", field, "' is not a number");
  return v;
}

std::ifstream open(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) MYCEL_THROW(ValueError, kOp, ": cannot open ", what, " '", path, "'");
  return f;
}

void strip_cr(std::string& line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.pop_back();
}

// Loaded files are shared by every tokenizer built on them while the file is unchanged.
template <class T>
std::shared_ptr<const T> cached(const std::string& path,
                                std::shared_ptr<const T> (*load)(const std::string&)) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::weak_ptr<const T>>();
  std::error_code ec;
  auto stamp = std::filesystem::last_write_time(path, ec);
  auto size = std::filesystem::file_size(path, ec);
  std::string key = path + '\0' + std::to_string(stamp.time_since_epoch().count()) + '\0' +
                    std::to_string(ec ? 0 : size);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto hit = (*cache)[key].lock()) return hit;
  }
  auto fresh = load(path);
  std::lock_guard<std::mutex> lock(mu);
  (*cache)[key] = fresh;
  return fresh;
}

// Adds word -> w and its proper prefixes (as NaN unless they are words) to a prefix map.
void insert_word(std::unordered_map<std::string, double>& m, const std::string& word, double w,
                 const std::vector<Rune>& runes) {
  for (size_t k = 0; k + 1 < runes.size(); ++k)
    m.emplace(word.substr(0, runes[k].offset + runes[k].len),
              std::numeric_limits<double>::quiet_NaN());
  m[word] = w;
}

}  // namespace

std::shared_ptr<const JiebaDict> JiebaDict::load(const std::string& path) {
  return cached<JiebaDict>(path, &JiebaDict::parse);
}

std::shared_ptr<const JiebaDict> JiebaDict::parse(const std::string& path) {
  auto f = open(path, "mp_path (the dictionary)");
  auto dict = std::make_shared<JiebaDict>();
  std::vector<std::pair<std::string, double>> words;
  std::string line;
  int64_t lineno = 0;
  double sum = 0;
  while (std::getline(f, line)) {
    ++lineno;
    strip_cr(line);
    if (line.empty()) continue;
    auto fields = split(line, " \t");
    if (fields.size() < 2 || fields.size() > 3)
      MYCEL_THROW(ValueError, kOp, ": ", path, ":", lineno, ": expected 'word freq [tag]', got '",
                  line, "'");
    double freq = parse_number(fields[1], path, lineno);
    if (!(freq > 0) || std::isinf(freq))
      MYCEL_THROW(ValueError, kOp, ": ", path, ":", lineno, ": the frequency of '", fields[0],
                  "' must be a positive number, got ", fields[1]);
    decode_utf8(fields[0], std::string(kOp) + ": " + path + ":" + std::to_string(lineno));
    words.emplace_back(std::move(fields[0]), freq);
    sum += freq;
  }
  if (words.empty()) MYCEL_THROW(ValueError, kOp, ": the dictionary '", path, "' has no words");
  std::vector<double> weights;
  weights.reserve(words.size());
  for (auto& [w, freq] : words) {
    double lw = std::log(freq / sum);
    weights.push_back(lw);
    insert_word(dict->entries_, w, lw, decode_utf8(w, kOp));
  }
  std::sort(weights.begin(), weights.end());
  dict->freq_sum_ = sum;
  dict->min_weight_ = weights.front();
  dict->median_weight_ = weights[weights.size() / 2];
  return dict;
}

const double* JiebaDict::weight(const std::string& word) const {
  auto it = entries_.find(word);
  return it == entries_.end() || std::isnan(it->second) ? nullptr : &it->second;
}

std::shared_ptr<const JiebaHmm> JiebaHmm::load(const std::string& path) {
  return cached<JiebaHmm>(path, &JiebaHmm::parse);
}

std::shared_ptr<const JiebaHmm> JiebaHmm::parse(const std::string& path) {
  auto f = open(path, "hmm_path (the HMM model)");
  auto hmm = std::make_shared<JiebaHmm>();
  std::string line;
  int64_t lineno = 0;
  // The next line that is not blank or a '#' comment; ValueError when the file ends first.
  auto next = [&](const char* what) {
    while (std::getline(f, line)) {
      ++lineno;
      strip_cr(line);
      size_t b = line.find_first_not_of(" \t");
      if (b == std::string::npos || line[b] == '#') continue;
      line = line.substr(b);
      return;
    }
    MYCEL_THROW(ValueError, kOp, ": ", path, ": the HMM model ends before its ", what);
  };
  auto row = [&](double* out, const char* what) {
    next(what);
    auto fields = split(line, " \t");
    if (fields.size() != 4)
      MYCEL_THROW(ValueError, kOp, ": ", path, ":", lineno, ": the ", what,
                  " must be 4 numbers (B E M S), got '", line, "'");
    for (int k = 0; k < 4; ++k) out[k] = parse_number(fields[k], path, lineno);
  };
  row(hmm->start, "start probabilities");
  for (int s = 0; s < 4; ++s) row(hmm->trans[s], "transition probabilities");
  static const char* kEmit[4] = {"B emissions", "E emissions", "M emissions", "S emissions"};
  for (int s = 0; s < 4; ++s) {
    next(kEmit[s]);
    for (const std::string& item : split(line, ",")) {
      size_t colon = item.rfind(':');
      std::string who = std::string(kOp) + ": " + path + ":" + std::to_string(lineno);
      if (colon == std::string::npos || colon == 0)
        MYCEL_THROW(ValueError, who, ": expected 'char:logprob', got '", item, "'");
      auto runes = decode_utf8(item.substr(0, colon), who);
      if (runes.size() != 1)
        MYCEL_THROW(ValueError, who, ": expected one character before ':', got '",
                    item.substr(0, colon), "'");
      hmm->emit[s][runes[0].cp] = parse_number(item.substr(colon + 1), path, lineno);
    }
  }
  return hmm;
}

void Jieba::add_word(const std::string& word, int64_t freq) {
  auto runes = decode_utf8(word, std::string(kOp) + ".add_word");
  if (runes.empty()) MYCEL_THROW(ValueError, kOp, ".add_word: the word must not be empty");
  if (freq < 0) MYCEL_THROW(ValueError, kOp, ".add_word: freq must be >= 0, got ", freq);
  double w =
      freq ? std::log(static_cast<double>(freq) / dict_->freq_sum()) : dict_->median_weight();
  insert_word(user_, word, w, runes);
}

const double* Jieba::weight(const std::string& word) const {
  auto it = user_.find(word);
  if (it != user_.end() && !std::isnan(it->second)) return &it->second;
  return dict_->weight(word);
}

bool Jieba::has_prefix(const std::string& prefix) const {
  return user_.count(prefix) != 0 || dict_->has_prefix(prefix);
}

// Maximum-probability route: best[i] is the best log probability of runes i..n-1; each step
// tries the words starting at i, shortest first, keeping the first best (cppjieba's order). A
// single character that is not a word weighs the dictionary's least weight. Returns the route's
// word lengths in runes.
std::vector<size_t> Jieba::route(const std::string& text, const Rune* r, size_t n) const {
  std::vector<double> best(n + 1, 0.0);
  std::vector<size_t> len(n, 1);
  for (size_t i = n; i-- > 0;) {
    best[i] = kMinLog;
    std::string frag;
    for (size_t j = i; j < n && j - i < kMaxWordRunes; ++j) {
      frag.append(text, r[j].offset, r[j].len);
      const double* w = weight(frag);
      if (w != nullptr || j == i) {
        double v = (w ? *w : dict_->min_weight()) + best[j + 1];
        if (v > best[i]) {
          best[i] = v;
          len[i] = j - i + 1;
        }
      }
      if (!has_prefix(frag)) break;
    }
  }
  std::vector<size_t> words;
  for (size_t i = 0; i < n; i += len[i]) words.push_back(len[i]);
  return words;
}

// The HMM cut: ASCII letters (then letters/digits) and numbers (digits and '.') are words of
// their own, any other ASCII character a word; runs of other characters go through Viterbi.
void Jieba::cut_hmm(const Rune* r, size_t n, std::vector<Span>& out) const {
  auto letter = [](char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto digit = [](char32_t c) { return c >= '0' && c <= '9'; };
  size_t left = 0, i = 0;
  while (i < n) {
    if (r[i].cp >= 0x80) {
      ++i;
      continue;
    }
    if (i > left) viterbi(r + left, i - left, out);
    size_t j = i + 1;
    if (letter(r[i].cp)) {
      while (j < n && (letter(r[j].cp) || digit(r[j].cp))) ++j;
    } else if (digit(r[i].cp)) {
      while (j < n && (digit(r[j].cp) || r[j].cp == '.')) ++j;
    }
    out.push_back({r[i].offset, r[j - 1].offset + r[j - 1].len});
    left = i = j;
  }
  if (n > left) viterbi(r + left, n - left, out);
}

// Viterbi over B/E/M/S; an emission the model lacks is "impossible" (kMinLog), ties keep the
// first state in B, E, M, S order, and the path must end in E or S (E on a tie).
void Jieba::viterbi(const Rune* r, size_t n, std::vector<Span>& out) const {
  auto emit = [&](int s, char32_t c) {
    auto it = hmm_->emit[s].find(c);
    return it == hmm_->emit[s].end() ? kMinLog : it->second;
  };
  std::vector<double> w(n * 4);
  std::vector<int> from(n * 4, E);
  for (int s = 0; s < 4; ++s) w[s] = hmm_->start[s] + emit(s, r[0].cp);
  for (size_t x = 1; x < n; ++x) {
    for (int s = 0; s < 4; ++s) {
      double e = emit(s, r[x].cp), bestv = kMinLog;
      for (int p = 0; p < 4; ++p) {
        double v = w[(x - 1) * 4 + p] + hmm_->trans[p][s] + e;
        if (v > bestv) {
          bestv = v;
          from[x * 4 + s] = p;
        }
      }
      w[x * 4 + s] = bestv;
    }
  }
  std::vector<int> state(n);
  int s = w[(n - 1) * 4 + E] >= w[(n - 1) * 4 + S] ? E : S;
  for (size_t x = n; x-- > 0;) {
    state[x] = s;
    s = from[x * 4 + s];
  }
  size_t start = 0;
  for (size_t x = 0; x < n; ++x) {
    if (state[x] == E || state[x] == S) {
      out.push_back({r[start].offset, r[x].offset + r[x].len});
      start = x + 1;
    }
  }
  if (start < n) out.push_back({r[start].offset, r[n - 1].offset + r[n - 1].len});
}

std::vector<Span> Jieba::cut(const std::string& text, JiebaMode mode) const {
  std::vector<Rune> runes = decode_utf8(text, kOp);
  std::vector<Span> out;
  auto separator = [](char32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == U'\uFF0C' || c == U'\u3002';
  };
  size_t i = 0, n = runes.size();
  while (i < n) {
    if (separator(runes[i].cp)) {
      out.push_back({runes[i].offset, runes[i].offset + runes[i].len});
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && !separator(runes[j].cp)) ++j;
    const Rune* r = runes.data() + i;
    size_t len = j - i;
    if (mode == JiebaMode::hmm) {
      cut_hmm(r, len, out);
      i = j;
      continue;
    }
    size_t pos = 0;
    std::vector<size_t> words = route(text, r, len);
    for (size_t k = 0; k < words.size();) {
      if (mode == JiebaMode::mp || words[k] > 1) {
        const Rune& last = r[pos + words[k] - 1];
        out.push_back({r[pos].offset, last.offset + last.len});
        pos += words[k++];
        continue;
      }
      // MIX: a run of single characters is cut again by the HMM.
      size_t run = pos;
      for (; k < words.size() && words[k] == 1; ++k) ++pos;
      cut_hmm(r + run, pos - run, out);
    }
    i = j;
  }
  return out;
}

}  // namespace mycel::data::text
