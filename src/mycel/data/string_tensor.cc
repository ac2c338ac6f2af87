// The tag of string tensors: a registry of the data pointers of storages made here. Each such
// storage is borrowed memory whose release callback removes its entry, so a freed block (which
// the caching allocator might hand out again) is never mistaken for a string tensor.
#include "mycel/data/string_tensor.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace mycel::data {
namespace {

std::mutex g_mu;
std::unordered_map<const void*, StringKind>& registry() {
  static auto* m = new std::unordered_map<const void*, StringKind>();  // outlives static dtors
  return *m;
}

Tensor tagged_empty(const Shape& shape, int64_t width, StringKind kind) {
  Shape full = shape;
  full.push_back(std::max<int64_t>(width, 1));
  int64_t n = 1;
  for (int64_t d : full) n *= d;
  size_t nbytes = static_cast<size_t>(std::max<int64_t>(n, 1));
  char* buf = new char[nbytes]();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    registry()[buf] = kind;
  }
  auto storage = Storage::borrow(buf, nbytes, [buf] {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      registry().erase(buf);
    }
    delete[] buf;
  });
  return Tensor(std::move(storage), 0, full, DType::uint8);
}

}  // namespace

Tensor make_string_tensor(const std::vector<std::string>& items, const Shape& shape,
                          StringKind kind) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  MYCEL_CHECK(count == static_cast<int64_t>(items.size()), ValueError, "string tensor: shape ",
              shape_str(shape), " holds ", count, " strings but ", items.size(), " were given");
  size_t width = 1;
  for (const auto& s : items) width = std::max(width, s.size());
  Tensor t = tagged_empty(shape, static_cast<int64_t>(width), kind);
  char* dst = static_cast<char*>(t.data());
  for (size_t i = 0; i < items.size(); ++i)
    std::memcpy(dst + i * width, items[i].data(), items[i].size());
  return t;
}

Tensor make_string_tensor(const char* data, int64_t width, const Shape& shape, StringKind kind) {
  MYCEL_CHECK(width >= 0, ValueError, "string tensor: width must be >= 0, got ", width);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  Tensor t = tagged_empty(shape, width, kind);
  if (width == 0) return t;  // all empty: the one zero byte per string is already there
  std::memcpy(t.data(), data, static_cast<size_t>(count * width));
  return t;
}

Tensor tag_string_tensor(const Tensor& bytes, StringKind kind) {
  MYCEL_CHECK(bytes.dtype() == DType::uint8 && bytes.ndim() >= 1, TypeError,
              "string tensor: expected a uint8 tensor with a width dimension, got ",
              dtype_name(bytes.dtype()), " of shape ", shape_str(bytes.shape()));
  Shape s(bytes.shape().begin(), bytes.shape().end() - 1);
  Tensor c = bytes.clone();  // contiguous
  return make_string_tensor(static_cast<const char*>(c.data()), bytes.shape().back(), s, kind);
}

std::optional<StringKind> string_kind(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::uint8) return std::nullopt;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = registry().find(t.storage()->data());
  if (it == registry().end()) return std::nullopt;
  return it->second;
}

Shape string_shape(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 1); }

std::vector<std::string> string_items(const Tensor& t) {
  int64_t width = t.shape().back();
  int64_t count = width ? t.numel() / width : 0;
  const char* p = static_cast<const char*>(t.data());
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const char* s = p + i * width;
    size_t n = static_cast<size_t>(width);
    while (n > 0 && s[n - 1] == '\0') --n;
    out.emplace_back(s, n);
  }
  return out;
}

void check_not_string(const Tensor& t, const std::string& who, const std::string& what) {
  if (string_kind(t))
    MYCEL_THROW(TypeError, who, ": the input holds strings (shape ", shape_str(string_shape(t)),
                "); ", what);
}

}  // namespace mycel::data
