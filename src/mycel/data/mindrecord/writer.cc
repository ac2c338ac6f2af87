// MindRecord writer (layout in format.h).
#include "mycel/data/mindrecord/writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <random>

#include "mycel/core/fault.h"
#include "mycel/data/mindrecord/commit.h"
#include "mycel/data/mindrecord/io.h"

namespace mycel::data::mr {

namespace {
// A key of an index field for one row; only the member matching the field type is used.
struct Key {
  int64_t i = 0;
  double d = 0;
  std::string s;
  uint64_t row = 0;
};
}  // namespace

struct Writer::Shard {
  std::string final_path, tmp_path;
  File file;
  std::string page;                    // packed rows of the open page
  std::vector<uint64_t> page_rows;     // their lengths
  std::vector<uint64_t> page_row_ids;  // their local row numbers
  std::vector<RowLoc> locs;
  std::vector<std::vector<Key>> keys;  // per index field
  uint64_t header_len = 0, data_offset = 0, num_pages = 0;
  uint32_t header_crc = 0;
};

Writer::Writer(std::string file_name, uint32_t shard_num, bool overwrite) : overwrite_(overwrite) {
  MYCEL_CHECK(!file_name.empty(), ValueError, "[FileWriter] file_name is empty");
  MYCEL_CHECK(shard_num >= 1 && shard_num <= kMaxShards, ValueError, "[FileWriter] shard_num ",
              shard_num, " is outside [1, ", kMaxShards, "]");
  MYCEL_CHECK(file_name.back() != '/', ValueError, "[FileWriter] file_name '", file_name,
              "' names a directory; give a file name");
  for (uint32_t i = 0; i < shard_num; ++i)
    paths_.push_back(shard_num == 1 ? file_name : file_name + std::to_string(i));
  std::string dir = dir_name(file_name);
  MYCEL_CHECK(path_exists(dir), ValueError, "[FileWriter] directory '", dir, "' of '", file_name,
              "' does not exist");
  if (!overwrite)
    for (const auto& p : paths_)
      MYCEL_CHECK(!path_exists(p), ValueError, "[FileWriter] '", p,
                  "' already exists; pass overwrite=True to replace it");
}

Writer::~Writer() {
  if (!committed_) {
    try {
      abort();
    } catch (...) {  // a destructor must not throw; abort only removes temporary files
    }
  }
}

void Writer::set_page_size(uint32_t bytes) {
  MYCEL_CHECK(shards_.empty(), ValueError,
              "[FileWriter] set_page_size must come before the first row");
  MYCEL_CHECK(bytes >= kMinPageSize && bytes <= kMaxPageSize, ValueError, "[FileWriter] page size ",
              bytes, " is outside [", kMinPageSize, ", ", kMaxPageSize, "]");
  page_size_ = bytes;
}

int Writer::add_schema(std::vector<FieldSpec> fields, std::string desc) {
  MYCEL_CHECK(!has_schema_, ValueError,
              "[FileWriter] add_schema was already called; a file has one schema");
  validate_schema(fields, {}, "[FileWriter] add_schema");
  fields_ = std::move(fields);
  desc_ = std::move(desc);
  has_schema_ = true;
  return 0;
}

void Writer::add_index(const std::vector<std::string>& names) {
  MYCEL_CHECK(has_schema_, ValueError,
              "[FileWriter] add_index needs a schema; call add_schema first");
  MYCEL_CHECK(shards_.empty(), ValueError, "[FileWriter] add_index must come before the first row");
  std::vector<uint32_t> index = index_;
  for (const auto& n : names) {
    auto it = std::find_if(fields_.begin(), fields_.end(),
                           [&](const FieldSpec& f) { return f.name == n; });
    MYCEL_CHECK(it != fields_.end(), ValueError, "[FileWriter] add_index: field '", n,
                "' is not in the schema");
    index.push_back(static_cast<uint32_t>(it - fields_.begin()));
  }
  validate_schema(fields_, index, "[FileWriter] add_index");
  index_ = std::move(index);
}

void Writer::open_shards() {
  std::random_device rd;
  uint64_t set_id = (uint64_t(rd()) << 32) ^ rd();
  Header h;
  h.set_id = set_id;
  h.shard_num = static_cast<uint32_t>(paths_.size());
  h.page_size = page_size_;
  for (const auto& p : paths_) h.shard_names.push_back(base_name(p));
  h.desc = desc_;
  h.fields = fields_;
  h.index_fields = index_;
  const std::string suffix = unique_temp_suffix();  // two writers of one name never share a file
  for (uint32_t i = 0; i < paths_.size(); ++i) {
    auto s = std::make_unique<Shard>();
    s->final_path = paths_[i];
    s->tmp_path = paths_[i] + suffix;
    s->keys.resize(index_.size());
    shards_.push_back(std::move(s));  // registered first, so abort() removes a half-made file
    Shard& sh = *shards_.back();
    sh.file = File::create(sh.tmp_path);
    h.shard_id = i;
    std::string bytes = encode_header(h);
    sh.header_len = bytes.size();
    sh.header_crc = crc32c(bytes.data(), bytes.size());
    sh.data_offset = (bytes.size() + 7) / 8 * 8;
    bytes.resize(sh.data_offset, '\0');
    sh.file.write_all(bytes.data(), bytes.size());
  }
}

void Writer::write_row(const std::vector<FieldValue>& values) {
  MYCEL_CHECK(has_schema_, ValueError,
              "[FileWriter] write_raw_data needs a schema; call add_schema first");
  MYCEL_CHECK(!committed_ && !aborted_, ValueError, "[FileWriter] the writer was already ",
              committed_ ? "committed" : "aborted");
  MYCEL_CHECK(values.size() == fields_.size(), ValueError, "[FileWriter] row ", rows_, " has ",
              values.size(), " values for ", fields_.size(), " schema fields");
  // Validate everything and encode the row before touching any shard state.
  std::string row;
  for (size_t k = 0; k < fields_.size(); ++k) {
    const FieldSpec& f = fields_[k];
    const FieldValue& v = values[k];
    if (!is_numeric(f.type)) {
      row.append(reinterpret_cast<const char*>(&v.nbytes), 8);
      row.append(static_cast<const char*>(v.data), v.nbytes);
      continue;
    }
    size_t item = itemsize(field_dtype(f.type));
    Shape shape = f.has_shape ? v.shape : Shape{};
    if (f.has_shape) {
      bool ok = v.shape.size() == f.shape.size();
      for (size_t d = 0; ok && d < f.shape.size(); ++d)
        ok = f.shape[d] == -1 ? v.shape[d] >= 0 : v.shape[d] == f.shape[d];
      MYCEL_CHECK(ok, ValueError, "[FileWriter] row ", rows_, ", field '", f.name,
                  "': expected shape ", shape_str(f.shape), ", got ", shape_str(v.shape));
    } else {
      MYCEL_CHECK(v.shape.empty(), ValueError, "[FileWriter] row ", rows_, ", field '", f.name,
                  "': expected a scalar, got shape ", shape_str(v.shape));
    }
    uint64_t want = static_cast<uint64_t>(numel(shape)) * item;
    MYCEL_CHECK(v.nbytes == want, ValueError, "[FileWriter] row ", rows_, ", field '", f.name,
                "': expected ", want, " bytes of ", field_type_name(f.type), ", got ", v.nbytes);
    for (size_t d = 0; d < f.shape.size(); ++d)
      if (f.shape[d] == -1) row.append(reinterpret_cast<const char*>(&shape[d]), 8);
    row.append(static_cast<const char*>(v.data), v.nbytes);
  }
  if (shards_.empty()) open_shards();
  Shard& s = *shards_[static_cast<size_t>(rows_ % static_cast<int64_t>(shards_.size()))];
  uint64_t local = s.locs.size();
  for (size_t j = 0; j < index_.size(); ++j) {
    const FieldSpec& f = fields_[index_[j]];
    const FieldValue& v = values[index_[j]];
    Key key;
    key.row = local;
    switch (f.type) {
      case FieldType::int32:
        key.i = *static_cast<const int32_t*>(v.data);
        break;
      case FieldType::int64:
        key.i = *static_cast<const int64_t*>(v.data);
        break;
      case FieldType::float32:
        key.d = *static_cast<const float*>(v.data);
        break;
      case FieldType::float64:
        key.d = *static_cast<const double*>(v.data);
        break;
      default:
        key.s.assign(static_cast<const char*>(v.data), v.nbytes);
    }
    s.keys[j].push_back(std::move(key));
  }
  s.locs.push_back({});
  uint64_t capacity = page_size_ - kPageHeaderSize;
  auto fits = [&](size_t nrows, uint64_t data) { return 8 * (nrows + 1) + data <= capacity; };
  if (!fits(1, row.size())) {
    write_overflow(s, row);
  } else {
    if (!fits(s.page_rows.size() + 1, s.page.size() + row.size())) flush_page(s);
    s.page.append(row);
    s.page_rows.push_back(row.size());
    s.page_row_ids.push_back(local);
  }
  ++rows_;
}

// Emits one page unit: header, offsets, data, zero padding; the CRC covers bytes [8, end).
static std::string make_unit(uint64_t n_pages, uint64_t page_size,
                             const std::vector<uint64_t>& lens, const std::string& data,
                             std::vector<uint64_t>* offsets) {
  ByteWriter b;
  b.put(kPageMagic);
  b.put<uint32_t>(0);
  b.put<uint32_t>(static_cast<uint32_t>(n_pages));
  b.put<uint32_t>(static_cast<uint32_t>(lens.size()));
  uint64_t off = kPageHeaderSize + 8 * (lens.size() + 1);
  for (uint64_t len : lens) {
    offsets->push_back(off);
    b.put(off);
    off += len;
  }
  b.put(off);
  std::string& u = b.str();
  u.append(data);
  u.resize(n_pages * page_size, '\0');
  uint32_t crc = crc32c(u.data() + 8, u.size() - 8);
  std::memcpy(u.data() + 4, &crc, 4);
  return std::move(u);
}

void Writer::flush_page(Shard& s) {
  if (s.page_rows.empty()) return;
  std::vector<uint64_t> offsets;
  std::string unit = make_unit(1, page_size_, s.page_rows, s.page, &offsets);
  for (size_t r = 0; r < s.page_rows.size(); ++r)
    s.locs[s.page_row_ids[r]] = {s.num_pages, offsets[r], s.page_rows[r]};
  s.file.write_all(unit.data(), unit.size());
  s.num_pages += 1;
  s.page.clear();
  s.page_rows.clear();
  s.page_row_ids.clear();
}

void Writer::write_overflow(Shard& s, const std::string& row) {
  flush_page(s);  // keep rows in file order, so the overflow run follows the open page
  uint64_t need = kPageHeaderSize + 16 + row.size();
  uint64_t n_pages = (need + page_size_ - 1) / page_size_;
  MYCEL_CHECK(n_pages <= UINT32_MAX, ValueError, "[FileWriter] row ", rows_, " of ", row.size(),
              " bytes is too large");
  std::vector<uint64_t> offsets;
  std::string unit = make_unit(n_pages, page_size_, {row.size()}, row, &offsets);
  s.locs.back() = {s.num_pages, offsets[0], row.size()};
  s.file.write_all(unit.data(), unit.size());
  s.num_pages += n_pages;
}

void Writer::finish_shard(Shard& s) {
  flush_page(s);
  ByteWriter b;
  b.put<uint64_t>(s.locs.size());
  for (const RowLoc& l : s.locs) {
    b.put(l.page);
    b.put(l.offset);
    b.put(l.length);
  }
  for (size_t j = 0; j < index_.size(); ++j) {
    FieldType t = fields_[index_[j]].type;
    auto& keys = s.keys[j];
    std::stable_sort(keys.begin(), keys.end(), [t](const Key& a, const Key& b) {
      if (t == FieldType::int32 || t == FieldType::int64) return a.i < b.i;
      if (t == FieldType::string) return a.s < b.s;
      return a.d < b.d || (!std::isnan(a.d) && std::isnan(b.d));  // NaN sorts last
    });
    b.put<uint64_t>(keys.size());
    for (const Key& k : keys) {
      if (t == FieldType::int32 || t == FieldType::int64)
        b.put(k.i);
      else if (t == FieldType::string)
        b.put_str(k.s);
      else
        b.put(k.d);
      b.put(k.row);
    }
  }
  Footer f;
  f.data_offset = s.data_offset;
  f.num_pages = s.num_pages;
  f.index_offset = s.data_offset + s.num_pages * page_size_;
  f.index_len = b.str().size();
  f.num_rows = s.locs.size();
  f.header_crc = s.header_crc;
  f.index_crc = crc32c(b.str().data(), b.str().size());
  std::string footer = encode_footer(f);
  s.file.write_all(b.str().data(), b.str().size());
  s.file.write_all(footer.data(), footer.size());
  s.file.sync();
  s.file.close();
}

void Writer::commit() {
  MYCEL_CHECK(has_schema_, ValueError, "[FileWriter] commit needs a schema; call add_schema first");
  MYCEL_CHECK(!committed_ && !aborted_, ValueError, "[FileWriter] the writer was already ",
              committed_ ? "committed" : "aborted");
  const std::string dir = dir_name(paths_[0]);
  // file_name itself: the only path, or shard 0's path without its "0"
  const std::string set_name =
      paths_.size() == 1 ? paths_[0] : paths_[0].substr(0, paths_[0].size() - 1);
  std::unique_ptr<DirLock> lock;
  try {
    if (shards_.empty()) open_shards();  // a schema with no rows is a valid, empty file set
    fault_point("mindrecord_commit:begin");
    for (auto& s : shards_) finish_shard(*s);
    fault_point("mindrecord_commit:shards_synced");
    // One commit at a time per directory; a killed one is finished first, and its temporary
    // files (and those of writers killed before committing) are removed.
    lock = std::make_unique<DirLock>(dir);
    recover_commit(set_name);
    for (const auto& p : paths_) remove_dead_temps(p);
    remove_dead_temps(commit_record_path(set_name));
    if (!overwrite_)  // another writer may have published this name since the constructor checked
      for (const auto& p : paths_)
        MYCEL_CHECK(!path_exists(p), ValueError, "[FileWriter] '", p,
                    "' was written by another writer while this one was writing; pass "
                    "overwrite=True to replace it");
    if (shards_.size() > 1) {
      std::vector<std::pair<std::string, std::string>> pairs;
      for (auto& s : shards_) pairs.emplace_back(s->final_path, s->tmp_path);
      write_commit_record(set_name, pairs);  // the commit point
    }
  } catch (...) {
    abort();
    throw;
  }
  // Committed: from here a failure must not remove the temporary files the record names.
  committed_ = true;
  fault_point("mindrecord_commit:committed");
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& s = *shards_[i];
    if (::rename(s.tmp_path.c_str(), s.final_path.c_str()) != 0)
      MYCEL_THROW(RuntimeError, "[FileWriter] cannot rename '", s.tmp_path, "' to '", s.final_path,
                  "': ", std::strerror(errno),
                  shards_.size() > 1 ? "; the next commit in the directory finishes it" : "");
    fault_point(("mindrecord_commit:renamed" + std::to_string(i)).c_str());
  }
  sync_dir(dir);
  if (shards_.size() > 1) {
    ::unlink(commit_record_path(set_name).c_str());
    fault_point("mindrecord_commit:record_removed");
    sync_dir(dir);
  }
  shards_.clear();
}

void Writer::abort() {
  if (committed_) return;
  aborted_ = true;
  for (auto& s : shards_) {
    s->file = File();
    ::unlink(s->tmp_path.c_str());
  }
  shards_.clear();
}

}  // namespace mycel::data::mr
