// MindRecord from C++: writer/reader round trip, overflow rows, shards, corrupt files, the source.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "mycel/data/mindrecord/reader.h"
#include "mycel/data/mindrecord/writer.h"
#include "mycel/data/source.h"

namespace mycel::data::mr {
namespace {

// A temporary directory removed with everything in it at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mycel_mr_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  operator std::string() const { return path; }
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void dump(const std::string& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::vector<FieldSpec> schema() {
  return {{"id", FieldType::int64, false, {}},
          {"vec", FieldType::float32, true, {-1, 2}},
          {"blob", FieldType::bytes, false, {}}};
}

// Row i: id = i, vec = (i % 3) x 2 floats of value i, blob = i bytes of 'a' + i % 26
// (row 7 gets 10000 bytes: larger than a 1 KiB page).
void write_rows(Writer& w, int n) {
  for (int i = 0; i < n; ++i) {
    int64_t id = i;
    std::vector<float> vec(static_cast<size_t>(i % 3) * 2, static_cast<float>(i));
    std::string blob(i == 7 ? 10000 : i, static_cast<char>('a' + i % 26));
    w.write_row(
        {{&id, 8, {}}, {vec.data(), vec.size() * 4, {i % 3, 2}}, {blob.data(), blob.size(), {}}});
  }
}

void check_row(const Reader& r, int i) {
  std::vector<Tensor> row = r.get(i);
  ASSERT_EQ(row.size(), 3u);
  EXPECT_EQ(row[0].shape(), Shape{});
  EXPECT_EQ(row[0].data<int64_t>()[0], i);
  EXPECT_EQ(row[1].shape(), (Shape{i % 3, 2}));
  for (int64_t k = 0; k < row[1].numel(); ++k) EXPECT_EQ(row[1].data<float>()[k], float(i));
  EXPECT_EQ(row[2].dtype(), DType::uint8);
  EXPECT_EQ(row[2].numel(), i == 7 ? 10000 : i);
}

TEST(MindRecord, RoundTripWithOverflowRow) {
  TempDir tmp;
  std::string dir = tmp, path = dir + "/a.mindrecord";
  {
    Writer w(path);
    w.set_page_size(1024);
    w.add_schema(schema(), "d");
    write_rows(w, 40);
    EXPECT_FALSE(path_exists(path));  // nothing under the final name before commit
    w.commit();
  }
  Reader r({path}, true, {});
  ASSERT_EQ(r.size(), 40);
  for (int i = 0; i < 40; ++i) check_row(r, i);
  Reader cols({path}, true, {"blob", "id"});
  EXPECT_EQ(cols.column_names(), (std::vector<std::string>{"blob", "id"}));
  EXPECT_EQ(cols.get(3)[1].data<int64_t>()[0], 3);
}

TEST(MindRecord, ShardsInterleave) {
  TempDir tmp;
  std::string dir = tmp, path = dir + "/s.mindrecord";
  {
    Writer w(path, 3);
    w.add_schema(schema());
    write_rows(w, 11);
    w.commit();
  }
  Reader one({path + "1"}, true, {});
  ASSERT_EQ(one.size(), 11);
  for (int i = 0; i < 11; ++i) check_row(one, i);
  Reader alone({path + "2"}, false, {});
  EXPECT_EQ(alone.size(), 3);  // rows 2, 5, 8
  EXPECT_EQ(alone.get(1)[0].data<int64_t>()[0], 5);
}

// Names in a directory.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename());
  return out;
}

TEST(MindRecord, AbortRemovesTemporaryFile) {
  TempDir tmp;
  std::string dir = tmp, path = dir + "/t.mindrecord";
  {
    Writer w(path);
    w.add_schema(schema());
    write_rows(w, 5);
    EXPECT_EQ(entries(dir).size(), 1u);  // its own "t.mindrecord.tmp-<pid>-<hex>"
    EXPECT_EQ(entries(dir)[0].rfind("t.mindrecord.tmp-", 0), 0u);
  }
  EXPECT_TRUE(entries(dir).empty());
}

TEST(MindRecord, WriterValidatesShapes) {
  TempDir tmp;
  std::string dir = tmp;
  Writer w(dir + "/v.mindrecord");
  w.add_schema(schema());
  int64_t id = 0;
  float v[3] = {};
  EXPECT_THROW(w.write_row({{&id, 8, {}}, {v, 12, {1, 3}}, {"", 0, {}}}), ValueError);
  EXPECT_THROW(w.write_row({{&id, 4, {}}, {v, 8, {1, 2}}, {"", 0, {}}}), ValueError);
  EXPECT_THROW(w.write_row({{&id, 8, {}}}), ValueError);
}

TEST(MindRecord, CorruptFilesFailCleanly) {
  TempDir tmp;
  std::string dir = tmp, path = dir + "/c.mindrecord";
  {
    Writer w(path);
    w.set_page_size(1024);
    w.add_schema(schema());
    write_rows(w, 40);
    w.commit();
  }
  std::string good = slurp(path), bad = dir + "/bad.mindrecord";
  // Truncations anywhere are caught on open.
  for (size_t cut : {size_t(0), size_t(10), size_t(100), good.size() / 2, good.size() - 1}) {
    dump(bad, good.substr(0, cut));
    EXPECT_THROW(Reader({bad}, true, {}), RuntimeError) << cut;
  }
  // A flipped bit in page 1 fails the read of a row on that page, naming file and page.
  Footer f = decode_footer(good.data() + good.size() - kFooterSize, "x");
  std::string flipped = good;
  flipped[f.data_offset + 1024 + 200] ^= 4;
  dump(bad, flipped);
  Reader r({bad}, true, {});
  int failures = 0;
  for (int i = 0; i < r.size(); ++i) {
    try {
      r.get(i);
    } catch (const RuntimeError& e) {
      ++failures;
      EXPECT_NE(std::string(e.what()).find("bad.mindrecord: page 1 checksum mismatch"),
                std::string::npos);
    }
  }
  EXPECT_GT(failures, 0);
  // A header bit flip is caught by the header checksum.
  flipped = good;
  flipped[20] ^= 1;
  dump(bad, flipped);
  EXPECT_THROW(Reader({bad}, true, {}), RuntimeError);
  dump(bad,
       "definitely not a record file, just some text that is long enough to have a footer."
       "..............................................................................");
  try {
    Reader({bad}, true, {});
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("not a MindRecord file"), std::string::npos);
  }
}

TEST(MindRecord, RegisteredSource) {
  TempDir tmp;
  std::string dir = tmp, path = dir + "/src.mindrecord";
  {
    Writer w(path);
    w.add_schema(schema());
    write_rows(w, 4);
    w.commit();
  }
  auto src = make_source("MindDataset", Params("MindDataset", {{"dataset_files", path}}));
  EXPECT_EQ(src->size(), 4);
  EXPECT_EQ(src->column_names(), (std::vector<std::string>{"id", "vec", "blob"}));
  EXPECT_EQ(src->get(2)[2].numel(), 2);
}

TEST(MindRecord, Crc32cCheckValue) { EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u); }

}  // namespace
}  // namespace mycel::data::mr
