// MnistDataset: MNIST / Fashion-MNIST in the IDX format, plain or gzipped. The four files are
// small (≈ 55 MB decompressed), so they are read and validated once at construction and rows are
// copied out of memory.
#include <cstdio>
#include <cstring>

#include "mycel/data/source.h"
#include "mycel/data/sources/file_io.h"
#include "mycel/data/transform.h"  // MYCEL_REGISTER_DATA

namespace mycel::data {
namespace {

constexpr const char* kOwner = "MnistDataset";
constexpr uint32_t kImageMagic = 0x00000803;  // IDX: unsigned byte, 3 dimensions
constexpr uint32_t kLabelMagic = 0x00000801;  // IDX: unsigned byte, 1 dimension
constexpr int kClasses = 10;                  // MNIST digits, Fashion-MNIST classes

// Finds `<prefix>-<kind>-idx<d>-ubyte` (or the `.idx` spelling some mirrors use), plain or .gz.
std::string find_idx_file(const std::string& dir, const std::string& prefix,
                          const std::string& kind, int dims) {
  std::string d = std::to_string(dims);
  for (const std::string& base :
       {prefix + "-" + kind + "-idx" + d + "-ubyte", prefix + "-" + kind + ".idx" + d + "-ubyte"}) {
    for (const char* ext : {"", ".gz"}) {
      std::string path = dir + "/" + base + ext;
      if (io::is_file(path)) return path;
    }
  }
  MYCEL_THROW(ValueError, "[", kOwner, "] cannot find '", prefix, "-", kind, "-idx", d,
              "-ubyte' (or its .gz) in '", dir, "'");
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Checks that a decompressed IDX file holds exactly `header_bytes + count * item` bytes, what its
// header announces (a product that overflows can never match).
void check_size(const io::ByteView& v, uint64_t header_bytes, uint64_t count, uint64_t item,
                const std::string& header) {
  uint64_t expected;
  if (__builtin_mul_overflow(count, item, &expected) ||
      __builtin_add_overflow(expected, header_bytes, &expected))
    MYCEL_THROW(ValueError, "[", kOwner, "] file '", v.path(), "' has a corrupt header (", header,
                ")");
  if (v.size() == expected) return;
  MYCEL_THROW(ValueError, "[", kOwner, "] file '", v.path(), "' is ",
              v.size() < expected ? "truncated" : "longer than its header says", ": header (",
              header, ") needs ", expected, " bytes, the file has ", v.size(),
              " (after decompression)");
}

class MnistSource : public Source {
 public:
  explicit MnistSource(const Params& p) {
    std::string dir = p.get_str("dataset_dir");
    std::string usage = p.get_str("usage", "all");
    if (usage != "train" && usage != "test" && usage != "all")
      MYCEL_THROW(ValueError, "[", kOwner, "] usage must be 'train', 'test' or 'all', got '", usage,
                  "'");
    if (!io::is_dir(dir))
      MYCEL_THROW(ValueError, "[", kOwner, "] dataset_dir '", dir,
                  "' does not exist or is not a directory");
    if (usage == "all") {  // as MindSpore: whichever of the train and test sets the folder holds
      bool train = has_images(dir, "train"), test = has_images(dir, "t10k");
      if (!train && !test)
        MYCEL_THROW(ValueError, "[", kOwner, "] dataset_dir '", dir,
                    "' holds neither the train "
                    "('train-images-idx3-ubyte') nor the test ('t10k-images-idx3-ubyte') images, "
                    "plain or .gz");
      if (train) load(dir, "train");
      if (test) load(dir, "t10k");
      return;
    }
    load(dir, usage == "train" ? "train" : "t10k");
  }

  std::vector<std::string> column_names() const override { return {"image", "label"}; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }

  Row get(int64_t i) const override {
    MYCEL_CHECK(i >= 0 && i < size(), IndexError, "[", kOwner, "] row ", i, " out of range [0, ",
                size(), ")");
    const size_t n = static_cast<size_t>(rows_ * cols_);
    Tensor image = Tensor::empty({rows_, cols_, 1}, DType::uint8);
    std::memcpy(image.data(), images_.data() + static_cast<size_t>(i) * n, n);
    return {image, Tensor::scalar(labels_[static_cast<size_t>(i)], DType::int32)};
  }
  void prefetch(int64_t i) const override {
    if (i < 0 || i >= size()) return;
    const size_t n = static_cast<size_t>(rows_ * cols_);
    const uint8_t* p = images_.data() + static_cast<size_t>(i) * n;
    for (size_t o = 0; o < n; o += 64) __builtin_prefetch(p + o);
    __builtin_prefetch(p + n - 1);
  }

 private:
  static bool has_images(const std::string& dir, const std::string& prefix) {
    for (const char* base : {"-images-idx3-ubyte", "-images.idx3-ubyte"})
      for (const char* ext : {"", ".gz"})
        if (io::is_file(dir + "/" + prefix + base + ext)) return true;
    return false;
  }

  void load(const std::string& dir, const std::string& prefix) {
    std::string image_path = find_idx_file(dir, prefix, "images", 3);
    std::string label_path = find_idx_file(dir, prefix, "labels", 1);

    std::vector<uint8_t> image_bytes = io::read_maybe_gzip(image_path, kOwner);
    io::ByteView iv(image_bytes, image_path, kOwner);
    uint32_t magic = iv.u32be(0, "the IDX header");
    if (magic != kImageMagic)
      MYCEL_THROW(ValueError, "[", kOwner, "] file '", image_path, "' has magic number ",
                  hex(magic), ", expected ", hex(kImageMagic), " (IDX3 unsigned-byte images)");
    uint64_t n = iv.u32be(4, "the IDX header"), rows = iv.u32be(8, "the IDX header"),
             cols = iv.u32be(12, "the IDX header");
    check_size(
        iv, 16, n, rows * cols,
        std::to_string(n) + " images of " + std::to_string(rows) + "x" + std::to_string(cols));
    if (rows == 0 || cols == 0)
      MYCEL_THROW(ValueError, "[", kOwner, "] file '", image_path, "' has empty images (", rows,
                  "x", cols, ")");
    if (!labels_.empty() && (int64_t(rows) != rows_ || int64_t(cols) != cols_))
      MYCEL_THROW(ValueError, "[", kOwner, "] file '", image_path, "' has ", rows, "x", cols,
                  " images, the other split has ", rows_, "x", cols_);

    std::vector<uint8_t> label_bytes = io::read_maybe_gzip(label_path, kOwner);
    io::ByteView lv(label_bytes, label_path, kOwner);
    magic = lv.u32be(0, "the IDX header");
    if (magic != kLabelMagic)
      MYCEL_THROW(ValueError, "[", kOwner, "] file '", label_path, "' has magic number ",
                  hex(magic), ", expected ", hex(kLabelMagic), " (IDX1 unsigned-byte labels)");
    uint64_t n_labels = lv.u32be(4, "the IDX header");
    check_size(lv, 8, n_labels, 1, std::to_string(n_labels) + " labels");
    if (n_labels != n)
      MYCEL_THROW(ValueError, "[", kOwner, "] '", image_path, "' has ", n, " images but '",
                  label_path, "' has ", n_labels, " labels");

    // MNIST and Fashion-MNIST have 10 classes; a larger label (a corrupt byte, 255) would
    // index out of range in a loss or a one-hot later, far from its cause.
    for (uint64_t k = 0; k < n_labels; ++k)
      if (label_bytes[8 + k] >= kClasses)
        MYCEL_THROW(ValueError, "[", kOwner, "] file '", label_path, "' record ", k, " has label ",
                    int(label_bytes[8 + k]), ", expected 0..", kClasses - 1, " (", kClasses,
                    " classes)");
    rows_ = static_cast<int64_t>(rows);
    cols_ = static_cast<int64_t>(cols);
    images_.insert(images_.end(), image_bytes.begin() + 16, image_bytes.end());
    labels_.insert(labels_.end(), label_bytes.begin() + 8, label_bytes.end());
  }

  int64_t rows_ = 0, cols_ = 0;
  std::vector<uint8_t> images_;  // n * rows * cols pixels, row-major
  std::vector<int32_t> labels_;  // widened from IDX's unsigned bytes
};

}  // namespace

MYCEL_REGISTER_DATA(mnist_source) {
  register_source(kOwner, [](const Params& p) { return std::make_shared<MnistSource>(p); });
}

}  // namespace mycel::data
