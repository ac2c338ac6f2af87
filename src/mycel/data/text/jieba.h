// Jieba's Chinese word segmentation (the algorithm of jieba/cppjieba, which MindSpore's
// JiebaTokenizer wraps): a prefix dictionary gives each position its candidate words (a DAG),
// the maximum-probability route through it is the MP cut, an HMM over the B/E/M/S states
// (Viterbi) cuts runs the dictionary does not know, and MIX runs the HMM over the MP cut's runs of
// single characters. Dictionaries are cppjieba's text formats (docs/dataset.md).
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mycel/data/text/text_util.h"

namespace mycel::data::text {

/// A word dictionary: each word's log probability log(freq / total), and its prefixes.
class JiebaDict {
 public:
  /// Loads cppjieba's "word freq [tag]" lines; ValueError with file:line on a malformed line.
  static std::shared_ptr<const JiebaDict> load(const std::string& path);
  /// The word's log weight, or nullptr when the word is not in the dictionary.
  const double* weight(const std::string& word) const;
  /// Whether some dictionary word starts with (or is) `prefix`.
  bool has_prefix(const std::string& prefix) const { return entries_.count(prefix) != 0; }
  double freq_sum() const { return freq_sum_; }
  double min_weight() const { return min_weight_; }
  double median_weight() const { return median_weight_; }

 private:
  static std::shared_ptr<const JiebaDict> parse(const std::string& path);
  // word -> log weight; a prefix that is not itself a word maps to NaN.
  std::unordered_map<std::string, double> entries_;
  double freq_sum_ = 0, min_weight_ = 0, median_weight_ = 0;
};

/// The HMM of unknown words: start, transition and emission log probabilities of B, E, M, S.
class JiebaHmm {
 public:
  /// Loads cppjieba's hmm_model.utf8; ValueError with file:line on a malformed line.
  static std::shared_ptr<const JiebaHmm> load(const std::string& path);
  double start[4];
  double trans[4][4];
  std::unordered_map<char32_t, double> emit[4];

 private:
  static std::shared_ptr<const JiebaHmm> parse(const std::string& path);
};

enum class JiebaMode { mp, hmm, mix };

/// A segmenter over a shared dictionary and HMM plus words added by the user.
class Jieba {
 public:
  Jieba(std::shared_ptr<const JiebaDict> dict, std::shared_ptr<const JiebaHmm> hmm)
      : dict_(std::move(dict)), hmm_(std::move(hmm)) {}
  /// Adds a word with weight log(freq / total), or the dictionary's median weight when freq is
  /// 0 (cppjieba's InsertUserWord, which MindSpore's add_word calls).
  void add_word(const std::string& word, int64_t freq);
  /// The words of `text` as byte spans (separators " \t\n，。" are tokens of their own).
  std::vector<Span> cut(const std::string& text, JiebaMode mode) const;

 private:
  const double* weight(const std::string& word) const;
  bool has_prefix(const std::string& prefix) const;
  std::vector<size_t> route(const std::string& text, const Rune* r, size_t n) const;
  void cut_hmm(const Rune* r, size_t n, std::vector<Span>& out) const;
  void viterbi(const Rune* r, size_t n, std::vector<Span>& out) const;

  std::shared_ptr<const JiebaDict> dict_;
  std::shared_ptr<const JiebaHmm> hmm_;
  std::unordered_map<std::string, double> user_;  // as JiebaDict::entries_
};

}  // namespace mycel::data::text
