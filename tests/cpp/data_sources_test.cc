// File sources from C++: the gzip reader, checked byte views, and concurrent get() on CIFAR.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "mycel/data/source.h"
#include "mycel/data/sources/file_io.h"

namespace mycel::data {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const char* name) {
  fs::path d = fs::temp_directory_path() /
               (std::string("mycel_ds_") + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(DataSources, GzipRoundTripAndTruncation) {
  fs::path d = temp_dir("gz");
  std::vector<uint8_t> data(300000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 7919) >> 3);
  std::string gz = (d / "x.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
  EXPECT_EQ(io::read_maybe_gzip(gz, "test"), data);

  std::vector<uint8_t> packed = io::read_file(gz, "test");
  packed.resize(packed.size() / 2);
  write_bytes(d / "cut.gz", packed);
  EXPECT_THROW(io::read_maybe_gzip((d / "cut.gz").string(), "test"), ValueError);
  write_bytes(d / "plain", {1, 2, 3});
  EXPECT_EQ(io::read_maybe_gzip((d / "plain").string(), "test"), (std::vector<uint8_t>{1, 2, 3}));
  fs::remove_all(d);
}

TEST(DataSources, ByteViewChecksBounds) {
  std::vector<uint8_t> b{0, 0, 8, 3, 9};
  io::ByteView v(b, "f", "test");
  EXPECT_EQ(v.u32be(0, "magic"), 0x803u);
  EXPECT_THROW(v.u32be(2, "count"), ValueError);
  EXPECT_THROW(v.need(SIZE_MAX, 2, "overflow"), ValueError);
}

TEST(DataSources, CifarConcurrentReads) {
  fs::path d = temp_dir("cifar");
  const int n = 64;
  std::vector<uint8_t> bytes;
  for (int r = 0; r < n; ++r) {
    bytes.push_back(static_cast<uint8_t>(r % 10));
    for (int k = 0; k < 3072; ++k) bytes.push_back(static_cast<uint8_t>(r + k));
  }
  write_bytes(d / "test_batch.bin", bytes);
  auto src = make_source(
      "Cifar10Dataset", Params("Cifar10Dataset", {{"dataset_dir", d.string()}, {"usage", "test"}}));
  ASSERT_EQ(src->size(), n);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep)
        for (int r = t; r < n; r += 4) {
          Row row = src->get(r);
          const uint8_t* hwc = row[0].data<uint8_t>();
          // pixel (0, 1), channel 2 is CHW byte 2 * 1024 + 1
          if (hwc[1 * 3 + 2] != static_cast<uint8_t>(r + 2 * 1024 + 1) ||
              row[1].item_as_double() != r % 10)
            ++bad;
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_THROW(src->get(n), IndexError);
  fs::remove_all(d);
}

}  // namespace
}  // namespace mycel::data
