// The text transforms MindSpore runs on ICU (mindspore.dataset.text): RegexTokenizer and
// RegexReplace with ICU's regular-expression syntax (\p{...} properties, $n in replacements),
// and WhitespaceTokenizer on ICU's White_Space property. The patterns are compiled once; a
// matcher is made per call, since an ICU matcher holds its position and the map op runs the same
// transform on several workers at once.
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>

#include <memory>

#include "mycel/data/string_tensor.h"
#include "mycel/data/text/text_util.h"

namespace mycel::data::text {
namespace {

// A UTF-8 view of s for ICU: native indexes are byte offsets into s, which the offsets need.
struct Utf8Text {
  explicit Utf8Text(const std::string& s) {
    UErrorCode status = U_ZERO_ERROR;
    text = utext_openUTF8(nullptr, s.data(), static_cast<int64_t>(s.size()), &status);
    if (U_FAILURE(status)) MYCEL_THROW(RuntimeError, "ICU: utext_openUTF8: ", u_errorName(status));
  }
  ~Utf8Text() { utext_close(text); }
  Utf8Text(const Utf8Text&) = delete;
  Utf8Text& operator=(const Utf8Text&) = delete;
  UText* text;
};

std::unique_ptr<icu::RegexPattern> compile(const std::string& op, const std::string& arg,
                                           const std::string& pattern) {
  decode_utf8(pattern, op + ": " + arg);
  UParseError where{};
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexPattern> re(
      icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(pattern), 0, where, status));
  if (U_FAILURE(status))
    MYCEL_THROW(ValueError, op, ": ", arg, " '", pattern,
                "' is not a valid ICU regular expression (", u_errorName(status), " at offset ",
                where.offset, ")");
  return re;
}

std::unique_ptr<icu::RegexMatcher> matcher(const icu::RegexPattern& re, const std::string& op) {
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(re.matcher(status));
  if (U_FAILURE(status)) MYCEL_THROW(RuntimeError, op, ": ICU matcher: ", u_errorName(status));
  return m;
}

void check(UErrorCode status, const std::string& op, const char* what) {
  if (U_FAILURE(status))
    MYCEL_THROW(ValueError, op, ": ", what, " failed (", u_errorName(status), ")");
}

// Splits at the matches of delim_pattern; a delimiter that keep_delim_pattern matches as a whole
// is a token too. An empty match splits without a delimiter token (MindSpore's rule).
class RegexTokenizer : public Transform {
 public:
  explicit RegexTokenizer(const Params& p)
      : delim_(compile(name(), "delim_pattern", p.get_str("delim_pattern"))),
        with_offsets_(p.get_bool("with_offsets", false)) {
    std::string keep = p.get_str("keep_delim_pattern", "");
    if (!keep.empty()) keep_ = compile(name(), "keep_delim_pattern", keep);
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    const std::string s = scalar_text(in, name());
    decode_utf8(s, name());
    Utf8Text text(s);
    auto m = matcher(*delim_, name());
    auto keep = keep_ ? matcher(*keep_, name()) : nullptr;
    UErrorCode status = U_ZERO_ERROR;
    m->reset(text.text);
    std::vector<Span> spans;
    uint32_t pos = 0;
    while (m->find(status)) {
      auto start = static_cast<uint32_t>(m->start64(status));
      auto end = static_cast<uint32_t>(m->end64(status));
      check(status, name(), "matching delim_pattern");
      if (start > pos) spans.push_back({pos, start});
      if (keep && end > start) {
        std::string delim = s.substr(start, end - start);
        Utf8Text delim_text(delim);
        keep->reset(delim_text.text);
        if (keep->matches(status)) spans.push_back({start, end});
        check(status, name(), "matching keep_delim_pattern");
      }
      pos = end;
    }
    check(status, name(), "matching delim_pattern");
    if (pos < s.size()) spans.push_back({pos, static_cast<uint32_t>(s.size())});
    return token_outputs(s, spans, with_offsets_);
  }
  std::string name() const override { return "RegexTokenizer"; }
  bool takes_strings() const override { return true; }

 private:
  std::unique_ptr<icu::RegexPattern> delim_, keep_;
  bool with_offsets_;
};

// Each string of a text column of any shape with the matches of pattern replaced by replace
// (ICU's replacement syntax: $n and ${name} for groups, \ escapes), all or the first one.
class RegexReplace : public Transform {
 public:
  explicit RegexReplace(const Params& p)
      : pattern_(compile(name(), "pattern", p.get_str("pattern"))),
        replace_(icu::UnicodeString::fromUTF8(p.get_str("replace"))),
        replace_all_(p.get_bool("replace_all", true)) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    if (in.size() != 1)
      MYCEL_THROW(ValueError, name(), ": expected 1 input column, got ", in.size());
    auto kind = string_kind(in[0]);
    if (!kind || *kind != StringKind::text)
      MYCEL_THROW(TypeError, name(), ": the input must hold strings, got a ",
                  dtype_name(in[0].dtype()), " tensor of shape ", shape_str(in[0].shape()));
    std::vector<std::string> items = string_items(in[0]);
    auto m = matcher(*pattern_, name());
    for (std::string& item : items) {
      decode_utf8(item, name());
      UErrorCode status = U_ZERO_ERROR;
      icu::UnicodeString input = icu::UnicodeString::fromUTF8(item);
      m->reset(input);
      icu::UnicodeString out =
          replace_all_ ? m->replaceAll(replace_, status) : m->replaceFirst(replace_, status);
      if (U_FAILURE(status))
        MYCEL_THROW(ValueError, name(), ": replacing with '", p_replace_utf8(), "' failed (",
                    u_errorName(status), "; a $n beyond the pattern's groups?)");
      item.clear();
      out.toUTF8String(item);
    }
    return {make_string_tensor(items, string_shape(in[0]), StringKind::text)};
  }
  std::string name() const override { return "RegexReplace"; }
  bool takes_strings() const override { return true; }

 private:
  std::string p_replace_utf8() const {
    std::string s;
    return replace_.toUTF8String(s);
  }
  std::unique_ptr<icu::RegexPattern> pattern_;
  icu::UnicodeString replace_;
  bool replace_all_;
};

// Splits at runs of ICU White_Space characters, which are dropped.
class WhitespaceTokenizer : public Transform {
 public:
  explicit WhitespaceTokenizer(const Params& p)
      : with_offsets_(p.get_bool("with_offsets", false)) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    const std::string s = scalar_text(in, name());
    std::vector<Span> spans;
    bool in_word = false;
    for (const Rune& r : decode_utf8(s, name())) {
      bool space = u_isUWhiteSpace(static_cast<UChar32>(r.cp));
      if (!space && !in_word) spans.push_back({r.offset, r.offset});
      if (!space) spans.back().limit = r.offset + r.len;
      in_word = !space;
    }
    return token_outputs(s, spans, with_offsets_);
  }
  std::string name() const override { return "WhitespaceTokenizer"; }
  bool takes_strings() const override { return true; }

 private:
  bool with_offsets_;
};

}  // namespace

MYCEL_REGISTER_DATA(text_icu_regex) {
  register_transform("RegexTokenizer", [](const Params& p, const TransformList&) {
    return std::make_shared<RegexTokenizer>(p);
  });
  register_transform("RegexReplace", [](const Params& p, const TransformList&) {
    return std::make_shared<RegexReplace>(p);
  });
  register_transform("WhitespaceTokenizer", [](const Params& p, const TransformList&) {
    return std::make_shared<WhitespaceTokenizer>(p);
  });
}

}  // namespace mycel::data::text
