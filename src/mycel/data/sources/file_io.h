// Bounds-checked file access for the file sources: whole-file and gzip reads, positional reads,
// and a byte view whose every read is checked, so a truncated or corrupt file raises an error
// naming the file instead of reading past a buffer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mycel::data::io {

/// Reads a whole file; throws ValueError naming `owner` and the path if it cannot be opened.
std::vector<uint8_t> read_file(const std::string& path, const std::string& owner);

/// Reads a file, inflating it when it starts with the gzip magic (1f 8b). A corrupt or truncated
/// stream throws ValueError naming the file.
std::vector<uint8_t> read_maybe_gzip(const std::string& path, const std::string& owner);

/// Whether `path` exists and is a regular file / a directory.
bool is_file(const std::string& path);
bool is_dir(const std::string& path);

/// Names (not paths) of the entries of a directory, sorted; `dirs` selects sub-directories,
/// otherwise regular files. Throws ValueError naming `owner` if the directory cannot be read.
std::vector<std::string> list_dir(const std::string& dir, bool dirs, const std::string& owner);

/// A read-only file for positional reads from several threads at once (pread).
class RandomAccessFile {
 public:
  RandomAccessFile(const std::string& path, const std::string& owner);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const { return path_; }
  /// Size in bytes at open time.
  uint64_t size() const { return size_; }
  /// Reads exactly n bytes at offset into out; a short read throws RuntimeError naming the file.
  void read_at(uint64_t offset, void* out, size_t n) const;

 private:
  std::string path_, owner_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// A view of bytes from one file with checked big-endian reads.
class ByteView {
 public:
  ByteView(const std::vector<uint8_t>& bytes, std::string path, std::string owner)
      : data_(bytes.data()),
        size_(bytes.size()),
        path_(std::move(path)),
        owner_(std::move(owner)) {}
  size_t size() const { return size_; }
  const uint8_t* data() const { return data_; }
  const std::string& path() const { return path_; }
  /// Throws ValueError unless [offset, offset + n) lies inside the view; `what` names the field.
  void need(size_t offset, size_t n, const char* what) const;
  /// Big-endian 32-bit integer at offset (checked).
  uint32_t u32be(size_t offset, const char* what) const;

 private:
  const uint8_t* data_;
  size_t size_;
  std::string path_, owner_;
};

}  // namespace mycel::data::io
