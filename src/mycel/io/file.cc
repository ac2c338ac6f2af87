// POSIX file helpers for the checkpoint formats.
#include "mycel/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <vector>

#include "mycel/core/error.h"

namespace mycel::io::detail {

ReadFile::ReadFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) MYCEL_THROW(ValueError, "cannot open checkpoint '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    MYCEL_THROW(ValueError, "checkpoint '", path, "' is not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadFile::read_at(void* dst, uint64_t n, uint64_t offset, const char* what) const {
  // Callers validate ranges against size(); this check also catches a file shrinking under us.
  if (offset > size_ || n > size_ - offset)
    MYCEL_THROW(ValueError, "checkpoint '", path_, "' is truncated: ", what, " needs bytes [",
                offset, ", ", offset + n, ") but the file has ", size_, " bytes");
  char* c = static_cast<char*>(dst);
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, uint64_t(1) << 30));
    ssize_t k = ::pread(fd_, c, chunk, static_cast<off_t>(offset));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      MYCEL_THROW(RuntimeError, "checkpoint '", path_, "': reading ", what, " failed: ",
                  std::strerror(errno));
    if (k == 0)
      MYCEL_THROW(ValueError, "checkpoint '", path_, "' is truncated: the file ended while reading ",
                  what);
    c += k;
    n -= static_cast<uint64_t>(k);
    offset += static_cast<uint64_t>(k);
  }
}

AtomicWriter::AtomicWriter(const std::string& path)
    : path_(path), tmp_path_(path + ".tmp-" + std::to_string(::getpid())) {
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    MYCEL_THROW(RuntimeError, "cannot create '", tmp_path_, "' to save checkpoint '", path,
                "': ", std::strerror(errno));
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) {  // not committed: an error happened, leave the old checkpoint alone
    ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
}

void AtomicWriter::write(const void* data, uint64_t n) {
  const char* c = static_cast<const char*>(data);
  written_ += n;
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, uint64_t(1) << 30));
    ssize_t k = ::write(fd_, c, chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      MYCEL_THROW(RuntimeError, "writing checkpoint '", path_, "' failed: ",
                  k < 0 ? std::strerror(errno) : "no progress");
    c += k;
    n -= static_cast<uint64_t>(k);
  }
}

void AtomicWriter::commit() {
  if (::fsync(fd_) != 0)
    MYCEL_THROW(RuntimeError, "fsync of '", tmp_path_, "' failed: ", std::strerror(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 || ::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_path_.c_str());
    MYCEL_THROW(RuntimeError, "cannot move '", tmp_path_, "' to '", path_, "': ", std::strerror(err));
  }
  // Make the rename itself durable; best effort, as the data is already safely in place.
  size_t slash = path_.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

uint64_t checked_nbytes(const Shape& shape, DType dtype, uint64_t limit, const std::string& where) {
  // Tensor::empty's own element cap; checked here so the error names the file.
  constexpr uint64_t kMaxElements = uint64_t(1) << 56;
  uint64_t count = 1;
  for (int64_t d : shape) {
    MYCEL_CHECK(d >= 0, ValueError, where, ": negative dimension ", d, " in shape ", shape_str(shape));
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && count > kMaxElements / ud)
      MYCEL_THROW(ValueError, where, ": shape ", shape_str(shape), " has too many elements");
    count *= ud;
  }
  uint64_t size = itemsize(dtype);
  if (count > limit / size)
    MYCEL_THROW(ValueError, where, ": shape ", shape_str(shape), " of ", dtype_name(dtype),
                " needs more bytes than the file's ", limit);
  return count * size;
}

void normalize_bools(void* data, uint64_t n) {
  auto* b = static_cast<uint8_t*>(data);
  for (uint64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
}

}  // namespace mycel::io::detail
