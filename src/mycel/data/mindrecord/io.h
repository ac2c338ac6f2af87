// Small POSIX file helpers for MindRecord: whole writes, bounded preads, errors naming the file.
#pragma once
#include <cstdint>
#include <string>

namespace mycel::data::mr {

/// An owned file descriptor (closed on destruction).
class File {
 public:
  File() = default;
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~File();
  File(File&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  File& operator=(File&& o) noexcept;

  /// Opens for reading; throws RuntimeError naming the file.
  static File open_read(const std::string& path);
  /// Creates/truncates for writing.
  static File create(const std::string& path);

  /// Writes all n bytes (retrying short writes).
  void write_all(const void* p, size_t n);
  /// Reads exactly n bytes at offset (thread-safe); throws if the file ends first.
  void pread_exact(void* p, size_t n, uint64_t offset, const char* what) const;
  uint64_t size() const;
  void sync();
  void close();
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

/// Whether a path exists.
bool path_exists(const std::string& path);
/// Directory part of a path ("." when none) and base name.
std::string dir_name(const std::string& path);
std::string base_name(const std::string& path);
/// fsyncs a directory so that a rename inside it is durable.
void sync_dir(const std::string& dir);

}  // namespace mycel::data::mr
