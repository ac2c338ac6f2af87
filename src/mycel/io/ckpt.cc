// The ".ckpt" format (spec in docs/checkpoints.md):
//   "MYCELCKP" | u32 version | u64 header_len | header | data (64-byte aligned) | u32 crc32
// header = u64 count, then per tensor: u32 name_len, name, u8 dtype, u32 rank, i64 dims[rank],
// u64 offset (from the file start), u64 nbytes. All integers little-endian. The CRC-32 covers
// every byte before it. Tensors are stored in header order, each at the next 64-byte boundary.
#include <zlib.h>

#include <bit>
#include <cstring>
#include <unordered_set>

#include "mycel/io/cipher.h"
#include "mycel/io/file.h"
#include "mycel/io/io.h"

namespace mycel::io {

static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes little-endian");

namespace {

using detail::align_up;

constexpr char kMagic[8] = {'M', 'Y', 'C', 'E', 'L', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPreamble = 8 + 4 + 8;  // magic, version, header length
constexpr uint64_t kAlign = 64;
constexpr uint64_t kMaxRank = 64;
// Smallest header entry: name_len, one name byte, dtype, rank, offset, nbytes.
constexpr uint64_t kMinEntry = 4 + 1 + 1 + 4 + 8 + 8;

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

uint32_t crc_update(uint32_t crc, const void* p, uint64_t n) {
  if (n == 0) return crc;  // zlib treats a null buffer as "give me the initial value"
  return static_cast<uint32_t>(
      ::crc32_z(crc, static_cast<const Bytef*>(p), static_cast<size_t>(n)));
}

// Reads little-endian fields from the header, checking each against the bytes left.
class HeaderReader {
 public:
  HeaderReader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_bytes(uint64_t n, const char* what) {
    need(n, what);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t left() const { return b_.size() - pos_; }

 private:
  void need(uint64_t n, const char* what) {
    if (n > left())
      MYCEL_THROW(ValueError, "checkpoint '", path_, "' has a corrupt header: ", what, " needs ", n,
                  " bytes but only ", left(), " are left in the header");
  }
  const std::string& b_;
  const std::string& path_;
  uint64_t pos_ = 0;
};

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t offset, nbytes;
};

// Parses and validates the header against the file layout; returns the entries in file order.
std::vector<Entry> parse_header(const std::string& header, uint64_t file_size,
                                const std::string& path) {
  HeaderReader r(header, path);
  uint64_t count = r.get<uint64_t>("the tensor count");
  if (count > r.left() / kMinEntry)
    MYCEL_THROW(ValueError, "checkpoint '", path, "' has a corrupt header: it claims ", count,
                " tensors but a header of ", header.size(), " bytes holds at most ",
                r.left() / kMinEntry);
  uint64_t data_end = file_size - 4;  // the CRC follows the data
  uint64_t cursor = align_up(kPreamble + header.size(), kAlign);
  std::vector<Entry> entries;
  entries.reserve(count);
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    Entry e;
    uint32_t name_len = r.get<uint32_t>("a name length");
    MYCEL_CHECK(name_len > 0, ValueError, "checkpoint '", path, "': tensor #", i,
                " has an empty name");
    e.name = r.get_bytes(name_len, "a tensor name");
    MYCEL_CHECK(detail::is_utf8(e.name), ValueError, "checkpoint '", path, "': tensor #", i,
                " has a name that is not valid UTF-8");
    std::string where = "checkpoint '" + path + "', tensor '" + e.name + "'";
    MYCEL_CHECK(names.insert(e.name).second, ValueError, where, " appears twice");
    uint8_t code = r.get<uint8_t>("a dtype code");
    MYCEL_CHECK(code < kNumDTypes, ValueError, where, ": unknown dtype code ", int(code),
                " (expected 0..", kNumDTypes - 1, ")");
    e.dtype = static_cast<DType>(code);
    uint32_t rank = r.get<uint32_t>("a rank");
    MYCEL_CHECK(rank <= kMaxRank, ValueError, where, ": rank ", rank, " exceeds the maximum ",
                kMaxRank);
    for (uint32_t k = 0; k < rank; ++k) e.shape.push_back(r.get<int64_t>("a dimension"));
    e.offset = r.get<uint64_t>("a data offset");
    e.nbytes = r.get<uint64_t>("a data length");
    uint64_t expect = detail::checked_nbytes(e.shape, e.dtype, file_size, where);
    MYCEL_CHECK(e.nbytes == expect, ValueError, where, ": data length ", e.nbytes,
                " bytes, but shape ", shape_str(e.shape), " of ", dtype_name(e.dtype), " needs ",
                expect);
    // Tensors lie back to back at 64-byte boundaries, so the only valid offset is the next one.
    MYCEL_CHECK(e.offset == cursor, ValueError, where, ": data offset ", e.offset,
                " is out of place (expected ", cursor, ")");
    MYCEL_CHECK(e.offset <= data_end && e.nbytes <= data_end - e.offset, ValueError, where,
                ": data [", e.offset, ", ", e.offset + e.nbytes, ") lies outside the file's ",
                data_end, " data bytes (truncated file?)");
    cursor = align_up(e.offset + e.nbytes, kAlign);
    if (i + 1 == count) cursor = e.offset + e.nbytes;  // no padding after the last tensor
    entries.push_back(std::move(e));
  }
  MYCEL_CHECK(r.left() == 0, ValueError, "checkpoint '", path, "' has a corrupt header: ", r.left(),
              " unused bytes after the last tensor entry");
  MYCEL_CHECK(cursor == data_end, ValueError, "checkpoint '", path, "' has ", file_size,
              " bytes, but its header describes ", cursor + 4,
              (cursor + 4 > file_size ? " (truncated)" : ""));
  return entries;
}

// Writes the format to `w` (an AtomicWriter, or a StringSink before encryption).
template <class Writer>
void write_ckpt(const std::vector<NamedTensor>& tensors, Writer& w) {
  std::string header;
  put<uint64_t>(header, tensors.size());
  uint64_t cursor = 0;  // data offsets, relative to the aligned data start until known
  std::vector<uint64_t> rel;
  std::unordered_set<std::string> names;
  for (const auto& [name, t] : tensors) {
    MYCEL_CHECK(!name.empty(), ValueError, "save_checkpoint: a tensor has an empty name");
    MYCEL_CHECK(detail::is_utf8(name), ValueError, "save_checkpoint: a name is not valid UTF-8");
    MYCEL_CHECK(names.insert(name).second, ValueError, "save_checkpoint: duplicate name '", name,
                "'");
    MYCEL_CHECK(t.defined(), ValueError, "save_checkpoint: tensor '", name, "' is undefined");
    MYCEL_CHECK(name.size() <= UINT32_MAX, ValueError, "save_checkpoint: name too long");
    MYCEL_CHECK(uint64_t(t.ndim()) <= kMaxRank, ValueError, "save_checkpoint: tensor '", name,
                "' has rank ", t.ndim(), ", more than the format's ", kMaxRank);
    cursor = align_up(cursor, kAlign);
    rel.push_back(cursor);
    cursor += t.nbytes();
  }
  // Entries have a fixed size given the names and ranks, so the header length is known up front.
  uint64_t header_len = header.size();
  for (const auto& [name, t] : tensors) header_len += 4 + name.size() + 1 + 4 + 8 * t.ndim() + 16;
  uint64_t data_start = align_up(kPreamble + header_len, kAlign);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    put<uint32_t>(header, static_cast<uint32_t>(name.size()));
    header += name;
    put<uint8_t>(header, static_cast<uint8_t>(t.dtype()));
    put<uint32_t>(header, static_cast<uint32_t>(t.ndim()));
    for (int64_t d : t.shape()) put<int64_t>(header, d);
    put<uint64_t>(header, data_start + rel[i]);
    put<uint64_t>(header, t.nbytes());
  }

  std::string pre(kMagic, sizeof kMagic);
  put<uint32_t>(pre, kVersion);
  put<uint64_t>(pre, header.size());
  pre += header;
  uint32_t crc = crc_update(0, pre.data(), pre.size());
  w.write(pre.data(), pre.size());
  static const char zeros[kAlign] = {};
  for (const auto& [name, t] : tensors) {
    uint64_t pad = align_up(w.written(), kAlign) - w.written();
    crc = crc_update(crc, zeros, pad);
    w.write(zeros, pad);
    crc = crc_update(crc, t.data(), t.nbytes());
    w.write(t.data(), t.nbytes());
  }
  if (tensors.empty()) {  // the data region still starts at the aligned offset
    uint64_t pad = data_start - w.written();
    crc = crc_update(crc, zeros, pad);
    w.write(zeros, pad);
  }
  w.write(&crc, 4);
}

// The bytes of a file kept in memory (a decrypted checkpoint), read as ReadFile reads a file.
class MemoryFile {
 public:
  MemoryFile(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
  uint64_t size() const { return b_.size(); }
  void read_at(void* dst, uint64_t n, uint64_t offset, const char* what) const {
    if (offset > b_.size() || n > b_.size() - offset)
      MYCEL_THROW(ValueError, "checkpoint '", path_, "' is truncated: ", what, " needs bytes [",
                  offset, ", ", offset + n, ") but the file has ", b_.size(), " bytes");
    if (n > 0) std::memcpy(dst, b_.data() + offset, n);
  }

 private:
  const std::string& b_;
  const std::string& path_;
};

struct StringSink {
  std::string bytes;
  void write(const void* p, uint64_t n) { bytes.append(static_cast<const char*>(p), n); }
  uint64_t written() const { return bytes.size(); }
};

// Reads and validates the format from `f` (a ReadFile or a MemoryFile).
template <class File>
std::vector<NamedTensor> read_ckpt(const File& f, const std::string& path) {
  const uint64_t size = f.size();
  if (size < kPreamble + 4)
    MYCEL_THROW(ValueError, "checkpoint '", path, "' is truncated or not a checkpoint: ", size,
                " bytes, fewer than the minimal ", kPreamble + 4);
  char pre[kPreamble];
  f.read_at(pre, kPreamble, 0, "the preamble");
  if (std::memcmp(pre, kMagic, sizeof kMagic) != 0)
    MYCEL_THROW(ValueError, "'", path,
                is_sealed(std::string_view(pre, kPreamble))
                    ? "' is encrypted: pass dec_key (and dec_mode) to load it"
                    : "' is not a Mycel checkpoint (its first bytes are not \"MYCELCKP\")");
  uint32_t version;
  uint64_t header_len;
  std::memcpy(&version, pre + 8, 4);
  std::memcpy(&header_len, pre + 12, 8);
  MYCEL_CHECK(version == kVersion, ValueError, "checkpoint '", path, "' has format version ",
              version, "; this Mycel reads version ", kVersion);
  MYCEL_CHECK(header_len <= size - kPreamble - 4, ValueError, "checkpoint '", path,
              "' has a corrupt header length ", header_len, ": the file has only ", size, " bytes");
  std::string header(header_len, '\0');
  f.read_at(header.data(), header_len, kPreamble, "the header");
  std::vector<Entry> entries = parse_header(header, size, path);

  // Stream the rest straight into the tensors, checksumming every byte in file order.
  uint32_t crc = crc_update(crc_update(0, pre, kPreamble), header.data(), header.size());
  uint64_t pos = kPreamble + header_len;
  char pad[kAlign];
  std::vector<NamedTensor> out;
  out.reserve(entries.size());
  uint64_t data_start = align_up(pos, kAlign);
  for (const Entry& e : entries) {
    f.read_at(pad, e.offset - pos, pos, "padding");
    crc = crc_update(crc, pad, e.offset - pos);
    Tensor t = Tensor::empty(e.shape, e.dtype);
    f.read_at(t.data(), e.nbytes, e.offset, "tensor data");
    crc = crc_update(crc, t.data(), e.nbytes);
    if (e.dtype == DType::bool_) detail::normalize_bools(t.data(), e.nbytes);
    pos = e.offset + e.nbytes;
    out.push_back({e.name, std::move(t)});
  }
  if (entries.empty()) {
    f.read_at(pad, data_start - pos, pos, "padding");
    crc = crc_update(crc, pad, data_start - pos);
    pos = data_start;
  }
  uint32_t stored;
  f.read_at(&stored, 4, pos, "the checksum");
  if (stored != crc)
    MYCEL_THROW(ValueError, "checkpoint '", path, "' is corrupt: CRC-32 mismatch (stored 0x",
                std::hex, stored, ", computed 0x", crc, ")");
  return out;
}

std::string read_whole(const std::string& path) {
  detail::ReadFile f(path);
  std::string bytes(f.size(), '\0');
  f.read_at(bytes.data(), bytes.size(), 0, "the file");
  return bytes;
}

}  // namespace

void save_ckpt(const std::string& path, const std::vector<NamedTensor>& tensors) {
  detail::AtomicWriter w(path);
  write_ckpt(tensors, w);
  w.commit();
}

void save_ckpt(const std::string& path, const std::vector<NamedTensor>& tensors,
               std::string_view key, CipherMode mode) {
  StringSink plain;
  write_ckpt(tensors, plain);
  std::string sealed = seal(plain.bytes, key, mode, "save_checkpoint");
  detail::AtomicWriter w(path);
  w.write(sealed.data(), sealed.size());
  w.commit();
}

std::vector<NamedTensor> load_ckpt(const std::string& path) {
  detail::ReadFile f(path);
  return read_ckpt(f, path);
}

std::vector<NamedTensor> load_ckpt(const std::string& path, std::string_view key, CipherMode mode) {
  std::string plain = unseal(read_whole(path), key, mode, path);
  return read_ckpt(MemoryFile(plain, path), path);
}

}  // namespace mycel::io
