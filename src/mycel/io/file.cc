// POSIX file helpers for the checkpoint formats.
#include "mycel/io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/fault.h"

namespace mycel::io::detail {

ReadFile::ReadFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    MYCEL_THROW(ValueError, "cannot open checkpoint '", path, "': ", std::strerror(errno));
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
      MYCEL_THROW(RuntimeError, "checkpoint '", path_, "': reading ", what,
                  " failed: ", std::strerror(errno));
    if (k == 0)
      MYCEL_THROW(ValueError, "checkpoint '", path_,
                  "' is truncated: the file ended while reading ", what);
    c += k;
    n -= static_cast<uint64_t>(k);
    offset += static_cast<uint64_t>(k);
  }
}

namespace {
std::mutex claims_mutex;
std::condition_variable claims_released;
std::set<std::string> claimed;  // temporary paths being written by this process
}  // namespace

TempClaim::TempClaim(std::string tmp_path) : path_(std::move(tmp_path)) {
  std::unique_lock lock(claims_mutex);
  claims_released.wait(lock, [&] { return !claimed.count(path_); });
  claimed.insert(path_);
}

TempClaim::~TempClaim() {
  {
    std::lock_guard lock(claims_mutex);
    claimed.erase(path_);
  }
  claims_released.notify_all();
}

namespace {
std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}
}  // namespace

void remove_stale_temps(const std::string& path) {
  const std::string dir = dir_of(path);
  const size_t slash = path.rfind('/');
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp-";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // the create that follows reports an unusable directory
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(digits));
    // ESRCH: no such process, so no writer will ever finish (or remove) this file. A live pid
    // (or EPERM: alive, another user's) may be a writer at work.
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
      stale.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : stale) ::unlink((dir == "." ? name : dir + "/" + name).c_str());
}

AtomicWriter::AtomicWriter(const std::string& path)
    : path_(path), tmp_(path + ".tmp-" + std::to_string(::getpid())) {
  const std::string& tmp = tmp_.path();
  remove_stale_temps(path);
  fd_ = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    MYCEL_THROW(RuntimeError, "cannot create '", tmp, "' to save checkpoint '", path,
                "': ", std::strerror(errno));
  try {
    fault_point("atomic_write:opened");
  } catch (...) {  // no destructor runs for a throwing constructor
    ::close(fd_);
    ::unlink(tmp.c_str());
    throw;
  }
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) {  // not committed: an error happened, leave the old checkpoint alone
    ::close(fd_);
    ::unlink(tmp_.path().c_str());
  }
}

void AtomicWriter::write(const void* data, uint64_t n) {
  if (written_ > 0) fault_point("atomic_write:partial");  // some bytes are in the file
  const char* c = static_cast<const char*>(data);
  written_ += n;
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, uint64_t(1) << 30));
    ssize_t k = ::write(fd_, c, chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      MYCEL_THROW(RuntimeError, "writing checkpoint '", path_,
                  "' failed: ", k < 0 ? std::strerror(errno) : "no progress");
    c += k;
    n -= static_cast<uint64_t>(k);
  }
}

void AtomicWriter::commit() {
  const std::string& tmp = tmp_.path();
  fault_point("atomic_write:written");
  if (::fsync(fd_) != 0)
    MYCEL_THROW(RuntimeError, "fsync of '", tmp, "' failed: ", std::strerror(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    MYCEL_THROW(RuntimeError, "cannot close '", tmp, "': ", std::strerror(err));
  }
  try {
    fault_point("atomic_write:synced");
  } catch (...) {  // fd_ is closed, so the destructor would not remove the file
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    MYCEL_THROW(RuntimeError, "cannot move '", tmp, "' to '", path_, "': ", std::strerror(err));
  }
  fault_point("atomic_write:renamed");
  // Make the rename itself durable; best effort, as the data is already safely in place.
  std::string dir = dir_of(path_);
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
    MYCEL_CHECK(d >= 0, ValueError, where, ": negative dimension ", d, " in shape ",
                shape_str(shape));
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

size_t first_invalid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned c = p[i];
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > n) return i;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Reject overlong forms, surrogates and code points past U+10FFFF.
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
    i += len;
  }
  return std::string::npos;
}

bool is_utf8(const std::string& s) { return first_invalid_utf8(s) == std::string::npos; }

void normalize_bools(void* data, uint64_t n) {
  auto* b = static_cast<uint8_t*>(data);
  for (uint64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
}

}  // namespace mycel::io::detail
