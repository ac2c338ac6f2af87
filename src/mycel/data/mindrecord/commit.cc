// Commit records, directory locks and temporary-file hygiene for MindRecord (see commit.h).
#include "mycel/data/mindrecord/commit.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/core/fault.h"
#include "mycel/data/mindrecord/io.h"

namespace mycel::data::mr {

namespace {

constexpr const char* kRecordMagic = "MYCELMR-COMMIT 1";

std::string join(const std::string& dir, const std::string& name) {
  return dir == "." ? name : dir + "/" + name;
}

// The (final, temporary) base names a record lists; throws naming the record when it is corrupt.
std::vector<std::pair<std::string, std::string>> read_record(const std::string& record) {
  File f = File::open_read(record);
  std::string text(f.size(), '\0');
  if (!text.empty()) f.pread_exact(text.data(), text.size(), 0, "the commit record");
  std::istringstream in(text);
  std::string magic, line;
  size_t n = 0;
  std::getline(in, magic);
  std::getline(in, line);
  bool ok = magic == kRecordMagic && !line.empty() && line.size() <= 6 &&  // kMaxShards fits
            line.find_first_not_of("0123456789") == std::string::npos;
  if (ok) n = std::stoul(line);
  std::vector<std::pair<std::string, std::string>> out;
  while (ok && out.size() < n && std::getline(in, line)) {
    size_t tab = line.find('\t');
    ok = tab != std::string::npos && tab > 0 && tab + 1 < line.size();
    if (ok) out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  if (!ok || out.size() != n || !std::getline(in, line) || line != "end")
    MYCEL_THROW(RuntimeError, record, ": corrupt MindRecord commit record");
  return out;
}

// pid of a "<prefix><pid>-<hex>" name, or 0 when the name does not have that form.
pid_t temp_owner(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return 0;
  std::string rest = name.substr(prefix.size());
  size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || dash > 9) return 0;
  std::string digits = rest.substr(0, dash);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(digits));
}

}  // namespace

std::string commit_record_path(const std::string& file_name) { return file_name + ".mrcommit"; }

std::string unique_temp_suffix() {
  std::random_device rd;
  uint64_t r = (uint64_t(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(r));
  return ".tmp-" + std::to_string(::getpid()) + "-" + hex;
}

DirLock::DirLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0)
    MYCEL_THROW(RuntimeError, "[FileWriter] cannot open directory '", dir,
                "' to lock it: ", std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd_);
    MYCEL_THROW(RuntimeError, "[FileWriter] cannot lock directory '", dir,
                "': ", std::strerror(err));
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

void write_commit_record(const std::string& file_name,
                         const std::vector<std::pair<std::string, std::string>>& shards) {
  std::string text = std::string(kRecordMagic) + "\n" + std::to_string(shards.size()) + "\n";
  for (const auto& [final_path, tmp_path] : shards)
    text += base_name(final_path) + "\t" + base_name(tmp_path) + "\n";
  text += "end\n";
  const std::string record = commit_record_path(file_name);
  const std::string tmp = record + unique_temp_suffix();
  {
    File f = File::create(tmp);
    try {
      f.write_all(text.data(), text.size());
      f.sync();
      f.close();
      fault_point("mindrecord_commit:record_written");
    } catch (...) {
      f = File();
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), record.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    MYCEL_THROW(RuntimeError, "[FileWriter] cannot rename '", tmp, "' to '", record,
                "': ", std::strerror(err));
  }
  sync_dir(dir_name(record));
}

void recover_commit(const std::string& file_name) {
  const std::string record = commit_record_path(file_name);
  if (!path_exists(record)) return;
  const std::string dir = dir_name(record);
  for (const auto& [final_name, tmp_name] : read_record(record)) {
    std::string tmp = join(dir, tmp_name), fin = join(dir, final_name);
    if (path_exists(tmp) && ::rename(tmp.c_str(), fin.c_str()) != 0)
      MYCEL_THROW(RuntimeError, "[FileWriter] cannot finish the commit that '", record,
                  "' records: renaming '", tmp, "' to '", fin, "' failed: ", std::strerror(errno));
  }
  sync_dir(dir);
  ::unlink(record.c_str());
  sync_dir(dir);
}

void remove_dead_temps(const std::string& path) {
  const std::string dir = dir_name(path);
  const std::string prefix = base_name(path) + ".tmp-";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> dead;
  while (dirent* e = ::readdir(d)) {
    pid_t pid = temp_owner(e->d_name, prefix);
    // ESRCH: the writer is gone and nobody else would ever remove its file.
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
      dead.push_back(e->d_name);
  }
  ::closedir(d);
  for (const auto& name : dead) ::unlink(join(dir, name).c_str());
}

std::string committed_path(const std::string& path) {
  const std::string dir = dir_name(path), base = base_name(path);
  // A shard is named set name + shard number: try each split of the trailing digits.
  for (size_t k = base.size(); k > 0 && std::isdigit(static_cast<unsigned char>(base[k - 1]));
       --k) {
    const std::string record = commit_record_path(join(dir, base.substr(0, k - 1)));
    if (k == 1 || !path_exists(record)) continue;
    std::vector<std::pair<std::string, std::string>> shards;
    try {
      shards = read_record(record);
    } catch (const RuntimeError&) {
      if (!path_exists(record)) continue;  // a commit finished meanwhile and removed it
      throw;
    }
    for (const auto& [final_name, tmp_name] : shards)
      if (final_name == base && path_exists(join(dir, tmp_name))) return join(dir, tmp_name);
  }
  return path;
}

}  // namespace mycel::data::mr
