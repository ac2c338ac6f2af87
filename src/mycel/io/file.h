// POSIX file helpers shared by the checkpoint formats: bounded reads, whole writes and an
// atomic writer. Private to src/mycel/io.
#pragma once
#include <cstdint>
#include <string>

#include "mycel/core/dtype.h"
#include "mycel/core/shape.h"

namespace mycel::io::detail {

/// A file opened for reading; every error names the file.
class ReadFile {
 public:
  explicit ReadFile(const std::string& path);
  ~ReadFile();
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// Reads exactly n bytes at offset; `what` names the part for the truncation message.
  void read_at(void* dst, uint64_t n, uint64_t offset, const char* what) const;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

/// Holds "<path>.tmp-<pid>" for one writer: a second thread saving to the same path waits
/// instead of writing into the same temporary file.
class TempClaim {
 public:
  explicit TempClaim(std::string tmp_path);
  ~TempClaim();
  TempClaim(const TempClaim&) = delete;
  TempClaim& operator=(const TempClaim&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Removes the "<path>.tmp-<pid>" files whose writer process is gone (a killed save leaves its
/// temporary file behind, and nothing else would ever remove it).
void remove_stale_temps(const std::string& path);

/// Writes "<path>.tmp-<pid>"; commit() fsyncs it, renames it over `path` and fsyncs the
/// directory, so a reader sees the old file or the complete new one, never a partial one.
/// Destroyed without commit(), it removes the temporary file; created, it first removes the
/// temporary files that killed writers left for `path`. Fault points (MYCEL_FAULT, for tests):
/// atomic_write:opened, :partial, :written, :synced, :renamed.
class AtomicWriter {
 public:
  explicit AtomicWriter(const std::string& path);
  ~AtomicWriter();
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, uint64_t n);
  uint64_t written() const { return written_; }
  void commit();

 private:
  std::string path_;
  TempClaim tmp_;  // before fd_: claimed before the file is opened, released after it closes
  int fd_ = -1;
  uint64_t written_ = 0;
};

/// x rounded up to a multiple of a (a power of two); callers ensure no overflow.
inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/// Byte size of a tensor of `shape` and `dtype`, checking that every dim is non-negative and that
/// neither the element count nor the byte size overflows or exceeds `limit` (the file size, so
/// a hostile file cannot make us allocate more than it holds). Errors start with `where`.
uint64_t checked_nbytes(const Shape& shape, DType dtype, uint64_t limit, const std::string& where);

/// Whether s is well-formed UTF-8 (names must become Python str).
bool is_utf8(const std::string& s);
/// Offset of the first byte of s that is not well-formed UTF-8; std::string::npos if none.
size_t first_invalid_utf8(const std::string& s);
/// Rewrites every byte of a bool tensor to 0 or 1: a file may hold any byte, C++ bool may not.
void normalize_bools(void* data, uint64_t n);

}  // namespace mycel::io::detail
