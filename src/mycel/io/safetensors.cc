// safetensors: u64 little-endian header size N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the tensors' bytes, with offsets relative to the end of the header. The JSON library is
// confined to this file so that no other translation unit pays for its header.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "mycel/io/file.h"
#include "mycel/io/io.h"

namespace mycel::io {

namespace {

using json = nlohmann::json;

// safetensors' own reference implementation refuses headers above 100 MB; so do we.
constexpr uint64_t kMaxHeader = 100u << 20;
constexpr size_t kMaxRank = 64;
constexpr int kMaxDepth = 4;  // top object > entry > shape/offsets array (> scalars)

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kNames[] = {
    {DType::bool_, "BOOL"},  {DType::int8, "I8"},       {DType::uint8, "U8"},
    {DType::int16, "I16"},   {DType::int32, "I32"},     {DType::int64, "I64"},
    {DType::float16, "F16"}, {DType::bfloat16, "BF16"}, {DType::float32, "F32"},
    {DType::float64, "F64"}, {DType::uint16, "U16"},    {DType::uint32, "U32"},
    {DType::uint64, "U64"}};

const char* st_name(DType t) {
  for (const auto& n : kNames)
    if (n.dtype == t) return n.name;
  return "?";
}

DType st_dtype(const std::string& s, const std::string& where) {
  for (const auto& n : kNames)
    if (s == n.name) return n.dtype;
  for (const char* other : {"F8_E4M3", "F8_E5M2"})
    if (s == other)
      MYCEL_THROW(NotSupported, where, ": safetensors dtype ", s, " is not supported by Mycel");
  MYCEL_THROW(ValueError, where, ": unknown dtype \"", s, "\"");
}

uint64_t get_u64(const json& v, const std::string& where, const char* what) {
  MYCEL_CHECK(v.is_number_unsigned(), ValueError, where, ": ", what,
              " must be a non-negative integer, got ", v.dump());
  return v.get<uint64_t>();
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

std::string hex_byte(unsigned char c) {
  const char* digits = "0123456789abcdef";
  return {digits[c >> 4], digits[c & 15]};
}

// Parses the JSON header; nesting deeper than a valid header needs is refused while parsing,
// so a hostile "[[[[..." header cannot exhaust memory or stack.
json parse_json(const std::string& text, const std::string& path) {
  auto depth_guard = [&](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxDepth)
      MYCEL_THROW(ValueError, "safetensors file '", path, "': header JSON is nested deeper than ",
                  kMaxDepth, " levels");
    return true;
  };
  // JSON text is UTF-8: say so before the parser does, since its message would quote the bad
  // bytes, and a message that is not UTF-8 cannot become a Python str.
  size_t bad = detail::first_invalid_utf8(text);
  if (bad != std::string::npos)
    MYCEL_THROW(ValueError, "safetensors file '", path, "': header is not valid UTF-8 (byte 0x",
                hex_byte(static_cast<unsigned char>(text[bad])), " at header offset ", bad,
                "); the header must be UTF-8 JSON");
  try {
    return json::parse(text, depth_guard);
  } catch (const json::exception& e) {
    MYCEL_THROW(ValueError, "safetensors file '", path, "': header is not valid JSON: ", e.what());
  }
}

std::vector<Entry> parse_header(const json& h, uint64_t data_size, const std::string& path,
                                std::map<std::string, std::string>& metadata) {
  const std::string file = "safetensors file '" + path + "'";
  MYCEL_CHECK(h.is_object(), ValueError, file, ": header must be a JSON object");
  std::vector<Entry> entries;
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") {
      MYCEL_CHECK(v.is_object(), ValueError, file, ": __metadata__ must be an object");
      for (const auto& [k, s] : v.items()) {
        MYCEL_CHECK(s.is_string(), ValueError, file, ": __metadata__[\"", k,
                    "\"] must be a string");
        metadata[k] = s.get<std::string>();
      }
      continue;
    }
    std::string where = file + ", tensor '" + name + "'";
    MYCEL_CHECK(v.is_object(), ValueError, where, ": entry must be an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      MYCEL_CHECK(v.contains(key), ValueError, where, ": missing \"", key, "\"");
    const json& dt = v["dtype"];
    const json& shape = v["shape"];
    const json& offs = v["data_offsets"];
    MYCEL_CHECK(dt.is_string(), ValueError, where, ": dtype must be a string");
    MYCEL_CHECK(shape.is_array() && shape.size() <= kMaxRank, ValueError, where,
                ": shape must be an array of at most ", kMaxRank, " dims");
    MYCEL_CHECK(offs.is_array() && offs.size() == 2, ValueError, where,
                ": data_offsets must be [begin, end]");
    Entry e{name, st_dtype(dt.get<std::string>(), where), {}, 0, 0};
    for (const json& d : shape) {
      uint64_t ud = get_u64(d, where, "a dimension");
      MYCEL_CHECK(ud <= uint64_t(INT64_MAX), ValueError, where, ": dimension ", ud,
                  " is too large");
      e.shape.push_back(static_cast<int64_t>(ud));
    }
    e.begin = get_u64(offs[0], where, "data_offsets[0]");
    e.end = get_u64(offs[1], where, "data_offsets[1]");
    MYCEL_CHECK(e.begin <= e.end && e.end <= data_size, ValueError, where, ": data_offsets [",
                e.begin, ", ", e.end, "] are out of range for ", data_size, " data bytes");
    uint64_t expect = detail::checked_nbytes(e.shape, e.dtype, data_size, where);
    MYCEL_CHECK(e.end - e.begin == expect, ValueError, where, ": data_offsets span ",
                e.end - e.begin, " bytes, but shape ", shape_str(e.shape), " of ", st_name(e.dtype),
                " needs ", expect);
    entries.push_back(std::move(e));
  }
  // The data buffer must be covered exactly: no holes, no overlaps, nothing left over.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (const Entry& e : entries) {
    MYCEL_CHECK(e.begin == cursor, ValueError, file, ": tensor '", e.name, "' starts at data byte ",
                e.begin, " but the previous tensor ends at ", cursor, " (overlap or hole)");
    cursor = e.end;
  }
  MYCEL_CHECK(cursor == data_size, ValueError, file, ": tensors cover ", cursor,
              " data bytes but the file holds ", data_size,
              cursor < data_size ? " (trailing bytes)" : "");
  return entries;
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json h = json::object();
  uint64_t cursor = 0;
  for (const auto& [name, t] : tensors) {
    MYCEL_CHECK(t.defined(), ValueError, "save_safetensors: tensor '", name, "' is undefined");
    MYCEL_CHECK(name != "__metadata__", ValueError, "save_safetensors: '__metadata__' is reserved");
    MYCEL_CHECK(!h.contains(name), ValueError, "save_safetensors: duplicate name '", name, "'");
    h[name] = {{"dtype", st_name(t.dtype())},
               {"shape", t.shape()},
               {"data_offsets", {cursor, cursor + t.nbytes()}}};
    cursor += t.nbytes();
  }
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::string text;
  try {
    text = h.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception& e) {
    MYCEL_THROW(ValueError, "save_safetensors: a name or metadata string is not valid UTF-8 (",
                e.what(), ")");
  }
  text.resize(detail::align_up(text.size(), 8),
              ' ');  // keeps the data 8-byte aligned, as the spec suggests
  uint64_t n = text.size();
  detail::AtomicWriter w(path);
  w.write(&n, 8);
  w.write(text.data(), n);
  for (const auto& [name, t] : tensors) w.write(t.data(), t.nbytes());
  w.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  detail::ReadFile f(path);
  const uint64_t size = f.size();
  MYCEL_CHECK(size >= 8, ValueError, "safetensors file '", path, "' is truncated: ", size,
              " bytes, fewer than the 8-byte header size");
  uint64_t n;
  f.read_at(&n, 8, 0, "the header size");
  MYCEL_CHECK(n <= size - 8 && n <= kMaxHeader, ValueError, "safetensors file '", path,
              "' has a corrupt header size ", n, " (file: ", size, " bytes, limit ", kMaxHeader,
              ")");
  std::string text(n, '\0');
  f.read_at(text.data(), n, 8, "the header");
  SafetensorsFile out;
  std::vector<Entry> entries =
      parse_header(parse_json(text, path), size - 8 - n, path, out.metadata);
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    f.read_at(t.data(), e.end - e.begin, 8 + n + e.begin, "tensor data");
    if (e.dtype == DType::bool_) detail::normalize_bools(t.data(), e.end - e.begin);
    out.tensors.push_back({e.name, std::move(t)});
  }
  return out;
}

}  // namespace mycel::io
