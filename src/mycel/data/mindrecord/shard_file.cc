// One MindRecord shard: open-time validation of footer, header and index; page CRC on first read.
#include <algorithm>

#include "mycel/data/mindrecord/reader.h"

namespace mycel::data::mr {

ShardFile::ShardFile(const std::string& path) : file_(File::open_read(path)) {
  const uint64_t size = file_.size();
  // Identify the file before trusting anything in it.
  char head[16] = {};
  uint64_t n = std::min<uint64_t>(size, 16);
  file_.pread_exact(head, n, 0, "the header");
  if (n < 8 || std::memcmp(head, kMagic, 8) != 0)
    MYCEL_THROW(RuntimeError, path, ": not a MindRecord file (magic \"MYCELMR1\" missing)");
  if (size < 16 + kFooterSize)
    MYCEL_THROW(RuntimeError, path, ": truncated MindRecord file (", size, " bytes)");
  char foot[kFooterSize];
  file_.pread_exact(foot, kFooterSize, size - kFooterSize, "the footer");
  footer_ = decode_footer(foot, path);

  // Header: its length is bounded by the limit and the file before anything is allocated.
  uint32_t body_len;
  std::memcpy(&body_len, head + 12, 4);
  uint64_t header_end = 16 + uint64_t(body_len);
  if (body_len > kMaxHeaderBytes || header_end + kFooterSize > size)
    MYCEL_THROW(RuntimeError, path, ": corrupt header: length ", body_len,
                " does not fit in the file of ", size, " bytes");
  std::string hbytes(header_end, '\0');
  file_.pread_exact(hbytes.data(), header_end, 0, "the header");
  uint32_t hcrc = crc32c(hbytes.data(), hbytes.size());
  if (hcrc != footer_.header_crc)
    MYCEL_THROW(RuntimeError, path, ": header checksum mismatch (stored ", footer_.header_crc,
                ", computed ", hcrc, "): the file is corrupt");
  header_ = decode_header(hbytes.data(), hbytes.size(), path);

  // The regions must tile the file exactly: header, pages, index, footer.
  const Footer& f = footer_;
  const uint64_t ps = header_.page_size;
  bool ok = f.data_offset == (header_end + 7) / 8 * 8 && f.num_pages <= size / ps &&
            f.index_offset == f.data_offset + f.num_pages * ps && f.index_len <= size &&
            f.index_offset <= size && f.index_offset + f.index_len + kFooterSize == size;
  if (!ok)
    MYCEL_THROW(RuntimeError, path, ": corrupt footer: data at ", f.data_offset, " with ",
                f.num_pages, " pages of ", ps, " bytes, index at ", f.index_offset, " (",
                f.index_len, " bytes) do not match the file size ", size);
  if (f.num_rows > f.index_len / kRowEntrySize)
    MYCEL_THROW(RuntimeError, path, ": corrupt footer: ", f.num_rows,
                " rows cannot fit in an index of ", f.index_len, " bytes");

  std::string ibytes(f.index_len, '\0');
  file_.pread_exact(ibytes.data(), ibytes.size(), f.index_offset, "the index");
  uint32_t icrc = crc32c(ibytes.data(), ibytes.size());
  if (icrc != f.index_crc)
    MYCEL_THROW(RuntimeError, path, ": index checksum mismatch (stored ", f.index_crc,
                ", computed ", icrc, "): the file is corrupt");
  ByteReader r(ibytes.data(), ibytes.size(), path + ": index");
  uint64_t rows = r.get_count("row count", kRowEntrySize);
  if (rows != f.num_rows) r.fail("row count", rows, " rows but the footer says ", f.num_rows);
  const uint64_t data_len = f.num_pages * ps;
  locs_.resize(rows);
  for (uint64_t i = 0; i < rows; ++i) {
    RowLoc& l = locs_[i];
    l.page = r.get<uint64_t>("row page");
    l.offset = r.get<uint64_t>("row offset");
    l.length = r.get<uint64_t>("row length");
    bool in = l.page < f.num_pages && l.offset >= kPageHeaderSize + 16 && l.offset <= data_len &&
              l.length <= data_len && l.page * ps + l.offset + l.length <= data_len;
    if (!in)
      r.fail("row location", "row ", i, " at page ", l.page, " offset ", l.offset, " length ",
             l.length, " lies outside the ", f.num_pages, " pages");
  }
  for (uint32_t fi : header_.index_fields) {
    FieldType t = header_.fields[fi].type;
    uint64_t cnt = r.get_count("index key count", 12);
    if (cnt != rows) r.fail("index key count", cnt, " keys for ", rows, " rows");
    std::vector<IndexKey> keys(cnt);
    for (IndexKey& k : keys) {
      if (t == FieldType::int32 || t == FieldType::int64)
        k.i = r.get<int64_t>("index key");
      else if (t == FieldType::string)
        k.s = r.get_str("index key");
      else
        k.d = r.get<double>("index key");
      k.row = r.get<uint64_t>("index row");
      if (k.row >= rows) r.fail("index row", k.row, " >= ", rows, " rows");
    }
    keys_.push_back(std::move(keys));
  }
  if (r.remaining() != 0) r.fail("index length", r.remaining(), " unexpected trailing bytes");
  verified_.reset(new std::atomic<uint32_t>[f.num_pages]());
}

// Reads the unit starting at `page` whole, checks its CRC and row table; returns its page count.
uint32_t ShardFile::verify_unit(uint64_t page, std::string* unit) const {
  const uint64_t ps = header_.page_size;
  const uint64_t at = footer_.data_offset + page * ps;
  char h[kPageHeaderSize];
  file_.pread_exact(h, sizeof h, at, "a page header");
  uint32_t magic, crc, n_pages, row_count;
  std::memcpy(&magic, h, 4);
  std::memcpy(&crc, h + 4, 4);
  std::memcpy(&n_pages, h + 8, 4);
  std::memcpy(&row_count, h + 12, 4);
  if (magic != kPageMagic || n_pages == 0 || n_pages > footer_.num_pages - page)
    MYCEL_THROW(RuntimeError, path(), ": page ", page, " is corrupt (bad page header: magic ",
                magic, ", ", n_pages, " pages)");
  unit->resize(n_pages * ps);
  file_.pread_exact(unit->data(), unit->size(), at, "a page");
  uint32_t actual = crc32c(unit->data() + 8, unit->size() - 8);
  if (actual != crc)
    MYCEL_THROW(RuntimeError, path(), ": page ", page, " checksum mismatch (stored ", crc,
                ", computed ", actual, "): the file is corrupt");
  uint64_t table_end = kPageHeaderSize + 8 * (uint64_t(row_count) + 1);
  if (table_end > unit->size())
    MYCEL_THROW(RuntimeError, path(), ": page ", page, " is corrupt (", row_count, " rows)");
  uint64_t prev = table_end;
  for (uint64_t i = 0; i <= row_count; ++i) {
    uint64_t off;
    std::memcpy(&off, unit->data() + kPageHeaderSize + 8 * i, 8);
    if (off < prev || off > unit->size())
      MYCEL_THROW(RuntimeError, path(), ": page ", page, " is corrupt (row offset ", off, ")");
    prev = off;
  }
  verified_[page].store(n_pages, std::memory_order_release);
  return n_pages;
}

std::string ShardFile::read_row(uint64_t r) const {
  const RowLoc& l = locs_[r];
  const uint64_t ps = header_.page_size;
  uint32_t n_pages = verified_[l.page].load(std::memory_order_acquire);
  std::string unit;
  if (n_pages == 0) n_pages = verify_unit(l.page, &unit);
  if (l.offset + l.length > n_pages * ps)
    MYCEL_THROW(RuntimeError, path(), ": row ", r, " extends past the end of page ", l.page,
                " (corrupt index)");
  if (!unit.empty()) return unit.substr(l.offset, l.length);
  std::string out(l.length, '\0');
  file_.pread_exact(out.data(), out.size(), footer_.data_offset + l.page * ps + l.offset, "a row");
  return out;
}

}  // namespace mycel::data::mr
