// String and bytes columns in the data pipeline. The core has no string dtype, so the engine
// carries an array of strings as a uint8 tensor of shape (*S, width) in numpy's fixed-width
// bytes layout (UTF-8, NUL-padded), in a storage this file tags as text or bytes. Padding the
// last dimension with zeros keeps the strings, so batching strings of different lengths is a
// zero-padded stack; the Python glue turns tagged tensors back into numpy str/bytes arrays.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::data {

/// What a tagged tensor holds: text (decoded to str in Python) or raw bytes.
enum class StringKind : uint8_t { text, bytes };

/// A tagged tensor of `shape` strings (row-major `items`), padded to the longest (at least 1).
Tensor make_string_tensor(const std::vector<std::string>& items, const Shape& shape,
                          StringKind kind);
/// A tagged tensor from numpy's fixed-width layout: count * width bytes for `shape` strings.
Tensor make_string_tensor(const char* data, int64_t width, const Shape& shape, StringKind kind);
/// An untagged-shape uint8 tensor (*S, width) re-tagged in a new storage (after batching).
Tensor tag_string_tensor(const Tensor& bytes, StringKind kind);
/// The kind of a tagged tensor, or nullopt for an ordinary tensor.
std::optional<StringKind> string_kind(const Tensor& t);
/// The shape of the string array (the tensor's shape without its width dimension).
Shape string_shape(const Tensor& t);
/// The strings of a tagged tensor, row-major, trailing NULs removed (numpy's rule).
std::vector<std::string> string_items(const Tensor& t);
/// Throws TypeError "<who>: column <col> holds strings; <what>" when t is tagged.
void check_not_string(const Tensor& t, const std::string& who, const std::string& what);

}  // namespace mycel::data
