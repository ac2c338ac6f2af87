// Checkpoint parsers from C++: round trips, and corrupt or hostile files that must raise
// ValueError (never crash, never allocate what the file cannot hold).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "mycel/io/io.h"

namespace mycel::io {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mycel_io_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void dump(const std::string& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

template <class T>
Tensor filled(const Shape& s, T first) {
  Tensor t = Tensor::empty(s, dtype_v<T>);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(first + T(i));
  return t;
}

std::vector<NamedTensor> sample() {
  return {{"w", filled<float>({2, 3}, 0.5f)},
          {"step", filled<int64_t>({}, int64_t(1) << 40)},
          {"empty", filled<int16_t>({0, 4}, 0)},
          {"h", filled<double>({5}, -2.0)}};
}

void expect_same(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].tensor.shape(), b[i].tensor.shape());
    EXPECT_EQ(a[i].tensor.dtype(), b[i].tensor.dtype());
    ASSERT_EQ(a[i].tensor.nbytes(), b[i].tensor.nbytes());
    EXPECT_EQ(std::memcmp(a[i].tensor.data(), b[i].tensor.data(), a[i].tensor.nbytes()), 0);
  }
}

// The ValueError message of loading `bytes` as a .ckpt file, or "" when it loads.
std::string ckpt_error(const TempDir& dir, const std::string& bytes) {
  std::string p = dir.file("bad.ckpt");
  dump(p, bytes);
  try {
    load_ckpt(p);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

std::string put_u64(std::string s, size_t pos, uint64_t v) {
  std::memcpy(s.data() + pos, &v, 8);
  return s;
}

std::string fix_crc(std::string s) {
  uint32_t crc = static_cast<uint32_t>(
      ::crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size() - 4)));
  std::memcpy(s.data() + s.size() - 4, &crc, 4);
  return s;
}

TEST(CkptTest, RoundTripKeepsOrderDtypesAndBytes) {
  TempDir dir;
  save_ckpt(dir.file("a.ckpt"), sample());
  expect_same(load_ckpt(dir.file("a.ckpt")), sample());
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.ckpt.tmp-" + std::to_string(getpid()))));
}

TEST(CkptTest, SaveRejectsDuplicateAndEmptyNames) {
  TempDir dir;
  Tensor t = filled<float>({1}, 1.f);
  EXPECT_THROW(save_ckpt(dir.file("a.ckpt"), {{"x", t}, {"x", t}}), ValueError);
  EXPECT_THROW(save_ckpt(dir.file("a.ckpt"), {{"", t}}), ValueError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.ckpt")));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path));  // no temporary left behind either
}

TEST(CkptTest, TruncationAtEveryLengthIsAValueError) {
  TempDir dir;
  save_ckpt(dir.file("a.ckpt"), sample());
  std::string good = slurp(dir.file("a.ckpt"));
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_NE(ckpt_error(dir, good.substr(0, n)), "") << "cut at " << n;
}

TEST(CkptTest, EverySingleBitFlipIsDetected) {
  TempDir dir;
  save_ckpt(dir.file("a.ckpt"), sample());
  std::string good = slurp(dir.file("a.ckpt"));
  for (size_t i = 0; i < good.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string b = good;
      b[i] = static_cast<char>(b[i] ^ (1 << bit));
      EXPECT_NE(ckpt_error(dir, b), "") << "byte " << i << " bit " << bit;
    }
}

TEST(CkptTest, HostileFieldsNameTheProblem) {
  TempDir dir;
  save_ckpt(dir.file("a.ckpt"), {{"w", filled<float>({2, 3}, 0.f)}});
  std::string good = slurp(dir.file("a.ckpt"));
  // Layout: 20-byte preamble, count at 20, then name_len(4) "w" dtype(1) rank(4) dims at 30.
  const size_t dims = 20 + 8 + 4 + 1 + 1 + 4;
  EXPECT_NE(ckpt_error(dir, fix_crc(put_u64(good, 12, ~uint64_t(0)))).find("header length"),
            std::string::npos);
  EXPECT_NE(ckpt_error(dir, fix_crc(put_u64(good, 20, uint64_t(1) << 62))).find("claims"),
            std::string::npos);
  EXPECT_NE(ckpt_error(dir, fix_crc(put_u64(good, dims, uint64_t(1) << 61))).find("'w'"),
            std::string::npos);
  EXPECT_NE(ckpt_error(dir, fix_crc(put_u64(good, dims, uint64_t(-5)))).find("negative dimension"),
            std::string::npos);
  EXPECT_NE(ckpt_error(dir, fix_crc(put_u64(good, dims + 16, 1 << 20))).find("offset"),
            std::string::npos);
  std::string flipped = good;
  flipped[good.size() - 10] ^= 1;  // inside the data
  EXPECT_NE(ckpt_error(dir, flipped).find("CRC-32 mismatch"), std::string::npos);
  EXPECT_EQ(ckpt_error(dir, fix_crc(good)), "");  // the patcher itself leaves good files good
}

TEST(CkptTest, RandomBytesAfterAValidPreambleNeverCrash) {
  TempDir dir;
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = "MYCELCKP";
    uint32_t version = 1;
    b.append(reinterpret_cast<const char*>(&version), 4);
    size_t n = rng() % 300;
    uint64_t header_len = rng() % (n + 1);
    b.append(reinterpret_cast<const char*>(&header_len), 8);
    for (size_t i = 0; i < n; ++i) b.push_back(static_cast<char>(rng()));
    EXPECT_NE(ckpt_error(dir, b), "");
  }
}

TEST(SafetensorsTest, RoundTripWithMetadata) {
  TempDir dir;
  save_safetensors(dir.file("a.safetensors"), sample(), {{"format", "pt"}});
  SafetensorsFile f = load_safetensors(dir.file("a.safetensors"));
  expect_same(f.tensors, sample());
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST(SafetensorsTest, TruncationAndBitFlipsNeverCrash) {
  TempDir dir;
  save_safetensors(dir.file("a.safetensors"), sample());
  std::string good = slurp(dir.file("a.safetensors"));
  std::string p = dir.file("bad.safetensors");
  for (size_t n = 0; n < good.size(); ++n) {
    dump(p, good.substr(0, n));
    EXPECT_THROW(load_safetensors(p), ValueError) << "cut at " << n;
  }
  // safetensors has no checksum: a flipped header bit must fail cleanly or load a valid file.
  uint64_t header_len;
  std::memcpy(&header_len, good.data(), 8);
  for (size_t i = 0; i < 8 + header_len; ++i) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0x04);
    dump(p, b);
    try {
      load_safetensors(p);
    } catch (const ValueError&) {
    } catch (const NotSupported&) {
    }
  }
}

TEST(SafetensorsTest, HugeDimsAndOffsetsAreRejected) {
  TempDir dir;
  std::string p = dir.file("bad.safetensors");
  auto file = [&](const std::string& json, size_t data) {
    uint64_t n = json.size();
    std::string b(reinterpret_cast<const char*>(&n), 8);
    dump(p, b + json + std::string(data, '\0'));
  };
  file(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8);
  EXPECT_THROW(load_safetensors(p), ValueError);
  file(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,18446744073709551615]}})", 8);
  EXPECT_THROW(load_safetensors(p), ValueError);
  file(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(load_safetensors(p).tensors.at(0).tensor.shape(), Shape{1});
}

}  // namespace
}  // namespace mycel::io
