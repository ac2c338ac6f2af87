// MindRecord writer: schema, rows distributed round-robin over shards, pages, index, atomic commit.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mycel/data/mindrecord/format.h"

namespace mycel::data::mr {

/// One field of one row: raw little-endian elements (or the bytes of a bytes/string field) and,
/// for a numeric field with a shape, this value's full shape.
struct FieldValue {
  const void* data = nullptr;
  uint64_t nbytes = 0;
  Shape shape;
};

/// Writes one file (or shard_num files) atomically: everything goes to "<name>.tmp-<pid>-<hex>"
/// (unique per writer) and is renamed to the final names only by commit(), which publishes a
/// shard set through a commit record (commit.h) so readers see the whole old set or the whole new
/// one even if the process is killed mid-commit. A writer destroyed before commit() removes its
/// temporary files, so no partial file ever carries a final name.
class Writer {
 public:
  /// Shard files are file_name (shard_num == 1) or file_name + "0" .. + str(shard_num - 1).
  /// Throws ValueError if a final file exists and overwrite is false.
  Writer(std::string file_name, uint32_t shard_num = 1, bool overwrite = false);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Page size in bytes (before the first row is written).
  void set_page_size(uint32_t bytes);
  /// Sets the schema (once, before any row); returns the schema id (0).
  int add_schema(std::vector<FieldSpec> fields, std::string desc = "");
  /// Marks fields as searchable by value (scalar numeric or string), before any row.
  void add_index(const std::vector<std::string>& names);
  /// Appends a row whose values follow the schema's field order; validates sizes and shapes.
  void write_row(const std::vector<FieldValue>& values);
  /// Finishes every shard (pages, index, footer), fsyncs and publishes them under the final
  /// names (serialized with other commits in the directory). Fault points (MYCEL_FAULT):
  /// mindrecord_commit:begin, :shards_synced, :record_written, :committed, :renamed<i>,
  /// :record_removed.
  void commit();
  /// Drops everything written so far and removes the temporary files (idempotent).
  void abort();

  const std::vector<FieldSpec>& fields() const { return fields_; }
  const std::vector<std::string>& file_names() const { return paths_; }
  int64_t rows_written() const { return rows_; }
  bool committed() const { return committed_; }

 private:
  struct Shard;
  void open_shards();
  void flush_page(Shard& s);
  void write_overflow(Shard& s, const std::string& row);
  void finish_shard(Shard& s);

  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<FieldSpec> fields_;
  std::vector<uint32_t> index_;
  std::string desc_;
  uint32_t page_size_ = kDefaultPageSize;
  bool overwrite_ = false, has_schema_ = false, committed_ = false, aborted_ = false;
  int64_t rows_ = 0;
};

}  // namespace mycel::data::mr
