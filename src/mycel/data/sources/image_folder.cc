// ImageFolderDataset: one class per sub-folder of dataset_dir. The folder tree is scanned once at
// construction; files are read when their row is requested, as raw bytes (decode=False) or
// through the registered "Decode" transform (decode=True), which the vision transforms provide,
// so this file has no image-library dependency.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include "mycel/data/source.h"
#include "mycel/data/sources/file_io.h"
#include "mycel/data/transform.h"

namespace mycel::data {
namespace {

constexpr const char* kOwner = "ImageFolderDataset";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class ImageFolderSource : public Source {
 public:
  explicit ImageFolderSource(const Params& p) {
    std::string dir = p.get_str("dataset_dir");
    if (!io::is_dir(dir))
      MYCEL_THROW(ValueError, "[", kOwner, "] dataset_dir '", dir,
                  "' does not exist or is not a directory");
    // JPEG and PNG by default: the formats Decode handles. Matching ignores case (.JPG, .Png).
    std::vector<std::string> exts =
        p.get_strs("extensions", std::vector<std::string>{".jpg", ".jpeg", ".png"});
    for (std::string& e : exts) e = lower(e.starts_with(".") ? e : "." + e);

    std::map<std::string, int64_t> class_index;
    std::vector<std::string> class_names = p.get_strs("class_names", std::vector<std::string>{});
    std::vector<int64_t> class_ids = p.get_ints("class_ids", std::vector<int64_t>{});
    MYCEL_CHECK(class_names.size() == class_ids.size(), ValueError, "[", kOwner,
                "] class_indexing has ", class_names.size(), " names but ", class_ids.size(),
                " ids");
    for (size_t k = 0; k < class_names.size(); ++k) class_index[class_names[k]] = class_ids[k];

    std::vector<std::string> folders = io::list_dir(dir, /*dirs=*/true, kOwner);
    int64_t next_label = 0;
    for (const std::string& folder : folders) {
      int64_t label;
      if (class_index.empty()) {
        label = next_label++;  // sorted folder names -> 0..n-1
      } else {
        auto it = class_index.find(folder);
        if (it == class_index.end()) continue;  // like MindSpore: folders not listed are skipped
        label = it->second;
      }
      MYCEL_CHECK(label >= INT32_MIN && label <= INT32_MAX, ValueError, "[", kOwner,
                  "] class_indexing value ", label, " for '", folder, "' does not fit int32");
      std::string sub = dir + "/" + folder;
      for (const std::string& name : io::list_dir(sub, /*dirs=*/false, kOwner)) {
        std::string ln = lower(name);
        bool ok = std::any_of(exts.begin(), exts.end(),
                              [&](const std::string& e) { return ln.ends_with(e); });
        if (ok) files_.push_back({sub + "/" + name, static_cast<int32_t>(label)});
      }
    }
    if (files_.empty()) {
      std::string list;
      for (const std::string& e : exts) list += (list.empty() ? "" : " ") + e;
      MYCEL_THROW(ValueError, "[", kOwner, "] no images found in '", dir, "' (", folders.size(),
                  " class folders; extensions: ", list, ")");
    }

    if (p.get_bool("decode", false)) {
      try {
        decode_ = make_transform("Decode", Params("Decode", {}));
      } catch (const ValueError&) {
        MYCEL_THROW(NotSupported, "[", kOwner,
                    "] decode=True needs the 'Decode' vision transform, ",
                    "which this build does not register; use decode=False and map a decoder");
      }
    }
  }

  std::vector<std::string> column_names() const override { return {"image", "label"}; }
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }

  Row get(int64_t i) const override {
    MYCEL_CHECK(i >= 0 && i < size(), IndexError, "[", kOwner, "] row ", i, " out of range [0, ",
                size(), ")");
    const Entry& e = files_[static_cast<size_t>(i)];
    std::vector<uint8_t> bytes = io::read_file(e.path, kOwner);
    Tensor image = Tensor::empty({static_cast<int64_t>(bytes.size())}, DType::uint8);
    if (!bytes.empty()) std::memcpy(image.data(), bytes.data(), bytes.size());
    if (decode_) {
      RowRng rng(0, static_cast<uint64_t>(i));  // Decode draws nothing; the stream is unused
      try {
        image = decode_->apply({image}, rng).at(0);
      } catch (const Error& err) {
        // Say which file failed: the decoder only sees bytes.
        MYCEL_THROW(RuntimeError, "[", kOwner, "] cannot decode '", e.path, "': ", err.what());
      }
    }
    return {image, Tensor::scalar(e.label, DType::int32)};
  }

 private:
  struct Entry {
    std::string path;
    int32_t label;
  };
  std::vector<Entry> files_;  // class folders in name order, files in name order within each
  std::shared_ptr<Transform> decode_;
};

}  // namespace

MYCEL_REGISTER_DATA(image_folder_source) {
  register_source(kOwner, [](const Params& p) { return std::make_shared<ImageFolderSource>(p); });
}

}  // namespace mycel::data
