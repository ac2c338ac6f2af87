// MindRecord reader: validates a file set on open, then serves rows by global index from any
// thread (pread; each page's CRC is checked the first time it is read).
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/data/mindrecord/format.h"
#include "mycel/data/mindrecord/io.h"

namespace mycel::data::mr {

/// A key of an index field: i for int fields, d for float fields, s for string fields.
struct IndexKey {
  int64_t i = 0;
  double d = 0;
  std::string s;
  uint64_t row = 0;
};

/// One shard file, fully validated on open (header/index checksums, every offset in bounds).
class ShardFile {
 public:
  /// Opens and validates `path`; throws RuntimeError naming the file on any problem.
  explicit ShardFile(const std::string& path);

  const Header& header() const { return header_; }
  const std::string& path() const { return file_.path(); }
  uint64_t num_rows() const { return locs_.size(); }
  /// The raw bytes of local row `r` (checks the page's CRC on its first read).
  std::string read_row(uint64_t r) const;
  /// Sorted keys of index field j (header().index_fields[j]).
  const std::vector<IndexKey>& keys(size_t j) const { return keys_[j]; }

 private:
  uint32_t verify_unit(uint64_t page, std::string* unit) const;
  File file_;
  Header header_;
  Footer footer_;
  std::vector<RowLoc> locs_;
  std::vector<std::vector<IndexKey>> keys_;
  // Per page: 0 until the unit starting there passed its CRC check, then its length in pages.
  std::unique_ptr<std::atomic<uint32_t>[]> verified_;
};

/// Rows of a set of shard files, in write order when the files are one complete shard set and
/// in file order otherwise.
class Reader {
 public:
  /// `expand`: files holds one path whose header lists its sibling shards, which are opened too.
  /// `columns`: names to return (all fields, in schema order, when empty).
  Reader(const std::vector<std::string>& files, bool expand,
         const std::vector<std::string>& columns);

  const std::vector<FieldSpec>& fields() const { return shards_[0]->header().fields; }
  const Header& header() const { return shards_[0]->header(); }
  /// Schema numbers of the selected columns.
  const std::vector<size_t>& columns() const { return columns_; }
  std::vector<std::string> column_names() const;
  std::vector<std::string> file_names() const;
  int64_t size() const { return total_; }
  /// Selected columns of global row `index` (0-d tensors for scalars, uint8 for string/bytes).
  std::vector<Tensor> get(int64_t index) const;
  /// Global rows whose index field `field` equals key (sorted ascending).
  std::vector<int64_t> find(const std::string& field, const IndexKey& key) const;

 private:
  std::vector<std::shared_ptr<ShardFile>> shards_;
  std::vector<int64_t> starts_;  // first global row of each shard when concatenated
  std::vector<size_t> columns_;
  bool interleaved_ = false;
  int64_t total_ = 0;
};

}  // namespace mycel::data::mr
