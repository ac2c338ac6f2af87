// UTF-8 decoding and the shared input/output shapes of the text tokenizers.
#include "mycel/data/text/text_util.h"

#include <cstring>

#include "mycel/data/string_tensor.h"

namespace mycel::data::text {

std::vector<Rune> decode_utf8(const std::string& s, const std::string& op) {
  std::vector<Rune> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    uint32_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > n)
      MYCEL_THROW(ValueError, op, ": the input is not valid UTF-8 (byte ", i, " of ", n, ")");
    char32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (uint32_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        MYCEL_THROW(ValueError, op, ": the input is not valid UTF-8 (byte ", i + k, " of ", n, ")");
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      MYCEL_THROW(ValueError, op, ": the input is not valid UTF-8 (byte ", i, " of ", n, ")");
    out.push_back({cp, static_cast<uint32_t>(i), len});
    i += len;
  }
  return out;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string scalar_text(const std::vector<Tensor>& in, const std::string& op) {
  if (in.size() != 1) MYCEL_THROW(ValueError, op, ": expected 1 input column, got ", in.size());
  auto kind = string_kind(in[0]);
  if (!kind || *kind != StringKind::text)
    MYCEL_THROW(TypeError, op, ": the input must be a string, got a ", dtype_name(in[0].dtype()),
                " tensor of shape ", shape_str(in[0].shape()));
  Shape shape = string_shape(in[0]);
  if (!shape.empty())
    MYCEL_THROW(ValueError, op, ": the input must be a scalar string, got shape ",
                shape_str(shape));
  return string_items(in[0])[0];
}

std::vector<Tensor> token_outputs(const std::string& text, const std::vector<Span>& spans,
                                  bool with_offsets) {
  std::vector<std::string> toks;
  std::vector<Span> kept = spans;
  if (kept.empty()) kept.push_back({0, 0});
  toks.reserve(kept.size());
  for (const Span& s : kept) toks.push_back(text.substr(s.start, s.limit - s.start));
  const int64_t n = static_cast<int64_t>(kept.size());
  std::vector<Tensor> out{make_string_tensor(toks, {n}, StringKind::text)};
  if (with_offsets) {
    Tensor starts = Tensor::empty({n}, DType::uint32), limits = Tensor::empty({n}, DType::uint32);
    for (int64_t i = 0; i < n; ++i) {
      starts.data<uint32_t>()[i] = kept[i].start;
      limits.data<uint32_t>()[i] = kept[i].limit;
    }
    out.push_back(starts);
    out.push_back(limits);
  }
  return out;
}

}  // namespace mycel::data::text
