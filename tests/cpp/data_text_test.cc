// The C++ text tokenizers: UTF-8 decoding, the Jieba loaders' errors, Jieba's MP route against
// an enumeration of every segmentation, and the script tokenizer's splits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "mycel/data/string_tensor.h"
#include "mycel/data/text/jieba.h"

namespace mycel::data::text {
namespace {

namespace fs = std::filesystem;

fs::path write_file(const std::string& name, const std::string& body) {
  fs::path d = fs::temp_directory_path() / ("mycel_text_" + std::to_string(::getpid()));
  fs::create_directories(d);
  fs::path p = d / name;
  std::ofstream(p, std::ios::binary) << body;
  return p;
}

const char* kDict = "AB 30 n\nBC 50 n\nA 10 n\nB 40 n\nC 20 n\nABC 5 n\n";
const char* kHmm =
    "-0.3 -3.14e100 -3.14e100 -1.4\n-3.14e100 -0.5 -0.9 -3.14e100\n-0.6 -3.14e100 -3.14e100 -0.8\n"
    "-3.14e100 -0.3 -1.3 -3.14e100\n-0.7 -3.14e100 -3.14e100 -0.7\nA:-1.0,B:-2.0\nA:-2.0,B:-1.0\n"
    "A:-3.0,B:-3.0\nA:-1.5,B:-1.5\n";

TEST(DataText, DecodeUtf8) {
  auto r = decode_utf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", "t");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[1].cp, char32_t(0xE9));
  EXPECT_EQ(r[2].offset, 3u);
  EXPECT_EQ(r[3].cp, char32_t(0x1F600));
  EXPECT_EQ(r[3].len, 4u);
  for (const char* bad :
       {"\xC3", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "a\xE4\xB8"})
    EXPECT_THROW(decode_utf8(bad, "t"), ValueError) << bad;
  std::string back;
  for (const Rune& x : r) append_utf8(x.cp, back);
  EXPECT_EQ(back, "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
}

TEST(DataText, JiebaLoadersRejectMalformedFiles) {
  auto expect_error = [](const std::string& body, bool dict, const std::string& needle) {
    fs::path p = write_file(dict ? "bad.dict" : "bad.hmm", body);
    try {
      if (dict)
        JiebaDict::load(p.string());
      else
        JiebaHmm::load(p.string());
      ADD_FAILURE() << "no error for " << body;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    fs::remove(p);
  };
  expect_error("A 1 n\nB\n", true, ":2: expected 'word freq [tag]'");
  expect_error("A 1e999 n\n", true, "must be a positive number");
  expect_error("A nan n\n", true, "is not a number");
  expect_error("", true, "has no words");
  expect_error("0 0 0 0\n", false, "ends before its transition");
  expect_error(
      std::string(kHmm).substr(0, std::string(kHmm).rfind('\n', std::string(kHmm).size() - 2) + 1) +
          "A-1\n",
      false, "expected 'char:logprob'");
  EXPECT_THROW(JiebaDict::load("/nonexistent/mycel.dict"), ValueError);
}

// Every segmentation of s into dictionary words (or single characters), best score first.
double best_route(const std::string& s, const std::map<std::string, double>& w, double least) {
  double best = -INFINITY;
  const size_t n = s.size();
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    double score = 0;
    size_t start = 0;
    bool ok = true;
    for (size_t i = 1; i <= n && ok; ++i) {
      if (i < n && !(cuts & (1u << (i - 1)))) continue;
      std::string word = s.substr(start, i - start);
      auto it = w.find(word);
      if (it != w.end())
        score += it->second;
      else if (word.size() == 1)
        score += least;
      else
        ok = false;
      start = i;
    }
    if (ok) best = std::max(best, score);
  }
  return best;
}

TEST(DataText, JiebaMpIsTheBestRoute) {
  fs::path dict = write_file("tiny.dict", kDict), hmm = write_file("tiny.hmm", kHmm);
  Jieba jieba(JiebaDict::load(dict.string()), JiebaHmm::load(hmm.string()));
  std::map<std::string, double> w{{"AB", 30}, {"BC", 50}, {"A", 10},
                                  {"B", 40},  {"C", 20},  {"ABC", 5}};
  double total = 155, least = INFINITY;
  for (auto& [k, v] : w) {
    v = std::log(v / total);
    least = std::min(least, v);
  }
  for (const char* s : {"ABC", "ABCABC", "CBA", "AABBCC", "BCAB", "D", "ADBC"}) {
    auto spans = jieba.cut(s, JiebaMode::mp);
    double score = 0;
    size_t covered = 0;
    for (const Span& sp : spans) {
      std::string word = std::string(s).substr(sp.start, sp.limit - sp.start);
      EXPECT_EQ(sp.start, covered);
      covered = sp.limit;
      score += w.count(word) ? w[word] : least;
    }
    EXPECT_EQ(covered, std::string(s).size());
    EXPECT_NEAR(score, best_route(s, w, least), 1e-12) << s;
  }
  // A user word with a large frequency takes over its span.
  jieba.add_word("CA", 1000);
  auto spans = jieba.cut("BCAB", JiebaMode::mp);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[1].start, 1u);
  EXPECT_EQ(spans[1].limit, 3u);
}

TEST(DataText, UnicodeScriptTokenizerSplits) {
  auto t = make_transform("UnicodeScriptTokenizer", Params("UnicodeScriptTokenizer", {}));
  RowRng rng(0, 0);
  auto out = t->apply(
      {make_string_tensor({"abc\xCE\xB1\xCE\xB2 12!\xE4\xB8\xAD"}, {}, StringKind::text)}, rng);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(string_items(out[0]),
            (std::vector<std::string>{"abc", "\xCE\xB1\xCE\xB2", "12!", "\xE4\xB8\xAD"}));
}

}  // namespace
}  // namespace mycel::data::text
