// Internal to the text tokenizers (src/mycel/data/text): UTF-8 decoding with byte offsets, the
// scalar-string input check and the (tokens[, offsets_start, offsets_limit]) output they share.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mycel/data/transform.h"

namespace mycel::data::text {

/// One code point of a UTF-8 string: its value and its bytes [offset, offset + len).
struct Rune {
  char32_t cp;
  uint32_t offset, len;
};

/// The code points of s; ValueError naming `op` and the byte position on invalid UTF-8.
std::vector<Rune> decode_utf8(const std::string& s, const std::string& op);
/// The UTF-8 bytes of one code point appended to out.
void append_utf8(char32_t cp, std::string& out);

/// The one string of a scalar string column; TypeError/ValueError naming `op` otherwise.
std::string scalar_text(const std::vector<Tensor>& in, const std::string& op);

/// A token as a byte range of its source text.
struct Span {
  uint32_t start, limit;
};

/// The tokens of `text` given as spans: a 1-d string column, plus uint32 start/limit byte
/// offsets when `with_offsets`. No token at all gives the one token "" at 0..0 (MindSpore's rule).
std::vector<Tensor> token_outputs(const std::string& text, const std::vector<Span>& spans,
                                  bool with_offsets);

}  // namespace mycel::data::text
