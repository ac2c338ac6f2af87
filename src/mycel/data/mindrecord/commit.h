// Atomic publication of a MindRecord shard set. Shards are written under unique temporary names;
// a commit record naming (final, temporary) pairs is renamed into place once every shard is
// synced (the commit point), then the shards are renamed and the record removed. A reader that
// finds a record trusts it, so a kill at any instant leaves the old set or the new one, never a
// mix; the next commit in the directory completes (rolls forward) what a killed one left.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace mycel::data::mr {

/// "<file_name>.mrcommit": the commit record of the set written as file_name.
std::string commit_record_path(const std::string& file_name);

/// ".tmp-<pid>-<random hex>": a temporary suffix no other writer (process or thread) shares.
std::string unique_temp_suffix();

/// An exclusive flock on a directory, held for its lifetime: commits in one directory run one at
/// a time across processes. The kernel drops it when the holder dies, so a kill never wedges it.
class DirLock {
 public:
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

/// Writes the record (temp + fsync + rename + directory fsync); `shards` holds (final, temporary)
/// paths in one directory. Its rename is the commit point.
void write_commit_record(const std::string& file_name,
                         const std::vector<std::pair<std::string, std::string>>& shards);

/// Under DirLock: finishes a commit that a killed writer left (renames the shards its record
/// names, then removes the record). Does nothing when there is no record.
void recover_commit(const std::string& file_name);

/// Under DirLock: removes "<path>.tmp-<pid>-<hex>" files of processes that no longer exist.
void remove_dead_temps(const std::string& path);

/// The file a reader must open for the shard named `path`: the temporary file that a pending
/// commit record maps it to when that file exists, else `path` itself.
std::string committed_path(const std::string& path);

}  // namespace mycel::data::mr
