// Bounds-checked file access (see file_io.h).
#include "mycel/data/sources/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mycel/core/error.h"

namespace mycel::data::io {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> list_dir(const std::string& dir, bool dirs, const std::string& owner) {
  DIR* d = ::opendir(dir.c_str());
  if (!d)
    MYCEL_THROW(ValueError, "[", owner, "] cannot read directory '", dir, "': ", errno_text());
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    // stat follows symlinks, so a linked class folder or image counts like a real one.
    std::string full = dir + "/" + name;
    if (dirs ? is_dir(full) : is_file(full)) out.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_file(const std::string& path, const std::string& owner) {
  RandomAccessFile f(path, owner);
  std::vector<uint8_t> out(f.size());
  if (!out.empty()) f.read_at(0, out.data(), out.size());
  return out;
}

std::vector<uint8_t> read_maybe_gzip(const std::string& path, const std::string& owner) {
  std::vector<uint8_t> raw = read_file(path, owner);
  if (raw.size() < 2 || raw[0] != 0x1f || raw[1] != 0x8b) return raw;
  // The gzip trailer's ISIZE (size mod 2^32) is a good first guess for the output size; a
  // corrupt value only costs a reallocation, so cap it.
  size_t guess = 1 << 16;
  if (raw.size() >= 18) {
    const uint8_t* t = raw.data() + raw.size() - 4;
    guess = std::max<size_t>(
        guess, uint32_t(t[0]) | uint32_t(t[1]) << 8 | uint32_t(t[2]) << 16 | uint32_t(t[3]) << 24);
    guess = std::min<size_t>(guess, size_t(1) << 30);
  }
  std::vector<uint8_t> out(guess);
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    MYCEL_THROW(RuntimeError, "[", owner, "] zlib initialization failed for '", path, "'");
  zs.next_in = raw.data();
  size_t produced = 0;
  // Inputs over 4 GiB are fed in uInt-sized pieces.
  auto refill = [&] {
    size_t used = static_cast<size_t>(zs.next_in - raw.data());
    zs.avail_in = static_cast<uInt>(std::min<size_t>(raw.size() - used, UINT32_MAX));
  };
  auto fail = [&](const std::string& why) {
    inflateEnd(&zs);
    MYCEL_THROW(ValueError, "[", owner, "] corrupt gzip file '", path, "': ", why);
  };
  refill();
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT32_MAX));
    size_t before_out = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced += before_out - zs.avail_out;
    size_t used = static_cast<size_t>(zs.next_in - raw.data());
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (what `cat a.gz b.gz` makes) continue; other trailing bytes
      // (tar padding) are ignored, as gzip(1) does.
      if (used + 2 <= raw.size() && raw[used] == 0x1f && raw[used + 1] == 0x8b) {
        inflateReset(&zs);
        refill();
        continue;
      }
      break;
    }
    bool refilled = zs.avail_in == 0 && used < raw.size();
    if (refilled) refill();
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR) {
      if (zs.avail_out == 0 || refilled) continue;  // output full or more input fed
      fail("truncated stream (ended after " + std::to_string(produced) + " decompressed bytes)");
    }
    fail(zs.msg ? zs.msg : "inflate error " + std::to_string(rc));
  }
  inflateEnd(&zs);
  out.resize(produced);
  return out;
}

RandomAccessFile::RandomAccessFile(const std::string& path, const std::string& owner)
    : path_(path), owner_(owner) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) MYCEL_THROW(ValueError, "[", owner, "] cannot open '", path, "': ", errno_text());
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    MYCEL_THROW(ValueError, "[", owner, "] '", path, "' is not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

RandomAccessFile::~RandomAccessFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RandomAccessFile::read_at(uint64_t offset, void* out, size_t n) const {
  auto* p = static_cast<char*>(out);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      MYCEL_THROW(RuntimeError, "[", owner_, "] read error in '", path_, "': ", errno_text());
    // The file shrank after it was opened (or the header lied): say where and by how much.
    if (r == 0)
      MYCEL_THROW(RuntimeError, "[", owner_, "] unexpected end of file '", path_, "': needed ", n,
                  " bytes at offset ", offset, ", got ", done);
    done += static_cast<size_t>(r);
  }
}

void ByteView::need(size_t offset, size_t n, const char* what) const {
  if (offset > size_ || n > size_ - offset)
    MYCEL_THROW(ValueError, "[", owner_, "] file '", path_, "' is truncated: ", what, " needs ",
                offset + n, " bytes, the file has ", size_);
}

uint32_t ByteView::u32be(size_t offset, const char* what) const {
  need(offset, 4, what);
  const uint8_t* p = data_ + offset;
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace mycel::data::io
