// Cifar10Dataset / Cifar100Dataset: the CIFAR "binary version" files. Each record is the label
// byte(s) then a 32x32 image stored channel by channel (CHW); rows come out as HWC like MindSpore.
// Files are validated (size a whole number of records) at construction and records are read on
// demand with pread, so several workers read at once and the 150 MB train set is not held twice.
#include <algorithm>
#include <array>

#include "mycel/data/source.h"
#include "mycel/data/sources/file_io.h"
#include "mycel/data/transform.h"  // MYCEL_REGISTER_DATA

namespace mycel::data {
namespace {

constexpr int64_t kSide = 32, kChannels = 3;
constexpr size_t kPixels = kSide * kSide * kChannels;  // 3072

struct CifarKind {
  const char* owner;
  size_t label_bytes;  // 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine)
  std::vector<std::string> label_columns;
  std::vector<int> classes;  // per label column: 10, or 20 coarse and 100 fine
};

class CifarSource : public Source {
 public:
  CifarSource(const CifarKind& kind, const Params& p) : kind_(kind) {
    std::string dir = p.get_str("dataset_dir");
    std::string usage = p.get_str("usage", "all");
    if (usage != "train" && usage != "test" && usage != "all")
      MYCEL_THROW(ValueError, "[", kind_.owner, "] usage must be 'train', 'test' or 'all', got '",
                  usage, "'");
    if (!io::is_dir(dir))
      MYCEL_THROW(ValueError, "[", kind_.owner, "] dataset_dir '", dir,
                  "' does not exist or is not a directory");
    std::vector<std::string> names = io::list_dir(dir, /*dirs=*/false, kind_.owner);
    if (usage != "test") add_files(dir, names, /*train=*/true);
    if (usage != "train") add_files(dir, names, /*train=*/false);
  }

  std::vector<std::string> column_names() const override {
    std::vector<std::string> out{"image"};
    out.insert(out.end(), kind_.label_columns.begin(), kind_.label_columns.end());
    return out;
  }
  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }

  Row get(int64_t i) const override {
    MYCEL_CHECK(i >= 0 && i < size(), IndexError, "[", kind_.owner, "] row ", i,
                " out of range [0, ", size(), ")");
    size_t f = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), i) - ends_.begin());
    int64_t local = i - (f == 0 ? 0 : ends_[f - 1]);
    const size_t record = kind_.label_bytes + kPixels;
    std::array<uint8_t, 2 + kPixels> buf;
    files_[f]->read_at(static_cast<uint64_t>(local) * record, buf.data(), record);

    Tensor image = Tensor::empty({kSide, kSide, kChannels}, DType::uint8);
    const uint8_t* chw = buf.data() + kind_.label_bytes;
    uint8_t* hwc = image.data<uint8_t>();
    constexpr size_t plane = kSide * kSide;
    for (size_t p = 0; p < plane; ++p)
      for (size_t c = 0; c < kChannels; ++c) hwc[p * kChannels + c] = chw[c * plane + p];
    Row row{image};
    for (size_t k = 0; k < kind_.label_bytes; ++k) {
      // A label past the class count would index out of range in a loss or a one-hot later.
      if (buf[k] >= kind_.classes[k])
        MYCEL_THROW(ValueError, "[", kind_.owner, "] file '", files_[f]->path(), "' record ", local,
                    " has ", kind_.label_columns[k], " ", int(buf[k]), ", expected 0..",
                    kind_.classes[k] - 1, " (", kind_.classes[k], " classes)");
      row.push_back(Tensor::scalar(buf[k], DType::int32));
    }
    return row;
  }

 private:
  // CIFAR-10 splits data_batch_1..5.bin / test_batch.bin; CIFAR-100 train.bin / test.bin.
  void add_files(const std::string& dir, const std::vector<std::string>& names, bool train) {
    std::vector<std::string> chosen;
    bool ten = kind_.label_bytes == 1;
    for (const std::string& n : names) {
      bool match = ten ? (train ? n.starts_with("data_batch_") && n.ends_with(".bin")
                                : n == "test_batch.bin")
                       : n == (train ? "train.bin" : "test.bin");
      if (match) chosen.push_back(n);
    }
    if (chosen.empty())
      MYCEL_THROW(ValueError, "[", kind_.owner, "] no ", train ? "train" : "test", " file in '",
                  dir, "': expected ",
                  ten ? (train ? "data_batch_1.bin ... data_batch_5.bin" : "test_batch.bin")
                      : (train ? "train.bin" : "test.bin"));
    const uint64_t record = kind_.label_bytes + kPixels;
    for (const std::string& n : chosen) {
      auto file = std::make_shared<io::RandomAccessFile>(dir + "/" + n, kind_.owner);
      if (file->size() == 0)
        MYCEL_THROW(ValueError, "[", kind_.owner, "] file '", file->path(),
                    "' is empty: a CIFAR batch file holds at least one ", record, "-byte record");
      if (file->size() % record != 0)
        MYCEL_THROW(ValueError, "[", kind_.owner, "] file '", file->path(), "' has ", file->size(),
                    " bytes, not a multiple of the ", record, "-byte record (", kind_.label_bytes,
                    " label byte", ten ? "" : "s", " + 3072 pixels); ",
                    "is it truncated or not the binary version?");
      ends_.push_back(size() + static_cast<int64_t>(file->size() / record));
      files_.push_back(std::move(file));
    }
  }

  CifarKind kind_;
  std::vector<std::shared_ptr<io::RandomAccessFile>> files_;
  std::vector<int64_t> ends_;  // cumulative record counts: file f holds rows [ends_[f-1], ends_[f])
};

}  // namespace

MYCEL_REGISTER_DATA(cifar_sources) {
  register_source("Cifar10Dataset", [](const Params& p) {
    return std::make_shared<CifarSource>(CifarKind{"Cifar10Dataset", 1, {"label"}, {10}}, p);
  });
  register_source("Cifar100Dataset", [](const Params& p) {
    return std::make_shared<CifarSource>(
        CifarKind{"Cifar100Dataset", 2, {"coarse_label", "fine_label"}, {20, 100}}, p);
  });
}

}  // namespace mycel::data
