// POSIX file helpers for MindRecord.
#include "mycel/data/mindrecord/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mycel/core/error.h"

namespace mycel::data::mr {

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

File File::open_read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    MYCEL_THROW(RuntimeError, path, ": cannot open MindRecord file: ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    MYCEL_THROW(RuntimeError, path, ": not a regular file");
  }
  return File(fd, path);
}

File File::create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) MYCEL_THROW(RuntimeError, path, ": cannot create file: ", std::strerror(errno));
  return File(fd, path);
}

void File::write_all(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::write(fd_, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) MYCEL_THROW(RuntimeError, path_, ": write failed: ", std::strerror(errno));
    c += k;
    n -= static_cast<size_t>(k);
  }
}

void File::pread_exact(void* p, size_t n, uint64_t offset, const char* what) const {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t k = ::pread(fd_, c, n, static_cast<off_t>(offset));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      MYCEL_THROW(RuntimeError, path_, ": read of ", what, " failed: ", std::strerror(errno));
    if (k == 0)
      MYCEL_THROW(RuntimeError, path_, ": unexpected end of file reading ", what, " (truncated)");
    c += k;
    n -= static_cast<size_t>(k);
    offset += static_cast<uint64_t>(k);
  }
}

uint64_t File::size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    MYCEL_THROW(RuntimeError, path_, ": stat failed: ", std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

void File::sync() {
  if (::fsync(fd_) != 0) MYCEL_THROW(RuntimeError, path_, ": fsync failed: ", std::strerror(errno));
}

void File::close() {
  if (fd_ >= 0 && ::close(fd_) != 0) {
    fd_ = -1;
    MYCEL_THROW(RuntimeError, path_, ": close failed: ", std::strerror(errno));
  }
  fd_ = -1;
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string dir_name(const std::string& path) {
  size_t k = path.rfind('/');
  if (k == std::string::npos) return ".";
  return k == 0 ? "/" : path.substr(0, k);
}

std::string base_name(const std::string& path) {
  size_t k = path.rfind('/');
  return k == std::string::npos ? path : path.substr(k + 1);
}

void sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself already happened
  ::fsync(fd);
  ::close(fd);
}

}  // namespace mycel::data::mr
