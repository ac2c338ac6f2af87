// MindRecord: Mycel's paged record file. This header is the on-disk layout (the one place that
// defines it), the schema types, CRC-32C, and bounds-checked byte readers/writers.
//
// All integers are little-endian. A file (one shard) is four regions, in this order:
//
//   HEADER   offset 0
//     magic        8 bytes  "MYCELMR1"
//     version      u32      kVersion
//     body_len     u32      length of the body that follows (<= kMaxHeaderBytes)
//     body:
//       set_id     u64      random id shared by every shard of one FileWriter
//       shard_id   u32      this file's shard, in [0, shard_num)
//       shard_num  u32      number of shards (<= kMaxShards)
//       page_size  u32      bytes per page, in [kMinPageSize, kMaxPageSize]
//       shards     u32 n, then n strings: the base names of all shard files, in shard order
//       desc       string   free text given to add_schema
//       fields     u32 n (<= kMaxFields), then per field:
//                    name string, type u8 (FieldType), has_shape u8,
//                    if has_shape: ndim u32 (<= kMaxDims), ndim x i64 (> 0, or -1 = varies per row)
//       index      u32 n, then n x u32 field number (fields searchable by value)
//     (a string is u32 length + bytes)
//   PAGES    offset data_offset (header end rounded up to 8), num_pages x page_size bytes
//     A page unit is one page, or for a row larger than a page a run of consecutive pages
//     (an overflow run holding only that row). Each unit starts with:
//       magic      u32      kPageMagic
//       crc        u32      CRC-32C of bytes [8, unit_len) of the unit (padding included)
//       n_pages    u32      pages in this unit (1 for a normal page)
//       row_count  u32
//       offsets    (row_count + 1) x u64: row r spans [offsets[r], offsets[r+1]) from unit start
//       rows       packed row data, then zero padding to the end of the unit
//     A row is its fields in schema order, each encoded as:
//       numeric field with no shape:  one element
//       numeric field with a shape:   one i64 per -1 dim (the row's size), then the elements
//       bytes / string field:         u64 length, then the bytes (UTF-8 for string)
//   INDEX    offset index_offset, index_len bytes
//     num_rows     u64
//     rows         num_rows x {page u64, offset u64, length u64}: the unit's first page, the row's
//                  offset in the unit and its length (also recorded in the page's offsets)
//     keys         per index field (header order): u64 n = num_rows, then n entries sorted by key:
//                  key (i64 for ints, f64 for floats, string for string fields), row u64
//   FOOTER   the last kFooterSize bytes
//     data_offset u64, num_pages u64, index_offset u64, index_len u64, num_rows u64,
//     header_crc u32 (CRC-32C of [0, header end)), index_crc u32 (of the index region),
//     footer_crc u32 (of the footer bytes before it), reserved u32 (0), magic 8 bytes "MYCELMRF"
//
// Shards: a FileWriter with shard_num > 1 writes file_name + "0" ... file_name + str(n - 1) and
// gives row g (in write order) to shard g % n, so global row g is local row g / n of that shard.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "mycel/core/crc32c.h"
#include "mycel/core/dtype.h"
#include "mycel/core/error.h"
#include "mycel/core/shape.h"

namespace mycel::data::mr {

static_assert(std::endian::native == std::endian::little,
              "MindRecord assumes a little-endian host");

inline constexpr char kMagic[8] = {'M', 'Y', 'C', 'E', 'L', 'M', 'R', '1'};
inline constexpr char kFooterMagic[8] = {'M', 'Y', 'C', 'E', 'L', 'M', 'R', 'F'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kPageMagic = 0x4750524D;  // "MRPG"
inline constexpr uint64_t kPageHeaderSize = 16;     // magic, crc, n_pages, row_count
inline constexpr uint64_t kFooterSize = 64;
inline constexpr uint64_t kRowEntrySize = 24;  // page, offset, length
inline constexpr uint32_t kMaxHeaderBytes = 64u << 20;
inline constexpr uint32_t kMinPageSize = 1024;
inline constexpr uint32_t kMaxPageSize = 1u << 30;
inline constexpr uint32_t kDefaultPageSize = 1u << 20;
inline constexpr uint32_t kMaxShards = 1000;
inline constexpr uint32_t kMaxFields = 4096;
inline constexpr uint32_t kMaxDims = 16;

/// Field types of a schema (MindSpore's names).
enum class FieldType : uint8_t {
  int32 = 0,
  int64 = 1,
  float32 = 2,
  float64 = 3,
  string = 4,
  bytes = 5
};

/// "int32", ..., "bytes".
const char* field_type_name(FieldType t);
/// Parses a type name; throws ValueError naming the field otherwise.
FieldType field_type_from_name(const std::string& name, const std::string& field);
/// Tensor element type of a field: the numeric type, or uint8 for string/bytes.
DType field_dtype(FieldType t);
inline bool is_numeric(FieldType t) { return t <= FieldType::float64; }

/// One column: a scalar, a fixed/variable-shape numeric array, a byte string or a text string.
struct FieldSpec {
  std::string name;
  FieldType type = FieldType::int64;
  bool has_shape = false;  // numeric only: without a shape the field is a 0-d scalar
  Shape shape;             // dims > 0, or -1 where the size varies per row
  bool operator==(const FieldSpec& o) const = default;
};

/// Everything a header holds.
struct Header {
  uint64_t set_id = 0;
  uint32_t shard_id = 0, shard_num = 1, page_size = kDefaultPageSize;
  std::vector<std::string> shard_names;
  std::string desc;
  std::vector<FieldSpec> fields;
  std::vector<uint32_t> index_fields;
};

/// The fixed-size trailer that locates the other regions.
struct Footer {
  uint64_t data_offset = 0, num_pages = 0, index_offset = 0, index_len = 0, num_rows = 0;
  uint32_t header_crc = 0, index_crc = 0;
};

/// Where a row lives inside its shard.
struct RowLoc {
  uint64_t page = 0, offset = 0, length = 0;
};

using mycel::crc32c;  // core/crc32c.h

/// Appends little-endian values to a byte string.
class ByteWriter {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void put_bytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void put_str(std::string_view s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    put_bytes(s.data(), s.size());
  }
  std::string& str() { return buf_; }

 private:
  std::string buf_;
};

/// Reads little-endian values from a span, throwing RuntimeError "<what>: truncated ..." rather
/// than reading past its end; counts are checked against the bytes left before anything is sized.
class ByteReader {
 public:
  ByteReader(const char* p, size_t n, std::string what) : p_(p), n_(n), what_(std::move(what)) {}
  template <class T>
  T get(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const char* take(uint64_t n, const char* field) {
    need(n, field);
    const char* p = p_ + pos_;
    pos_ += n;
    return p;
  }
  std::string get_str(const char* field, uint32_t max_len = kMaxHeaderBytes) {
    uint32_t len = get<uint32_t>(field);
    if (len > max_len) fail(field, "length ", len, " exceeds the limit ", max_len);
    return std::string(take(len, field), len);
  }
  /// A count of items at least `min_item_bytes` each: rejected if the rest cannot hold them.
  uint64_t get_count(const char* field, uint64_t min_item_bytes, uint64_t limit = UINT64_MAX) {
    uint64_t c = get<uint64_t>(field);
    check_count(c, field, min_item_bytes, limit);
    return c;
  }
  uint32_t get_count32(const char* field, uint64_t min_item_bytes, uint64_t limit = UINT32_MAX) {
    uint32_t c = get<uint32_t>(field);
    check_count(c, field, min_item_bytes, limit);
    return c;
  }
  size_t remaining() const { return n_ - pos_; }
  size_t pos() const { return pos_; }

  template <class... A>
  [[noreturn]] void fail(const char* field, const A&... a) const {
    MYCEL_THROW(RuntimeError, what_, ": corrupt ", field, " at byte ", pos_, ": ", a...);
  }

 private:
  void need(uint64_t k, const char* field) const {
    if (k > n_ - pos_)
      fail(field, "needs ", k, " bytes but only ", n_ - pos_, " remain (truncated)");
  }
  void check_count(uint64_t c, const char* field, uint64_t min_item, uint64_t limit) const {
    if (c > limit) fail(field, "count ", c, " exceeds the limit ", limit);
    if (min_item > 0 && c > (n_ - pos_) / min_item)
      fail(field, "count ", c, " cannot fit in the ", n_ - pos_, " bytes that remain");
  }
  const char* p_;
  size_t n_, pos_ = 0;
  std::string what_;
};

/// Serializes a header (magic, version, length, body).
std::string encode_header(const Header& h);
/// Parses and validates a header; `what` (the file name) prefixes every error.
Header decode_header(const char* p, size_t n, const std::string& what);
/// Checks a schema (names unique and non-empty, shapes valid, index fields indexable).
void validate_schema(const std::vector<FieldSpec>& fields, const std::vector<uint32_t>& index,
                     const std::string& what);
/// 64-byte footer.
std::string encode_footer(const Footer& f);
Footer decode_footer(const char* p, const std::string& what);
/// "[3, 32, 32]" / "scalar" for messages.
std::string field_shape_str(const FieldSpec& f);

}  // namespace mycel::data::mr
