// Run-time compilation of generated C++ with the system compiler, cached on disk by a hash of
// source and flags (MYCEL_TE_CACHE, else ~/.cache/mycel/te), loaded with dlopen.
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/te/compiler_process.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace detail {
namespace {

thread_local bool background_thread = false;
std::atomic<bool> cancelled{false};
std::atomic<pid_t> background_child{0};  // process group of the background compiler under way
std::atomic<int64_t> background_runs{0};

}  // namespace

const char* arch_flags() {
  return cpu_has_avx512() ? "-march=native" : "-march=x86-64-v3 -mtune=native";
}

void set_background_thread() { background_thread = true; }
bool on_background_thread() { return background_thread; }
int64_t background_compiles() { return background_runs.load(); }

void cancel_background_compile() {
  cancelled.store(true);
  if (pid_t pg = background_child.load(); pg > 0) ::kill(-pg, SIGKILL);
}

// fork + exec rather than std::system: the child gets a process group of its own (so the
// compiler and the programs it starts can be killed together) and, off the critical path, a
// lower priority, so that it takes only idle time from the steps it is compiling for.
// A compiler must not outlive this process (a SIGKILL runs no exit handler): the shell gets
// SIGTERM when its parent dies (PR_SET_PDEATHSIG, which survives exec but not fork, so it cannot
// reach the compiler's own children) and its trap kills its whole process group, the compiler,
// the assembler and the linker with it; the command runs in the background so that the trap runs
// at once rather than after it.
int run_compiler(const std::string& cmd) {
  const bool bg = background_thread;
  MYCEL_CHECK(!bg || !cancelled.load(), RuntimeError,
              "[te fusion] background compile cancelled (the process is exiting)");
  const std::string script = "trap 'kill -KILL 0' TERM; ( " + cmd + " ) & wait $!";
  const char* argv[] = {"sh", "-c", script.c_str(), nullptr};
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  MYCEL_CHECK(pid >= 0, RuntimeError,
              "[te.build] cannot start the C++ compiler: fork failed: ", std::strerror(errno));
  if (pid == 0) {  // the child: async-signal-safe calls only
    ::setpgid(0, 0);
    // (the parent may have died before the prctl: then it never signals)
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(127);
    if (bg) (void)!::nice(10);
    ::execv("/bin/sh", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // (also in the child: whichever runs first)
  if (bg) {
    ++background_runs;
    background_child.store(pid);
    if (cancelled.load()) ::kill(-pid, SIGKILL);  // cancelled between the check and the fork
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (bg) background_child.store(0);
  return status;
}

}  // namespace detail

namespace {

namespace fs = std::filesystem;

std::string te_flags() {
  return std::string("-O3 ") + detail::arch_flags() +
         " -fopenmp -fno-math-errno -fPIC -shared -std=c++17";
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

thread_local std::string thread_cache_dir;  // detail::set_thread_cache_dir

fs::path cache_dir() {
  if (!thread_cache_dir.empty()) return thread_cache_dir;
  if (const char* d = std::getenv("MYCEL_TE_CACHE"); d && *d) return d;
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "mycel" / "te";
  return fs::path("/tmp") / ("mycel-te-" + std::to_string(geteuid()));  // one per user
}

// The cache holds libraries this process dlopens, so whoever can write the folder can run code
// in it: the folder must be ours and writable by nobody else (a shared /tmp, a group-writable
// HOME). Created 0700; an existing one that fails the check is an error naming it.
void check_private(const fs::path& dir, const std::string& what) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    MYCEL_THROW(RuntimeError, "[", what, "] cannot create the kernel cache directory '",
                dir.string(), "': ", std::strerror(errno));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    MYCEL_THROW(RuntimeError, "[", what, "] the kernel cache '", dir.string(),
                "' is not a directory (a symlink is refused too)");
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
    MYCEL_THROW(RuntimeError, "[", what, "] the kernel cache '", dir.string(),
                "' must belong to this user and be writable by nobody else (it holds libraries "
                "that are loaded and run); fix its owner/mode or set MYCEL_TE_CACHE");
}

std::string compiler() {
  const char* c = std::getenv("MYCEL_TE_CXX");
  return c && *c ? c : "g++";
}

// What the cache key holds besides flags and source: which compiler binary (its resolved path,
// size and modification time, so an upgraded g++ recompiles) and which CPU (-march=native code
// from another machine sharing the folder may not run here). Computed once per compiler name.
std::string compiler_identity(const std::string& cxx) {
  static auto& mu = *new std::mutex;  // never destroyed (background.cc: builds run at exit)
  static auto& known = *new std::map<std::string, std::string>;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(cxx); it != known.end()) return it->second;
  std::string path = cxx;
  if (cxx.find('/') == std::string::npos) {
    const char* env = std::getenv("PATH");
    std::stringstream dirs(env ? env : "/usr/bin");
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && ::access((d + "/" + cxx).c_str(), X_OK) == 0) {
        path = d + "/" + cxx;
        break;
      }
  }
  std::ostringstream id;
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  struct stat st;
  if (!ec && ::stat(real.c_str(), &st) == 0)
    id << real.string() << " " << st.st_size << " " << st.st_mtime;
  else
    id << cxx;  // not found: the compile itself will say so
  std::ifstream cpu("/proc/cpuinfo");
  int wanted = 2;  // the first "model name" and "flags" lines
  for (std::string line; wanted > 0 && std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) {
      id << "\n" << line;
      --wanted;
    }
  return known[cxx] = id.str();
}

std::atomic<int64_t> compiles{0};  // compiler runs of this process, for compile_count()

std::mutex used_mu;
std::vector<std::string> used;  // libraries compiled or loaded, for used_libraries()

// How old a temporary file of a dead compile must be before a sweep removes it: its process id
// is checked first, but a process of another PID namespace sharing the folder may hold the same
// number, and no compile takes an hour.
constexpr int64_t kStaleTmpSeconds = 3600;

// tmp_<pid>_<hash>.{cc,so,log} files left by a process killed while compiling (SIGKILL runs no
// cleanup; a build killed at exit removes its own): removed, once per folder and process, when
// they are older than kStaleTmpSeconds and their process is gone.
void sweep_stale(const fs::path& dir) {
  static auto& swept = *new std::set<std::string>;  // under compile_shared's lock; never destroyed
  if (!swept.insert(dir.string()).second) return;
  std::error_code ec;
  const time_t now = ::time(nullptr);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("tmp_", 0) != 0) continue;
    char* rest = nullptr;
    const long pid = std::strtol(name.c_str() + 4, &rest, 10);
    if (pid <= 0 || *rest != '_' || pid == ::getpid()) continue;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || now - st.st_mtime < kStaleTmpSeconds) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;  // alive
    std::error_code rm;
    fs::remove(it->path(), rm);
  }
}

std::string read_text(const fs::path& p, size_t limit) {
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (s.size() > limit) s = s.substr(0, limit) + "\n...";
  return s;
}

}  // namespace

Kernel::Kernel(void* handle, void* fn, std::string path, bool cached, double compile_s)
    : handle_(handle), fn_(fn), path_(std::move(path)), cached_(cached), compile_s_(compile_s) {}

Kernel::~Kernel() {
  if (handle_) dlclose(handle_);
}

void Kernel::run(void** buffers) const { reinterpret_cast<void (*)(void**)>(fn_)(buffers); }

std::string compile_shared(const std::string& source, const std::string& flags,
                           const std::string& what, bool* cached_out, double* seconds_out) {
  static auto& mu = *new std::mutex;  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  std::string cxx = compiler();
  uint64_t h = fnv1a(compiler_identity(cxx) + "\n" + flags + "\n" + source);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  fs::path dir = cache_dir();
  std::error_code ec;
  check_private(dir, what);
  sweep_stale(dir);
  // A slot is te_<hash>[_k].so with its source kept beside it (.cc): a hit needs that source to
  // equal this one, since a 64-bit hash can collide and a wrong library would compute silently
  // wrong results; a colliding source takes the next slot.
  fs::path so, kept;
  bool cached = false;
  for (int k = 0;; ++k) {
    MYCEL_CHECK(k < 16, RuntimeError, "[", what, "] 16 different kernels share the hash ", hex,
                " in '", dir.string(), "' (a corrupt cache? remove it)");
    const std::string base = std::string("te_") + hex + (k ? "_" + std::to_string(k) : "");
    so = dir / (base + ".so"), kept = dir / (base + ".cc");
    if (!fs::exists(so)) break;
    if (read_text(kept, source.size() + 1) == source) {
      cached = true;
      break;
    }
  }
  double secs = 0;
  if (!cached && detail::on_background_thread()) {
    // MYCEL_TE_BACKGROUND_COMPILES=N: a process runs the compiler at most N times off the
    // critical path (CI can set 0: kernels warmed into the cache are used, nothing compiles).
    const char* cap = std::getenv("MYCEL_TE_BACKGROUND_COMPILES");
    if (cap && *cap) {
      char* end = nullptr;
      const long long n = std::strtoll(cap, &end, 10);
      MYCEL_CHECK(*end == 0 && n >= 0, ValueError,
                  "[te fusion] MYCEL_TE_BACKGROUND_COMPILES must be a count >= 0, got '", cap, "'");
      MYCEL_CHECK(detail::background_compiles() < n, RuntimeError, "[", what,
                  "] not in the kernel cache, and this process's ", n,
                  " background compiles (MYCEL_TE_BACKGROUND_COMPILES) are spent");
    }
  }
  if (!cached) {
    // Unique temp names, then rename: concurrent builders never see a half-written library.
    std::string tag = std::to_string(getpid()) + "_" + hex;
    fs::path src = dir / ("tmp_" + tag + ".cc"), tmp_so = dir / ("tmp_" + tag + ".so"),
             log = dir / ("tmp_" + tag + ".log");
    {
      std::ofstream f(src);
      f << source;
      MYCEL_CHECK(f.good(), RuntimeError, "[", what, "] cannot write '", src.string(), "'");
    }
    std::string cmd = cxx + " " + flags + " -o '" + tmp_so.string() + "' '" + src.string() +
                      "' > '" + log.string() + "' 2>&1";
    auto t0 = std::chrono::steady_clock::now();
    ++compiles;
    int rc = detail::run_compiler(cmd);
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      std::string msg = read_text(log, 4000);
      fs::remove(tmp_so, ec);
      fs::remove(log, ec);
      if (WIFSIGNALED(rc)) fs::remove(src, ec);  // killed (an exit): nothing to show
      MYCEL_CHECK(!WIFSIGNALED(rc), RuntimeError, "[", what, "] the C++ compiler '", cxx,
                  "' was killed by signal ", WTERMSIG(rc));
      MYCEL_THROW(RuntimeError, "[", what, "] the C++ compiler '", cxx, "' failed (exit status ",
                  WIFEXITED(rc) ? WEXITSTATUS(rc) : rc, ") on ", src.string(), ":\n", msg);
    }
    fs::remove(log, ec);
    // The source first: whoever sees the library sees the source it must match.
    fs::rename(src, kept, ec);
    MYCEL_CHECK(!ec, RuntimeError, "[", what,
                "] cannot move the source into the cache: ", ec.message());
    fs::rename(tmp_so, so, ec);
    MYCEL_CHECK(!ec, RuntimeError, "[", what,
                "] cannot move the library into the cache: ", ec.message());
  }
  if (cached_out) *cached_out = cached;
  if (seconds_out) *seconds_out = secs;
  {
    std::lock_guard<std::mutex> used_lock(used_mu);
    if (std::find(used.begin(), used.end(), so.string()) == used.end()) used.push_back(so.string());
  }
  return so.string();
}

int64_t compile_count() { return compiles.load(); }

std::string cache_directory() { return cache_dir().string(); }

namespace detail {
void set_thread_cache_dir(const std::string& dir) { thread_cache_dir = dir; }
}  // namespace detail

std::vector<std::string> used_libraries() {
  std::lock_guard<std::mutex> lock(used_mu);
  return used;
}

std::shared_ptr<Kernel> compile(const std::string& source) {
  static auto& mu = *new std::mutex;  // never destroyed
  static auto& loaded = *new std::map<std::string, std::weak_ptr<Kernel>>;
  std::lock_guard<std::mutex> lock(mu);
  bool cached = false;
  double secs = 0;
  std::string so = compile_shared(source, te_flags(), "te.build", &cached, &secs);
  if (auto k = loaded[so].lock()) return k;
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  MYCEL_CHECK(handle, RuntimeError, "[te.build] dlopen of '", so, "' failed: ", dlerror());
  void* fn = dlsym(handle, "mycel_te_kernel");
  if (!fn) {
    dlclose(handle);
    MYCEL_THROW(RuntimeError, "[te.build] '", so, "' lacks mycel_te_kernel");
  }
  auto k = std::make_shared<Kernel>(handle, fn, so, cached, secs);
  loaded[so] = k;
  return k;
}

}  // namespace mycel::te
