// MindRecord reader over a set of shard files: global row order, column selection, row decoding.
#include "mycel/data/mindrecord/reader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "mycel/core/fault.h"
#include "mycel/data/mindrecord/commit.h"

namespace mycel::data::mr {

namespace {
std::string join_path(const std::string& dir, const std::string& name) {
  return dir == "." ? name : dir + "/" + name;
}

// Opens shard `path` as the last commit published it: through a pending commit record when a
// commit was cut short after its commit point (commit.h).
std::shared_ptr<ShardFile> open_shard(const std::string& path) {
  std::string target = committed_path(path);
  if (target != path) {
    try {
      return std::make_shared<ShardFile>(target);
    } catch (const RuntimeError&) {
      if (path_exists(target)) throw;  // else a commit finished meanwhile: it is at `path` now
    }
  }
  return std::make_shared<ShardFile>(path);
}

// The shards of the set that `first_path` belongs to, in shard order; empty (with `why`) when a
// sibling belongs to another set, as happens when a commit publishes a new set between the
// opening of the first shard and of its siblings.
std::vector<std::shared_ptr<ShardFile>> open_set(const std::string& first_path, std::string* why) {
  std::vector<std::shared_ptr<ShardFile>> out;
  auto first = open_shard(first_path);
  fault_point("mindrecord_read:first_opened");
  const Header& h = first->header();
  std::string dir = dir_name(first_path);
  for (uint32_t s = 0; s < h.shard_num; ++s) {
    if (s == h.shard_id) {
      out.push_back(first);
      continue;
    }
    std::string p = join_path(dir, h.shard_names[s]);
    MYCEL_CHECK(path_exists(p) || committed_path(p) != p, RuntimeError, first_path, ": shard ", s,
                " of ", h.shard_num, " ('", p, "') is missing");
    out.push_back(open_shard(p));
    const Header& o = out.back()->header();
    if (o.set_id != h.set_id || o.shard_id != s) {
      *why = p + ": is not shard " + std::to_string(s) + " of the file set of " + first_path;
      return {};
    }
  }
  return out;
}
}  // namespace

Reader::Reader(const std::vector<std::string>& files, bool expand,
               const std::vector<std::string>& columns) {
  MYCEL_CHECK(!files.empty(), ValueError, "[MindDataset] dataset_files is empty");
  if (expand) {
    MYCEL_CHECK(files.size() == 1, ValueError, "[MindDataset] expected one file to expand");
    // A set replaced while we open it mixes two sets: open it again, the commit is short.
    std::string why;
    for (int attempt = 0; attempt < 3 && shards_.empty(); ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      shards_ = open_set(files[0], &why);
    }
    MYCEL_CHECK(!shards_.empty(), RuntimeError, why);
    interleaved_ = shards_[0]->header().shard_num > 1;
  } else {
    for (const auto& f : files) shards_.push_back(open_shard(f));
    // Exactly one complete shard set, in any order: read it in write order.
    const Header& h0 = shards_[0]->header();
    std::set<uint32_t> ids;
    bool one_set = shards_.size() == h0.shard_num && h0.shard_num > 1;
    for (auto& s : shards_)
      one_set =
          one_set && s->header().set_id == h0.set_id && ids.insert(s->header().shard_id).second;
    if (one_set) {
      std::sort(shards_.begin(), shards_.end(),
                [](auto& a, auto& b) { return a->header().shard_id < b->header().shard_id; });
      interleaved_ = true;
    }
  }
  for (auto& s : shards_)
    MYCEL_CHECK(s->header().fields == fields(), ValueError, "[MindDataset] ", s->path(),
                " has a different schema from ", shards_[0]->path());
  for (auto& s : shards_) {
    starts_.push_back(total_);
    total_ += static_cast<int64_t>(s->num_rows());
  }
  if (interleaved_) {
    // Round-robin writing gives shard s exactly ceil((total - s) / n) rows.
    int64_t n = static_cast<int64_t>(shards_.size());
    for (int64_t s = 0; s < n; ++s)
      MYCEL_CHECK(static_cast<int64_t>(shards_[s]->num_rows()) == (total_ - s + n - 1) / n,
                  RuntimeError, shards_[s]->path(), ": holds ", shards_[s]->num_rows(),
                  " rows, which does not match round-robin writing of ", total_, " rows");
  }
  if (columns.empty()) {
    for (size_t k = 0; k < fields().size(); ++k) columns_.push_back(k);
  } else {
    for (const auto& c : columns) {
      auto it = std::find_if(fields().begin(), fields().end(),
                             [&](const FieldSpec& f) { return f.name == c; });
      if (it == fields().end()) {
        std::string have;
        for (auto& f : fields()) have += (have.empty() ? "" : ", ") + f.name;
        MYCEL_THROW(ValueError, "[MindDataset] column '", c, "' is not in ", shards_[0]->path(),
                    " (fields: ", have, ")");
      }
      columns_.push_back(static_cast<size_t>(it - fields().begin()));
    }
  }
}

std::vector<std::string> Reader::column_names() const {
  std::vector<std::string> out;
  for (size_t k : columns_) out.push_back(fields()[k].name);
  return out;
}

std::vector<std::string> Reader::file_names() const {
  std::vector<std::string> out;
  for (auto& s : shards_) out.push_back(s->path());
  return out;
}

std::vector<Tensor> Reader::get(int64_t index) const {
  MYCEL_CHECK(index >= 0 && index < total_, IndexError, "[MindDataset] row ", index,
              " out of range for ", total_, " rows");
  size_t s;
  uint64_t local;
  if (interleaved_) {
    s = static_cast<size_t>(index % static_cast<int64_t>(shards_.size()));
    local = static_cast<uint64_t>(index / static_cast<int64_t>(shards_.size()));
  } else {
    s = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) -
                            starts_.begin() - 1);
    local = static_cast<uint64_t>(index - starts_[s]);
  }
  const ShardFile& sh = *shards_[s];
  std::string bytes = sh.read_row(local);
  ByteReader r(bytes.data(), bytes.size(), sh.path() + ": row " + std::to_string(local));
  const auto& fs = fields();
  // Decode fields in schema order, keeping the selected ones.
  std::vector<Tensor> decoded(fs.size());
  size_t last = *std::max_element(columns_.begin(), columns_.end());
  for (size_t k = 0; k <= last; ++k) {
    const FieldSpec& f = fs[k];
    Shape shape;
    uint64_t nbytes;
    if (!is_numeric(f.type)) {
      nbytes = r.get<uint64_t>("field length");
      if (nbytes > r.remaining()) r.fail("field length", f.name, " claims ", nbytes, " bytes");
      shape = {static_cast<int64_t>(nbytes)};
    } else {
      uint64_t count = 1;
      for (int64_t d : f.shape) {
        int64_t dim = d == -1 ? r.get<int64_t>("field dim") : d;
        if (dim < 0) r.fail("field dim", f.name, " has dim ", dim);
        if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count))
          r.fail("field dim", f.name, " has too many elements");
        shape.push_back(dim);
      }
      uint64_t item = itemsize(field_dtype(f.type));
      if (count > r.remaining() / item)
        r.fail("field data", f.name, " needs ", count, " elements of ", item, " bytes");
      nbytes = count * item;
    }
    const char* p = r.take(nbytes, "field data");
    if (std::find(columns_.begin(), columns_.end(), k) == columns_.end()) continue;
    Tensor t = Tensor::empty(shape, field_dtype(f.type));
    if (nbytes) std::memcpy(t.data(), p, nbytes);
    decoded[k] = std::move(t);
  }
  if (last + 1 == fs.size() && r.remaining() != 0)
    r.fail("row length", r.remaining(), " bytes left after the last field");
  std::vector<Tensor> out;
  for (size_t k : columns_) out.push_back(decoded[k]);
  return out;
}

std::vector<int64_t> Reader::find(const std::string& field, const IndexKey& key) const {
  auto it = std::find_if(fields().begin(), fields().end(),
                         [&](const FieldSpec& f) { return f.name == field; });
  MYCEL_CHECK(it != fields().end(), ValueError, "[MindRecord] field '", field,
              "' is not in the schema");
  const uint32_t fi = static_cast<uint32_t>(it - fields().begin());
  const FieldType t = it->type;
  auto less = [t](const IndexKey& a, const IndexKey& b) {
    if (t == FieldType::int32 || t == FieldType::int64) return a.i < b.i;
    if (t == FieldType::string) return a.s < b.s;
    return a.d < b.d || (!std::isnan(a.d) && std::isnan(b.d));
  };
  std::vector<int64_t> out;
  int64_t n = static_cast<int64_t>(shards_.size());
  for (size_t s = 0; s < shards_.size(); ++s) {
    const auto& idx = shards_[s]->header().index_fields;  // files of different sets may differ
    auto j = std::find(idx.begin(), idx.end(), fi);
    MYCEL_CHECK(j != idx.end(), ValueError, "[MindRecord] field '", field,
                "' is not an index field of ", shards_[s]->path(),
                " (add it with FileWriter.add_index)");
    const auto& keys = shards_[s]->keys(static_cast<size_t>(j - idx.begin()));
    auto [lo, hi] = std::equal_range(keys.begin(), keys.end(), key, less);
    for (auto k = lo; k != hi; ++k) {
      int64_t local = static_cast<int64_t>(k->row);
      out.push_back(interleaved_ ? local * n + static_cast<int64_t>(s) : starts_[s] + local);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mycel::data::mr
