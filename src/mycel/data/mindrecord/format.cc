// MindRecord layout: CRC-32C, schema names, header and footer (de)serialization with validation.
#include "mycel/data/mindrecord/format.h"

#include <array>
#include <set>

namespace mycel::data::mr {

const char* field_type_name(FieldType t) {
  switch (t) {
    case FieldType::int32:
      return "int32";
    case FieldType::int64:
      return "int64";
    case FieldType::float32:
      return "float32";
    case FieldType::float64:
      return "float64";
    case FieldType::string:
      return "string";
    case FieldType::bytes:
      return "bytes";
  }
  return "?";
}

FieldType field_type_from_name(const std::string& name, const std::string& field) {
  for (int i = 0; i <= 5; ++i)
    if (name == field_type_name(static_cast<FieldType>(i))) return static_cast<FieldType>(i);
  MYCEL_THROW(ValueError, "[MindRecord] field '", field, "' has type '", name,
              "'; expected one of int32, int64, float32, float64, string, bytes");
}

DType field_dtype(FieldType t) {
  switch (t) {
    case FieldType::int32:
      return DType::int32;
    case FieldType::int64:
      return DType::int64;
    case FieldType::float32:
      return DType::float32;
    case FieldType::float64:
      return DType::float64;
    default:
      return DType::uint8;
  }
}

std::string field_shape_str(const FieldSpec& f) {
  if (!is_numeric(f.type)) return "none";
  return f.has_shape ? shape_str(f.shape) : "scalar";
}

void validate_schema(const std::vector<FieldSpec>& fields, const std::vector<uint32_t>& index,
                     const std::string& what) {
  MYCEL_CHECK(!fields.empty(), ValueError, what, ": the schema has no fields");
  MYCEL_CHECK(fields.size() <= kMaxFields, ValueError, what, ": the schema has ", fields.size(),
              " fields; at most ", kMaxFields, " are allowed");
  std::set<std::string> names;
  for (const FieldSpec& f : fields) {
    MYCEL_CHECK(!f.name.empty(), ValueError, what, ": a schema field has an empty name");
    MYCEL_CHECK(names.insert(f.name).second, ValueError, what, ": field '", f.name,
                "' appears twice in the schema");
    MYCEL_CHECK(static_cast<uint8_t>(f.type) <= 5, ValueError, what, ": field '", f.name,
                "' has unknown type code ", int(f.type));
    if (!f.has_shape) continue;
    MYCEL_CHECK(is_numeric(f.type), ValueError, what, ": field '", f.name, "' of type ",
                field_type_name(f.type), " cannot have a shape (only numeric fields can)");
    MYCEL_CHECK(!f.shape.empty() && f.shape.size() <= kMaxDims, ValueError, what, ": field '",
                f.name, "' has shape ", shape_str(f.shape), "; expected 1 to ", kMaxDims, " dims");
    for (int64_t d : f.shape)
      MYCEL_CHECK(d > 0 || d == -1, ValueError, what, ": field '", f.name, "' has shape ",
                  shape_str(f.shape), "; each dim must be positive or -1 (varies per row)");
  }
  std::set<uint32_t> seen;
  for (uint32_t i : index) {
    MYCEL_CHECK(i < fields.size(), ValueError, what, ": index field number ", i, " out of range");
    MYCEL_CHECK(seen.insert(i).second, ValueError, what, ": index field '", fields[i].name,
                "' given twice");
    MYCEL_CHECK(!fields[i].has_shape && fields[i].type != FieldType::bytes, ValueError, what,
                ": field '", fields[i].name, "' cannot be an index field; only scalar numeric ",
                "and string fields can");
  }
}

std::string encode_header(const Header& h) {
  ByteWriter b;
  b.put(h.set_id);
  b.put(h.shard_id);
  b.put(h.shard_num);
  b.put(h.page_size);
  b.put<uint32_t>(static_cast<uint32_t>(h.shard_names.size()));
  for (const auto& s : h.shard_names) b.put_str(s);
  b.put_str(h.desc);
  b.put<uint32_t>(static_cast<uint32_t>(h.fields.size()));
  for (const FieldSpec& f : h.fields) {
    b.put_str(f.name);
    b.put<uint8_t>(static_cast<uint8_t>(f.type));
    b.put<uint8_t>(f.has_shape ? 1 : 0);
    if (f.has_shape) {
      b.put<uint32_t>(static_cast<uint32_t>(f.shape.size()));
      for (int64_t d : f.shape) b.put<int64_t>(d);
    }
  }
  b.put<uint32_t>(static_cast<uint32_t>(h.index_fields.size()));
  for (uint32_t i : h.index_fields) b.put(i);
  MYCEL_CHECK(b.str().size() <= kMaxHeaderBytes, ValueError,
              "[MindRecord] the header (schema, desc, shard names) takes ", b.str().size(),
              " bytes; at most ", kMaxHeaderBytes, " are allowed");
  ByteWriter out;
  out.put_bytes(kMagic, 8);
  out.put(kVersion);
  out.put<uint32_t>(static_cast<uint32_t>(b.str().size()));
  out.put_bytes(b.str().data(), b.str().size());
  return std::move(out.str());
}

Header decode_header(const char* p, size_t n, const std::string& what) {
  ByteReader r(p, n, what + ": header");
  if (n < 8 || std::memcmp(p, kMagic, 8) != 0)
    MYCEL_THROW(RuntimeError, what, ": not a MindRecord file (magic \"MYCELMR1\" missing)");
  r.take(8, "magic");
  uint32_t version = r.get<uint32_t>("version");
  if (version != kVersion)
    MYCEL_THROW(RuntimeError, what, ": MindRecord version ", version, " is not supported (this ",
                "reader knows version ", kVersion, ")");
  uint32_t body_len = r.get<uint32_t>("length");
  if (body_len > kMaxHeaderBytes || body_len > r.remaining())
    r.fail("length", "body of ", body_len, " bytes but ", r.remaining(), " remain");
  Header h;
  h.set_id = r.get<uint64_t>("set id");
  h.shard_id = r.get<uint32_t>("shard id");
  h.shard_num = r.get<uint32_t>("shard count");
  h.page_size = r.get<uint32_t>("page size");
  if (h.shard_num < 1 || h.shard_num > kMaxShards || h.shard_id >= h.shard_num)
    r.fail("shard", "shard ", h.shard_id, " of ", h.shard_num);
  if (h.page_size < kMinPageSize || h.page_size > kMaxPageSize)
    r.fail("page size", h.page_size, " is outside [", kMinPageSize, ", ", kMaxPageSize, "]");
  uint32_t names = r.get_count32("shard names", 4, kMaxShards);
  if (names != h.shard_num) r.fail("shard names", names, " names for ", h.shard_num, " shards");
  for (uint32_t i = 0; i < names; ++i) {
    h.shard_names.push_back(r.get_str("shard name", 4096));
    const std::string& s = h.shard_names.back();
    if (s.empty() || s.find('/') != std::string::npos) r.fail("shard name", "'", s, "'");
  }
  h.desc = r.get_str("desc");
  uint32_t nf = r.get_count32("field count", 6, kMaxFields);
  for (uint32_t i = 0; i < nf; ++i) {
    FieldSpec f;
    f.name = r.get_str("field name", 4096);
    uint8_t type = r.get<uint8_t>("field type");
    if (type > 5) r.fail("field type", "code ", int(type), " of field '", f.name, "'");
    f.type = static_cast<FieldType>(type);
    f.has_shape = r.get<uint8_t>("field shape flag") != 0;
    if (f.has_shape) {
      uint32_t nd = r.get_count32("field ndim", 8, kMaxDims);
      for (uint32_t k = 0; k < nd; ++k) f.shape.push_back(r.get<int64_t>("field dim"));
    }
    h.fields.push_back(std::move(f));
  }
  uint32_t ni = r.get_count32("index field count", 4, kMaxFields);
  for (uint32_t i = 0; i < ni; ++i) h.index_fields.push_back(r.get<uint32_t>("index field"));
  if (r.remaining() != 0) r.fail("length", r.remaining(), " unexpected bytes after the header");
  try {
    validate_schema(h.fields, h.index_fields, what);
  } catch (const ValueError& e) {
    MYCEL_THROW(RuntimeError, "corrupt header: ", e.what());
  }
  return h;
}

std::string encode_footer(const Footer& f) {
  ByteWriter b;
  b.put(f.data_offset);
  b.put(f.num_pages);
  b.put(f.index_offset);
  b.put(f.index_len);
  b.put(f.num_rows);
  b.put(f.header_crc);
  b.put(f.index_crc);
  b.put(crc32c(b.str().data(), b.str().size()));
  b.put<uint32_t>(0);
  b.put_bytes(kFooterMagic, 8);
  return std::move(b.str());
}

Footer decode_footer(const char* p, const std::string& what) {
  if (std::memcmp(p + kFooterSize - 8, kFooterMagic, 8) != 0)
    MYCEL_THROW(RuntimeError, what, ": truncated or incomplete MindRecord file (footer magic ",
                "\"MYCELMRF\" missing at the end)");
  ByteReader r(p, kFooterSize, what + ": footer");
  Footer f;
  f.data_offset = r.get<uint64_t>("data offset");
  f.num_pages = r.get<uint64_t>("page count");
  f.index_offset = r.get<uint64_t>("index offset");
  f.index_len = r.get<uint64_t>("index length");
  f.num_rows = r.get<uint64_t>("row count");
  f.header_crc = r.get<uint32_t>("header crc");
  f.index_crc = r.get<uint32_t>("index crc");
  uint32_t stored = r.get<uint32_t>("footer crc");
  uint32_t actual = crc32c(p, 48);
  if (stored != actual)
    MYCEL_THROW(RuntimeError, what, ": footer checksum mismatch (stored ", stored, ", computed ",
                actual, "): the file is corrupt");
  return f;
}

}  // namespace mycel::data::mr
