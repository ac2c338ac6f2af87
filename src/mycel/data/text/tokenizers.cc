// The tokenizers MindSpore runs in C++ (mindspore.dataset.text): JiebaTokenizer (jieba.h) and
// UnicodeScriptTokenizer (ICU's script property). Each takes a scalar string and gives a 1-d
// string column, plus uint32 byte offsets when with_offsets.
#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include "mycel/data/text/jieba.h"

namespace mycel::data::text {
namespace {

class JiebaTokenizer : public Transform {
 public:
  explicit JiebaTokenizer(const Params& p)
      : jieba_(JiebaDict::load(p.get_str("mp_path")), JiebaHmm::load(p.get_str("hmm_path"))),
        with_offsets_(p.get_bool("with_offsets", false)) {
    std::string mode = p.get_str("mode", "mix");
    if (mode == "mp") {
      mode_ = JiebaMode::mp;
    } else if (mode == "hmm") {
      mode_ = JiebaMode::hmm;
    } else if (mode == "mix") {
      mode_ = JiebaMode::mix;
    } else {
      MYCEL_THROW(ValueError, "JiebaTokenizer: mode must be 'mp', 'hmm' or 'mix', got '", mode,
                  "'");
    }
    auto words = p.get_strs("words", std::vector<std::string>{});
    auto freqs = p.get_ints("freqs", std::vector<int64_t>{});
    if (words.size() != freqs.size())
      MYCEL_THROW(ValueError, "JiebaTokenizer: ", words.size(), " added words but ", freqs.size(),
                  " frequencies");
    for (size_t i = 0; i < words.size(); ++i) jieba_.add_word(words[i], freqs[i]);
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    std::string s = scalar_text(in, name());
    return token_outputs(s, s.empty() ? std::vector<Span>{} : jieba_.cut(s, mode_), with_offsets_);
  }
  std::string name() const override { return "JiebaTokenizer"; }
  bool takes_strings() const override { return true; }

 private:
  Jieba jieba_;
  JiebaMode mode_ = JiebaMode::mix;
  bool with_offsets_;
};

// Splits where the ICU script of the code point changes or whitespace starts or ends;
// whitespace tokens are dropped unless keep_whitespace (MindSpore's rule, as TF Text's).
class UnicodeScriptTokenizer : public Transform {
 public:
  explicit UnicodeScriptTokenizer(const Params& p)
      : keep_whitespace_(p.get_bool("keep_whitespace", false)),
        with_offsets_(p.get_bool("with_offsets", false)) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    std::string s = scalar_text(in, name());
    std::vector<Span> spans;
    int last_script = USCRIPT_INVALID_CODE;
    bool was_space = false;
    uint32_t start = 0, limit = 0;
    auto flush = [&] {
      if (limit > start && (keep_whitespace_ || !was_space)) spans.push_back({start, limit});
    };
    for (const Rune& r : decode_utf8(s, name())) {
      UChar32 c = static_cast<UChar32>(r.cp);
      bool space = u_isUWhiteSpace(c);
      UErrorCode err = U_ZERO_ERROR;
      int script = uscript_getScript(c, &err);
      if (U_FAILURE(err)) script = USCRIPT_INVALID_CODE;
      if (limit > start && (script != last_script || space != was_space)) {
        flush();
        start = r.offset;
      }
      limit = r.offset + r.len;
      last_script = script;
      was_space = space;
    }
    flush();
    return token_outputs(s, spans, with_offsets_);
  }
  std::string name() const override { return "UnicodeScriptTokenizer"; }
  bool takes_strings() const override { return true; }

 private:
  bool keep_whitespace_, with_offsets_;
};

}  // namespace

MYCEL_REGISTER_DATA(text_tokenizers) {
  register_transform("JiebaTokenizer", [](const Params& p, const TransformList&) {
    return std::make_shared<JiebaTokenizer>(p);
  });
  register_transform("UnicodeScriptTokenizer", [](const Params& p, const TransformList&) {
    return std::make_shared<UnicodeScriptTokenizer>(p);
  });
}

}  // namespace mycel::data::text
