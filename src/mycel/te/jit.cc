// Run-time compilation of generated C++ with the system compiler, cached on disk by a hash of
// source and flags (MYCEL_TE_CACHE, else ~/.cache/mycel/te), loaded with dlopen.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

namespace fs = std::filesystem;

const char* kFlags = "-O3 -march=native -fopenmp -fno-math-errno -fPIC -shared -std=c++17";

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

fs::path cache_dir() {
  if (const char* d = std::getenv("MYCEL_TE_CACHE"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "mycel" / "te";
}

std::string compiler() {
  const char* c = std::getenv("MYCEL_TE_CXX");
  return c && *c ? c : "g++";
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
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::string cxx = compiler();
  uint64_t h = fnv1a(cxx + "\n" + flags + "\n" + source);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  fs::path dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  MYCEL_CHECK(!ec, RuntimeError, "[", what, "] cannot create the kernel cache directory '",
              dir.string(), "': ", ec.message());
  fs::path so = dir / (std::string("te_") + hex + ".so");
  bool cached = fs::exists(so);
  double secs = 0;
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
    int rc = std::system(cmd.c_str());
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      std::string msg = read_text(log, 4000);
      fs::remove(tmp_so, ec);
      fs::remove(log, ec);
      MYCEL_THROW(RuntimeError, "[", what, "] the C++ compiler '", cxx, "' failed (exit status ",
                  WIFEXITED(rc) ? WEXITSTATUS(rc) : rc, ") on ", src.string(), ":\n", msg);
    }
    fs::rename(tmp_so, so, ec);
    MYCEL_CHECK(!ec, RuntimeError, "[", what,
                "] cannot move the library into the cache: ", ec.message());
    fs::remove(log, ec);
    fs::rename(src, dir / (std::string("te_") + hex + ".cc"), ec);  // kept for inspection
  }
  if (cached_out) *cached_out = cached;
  if (seconds_out) *seconds_out = secs;
  return so.string();
}

std::shared_ptr<Kernel> compile(const std::string& source) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<Kernel>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  bool cached = false;
  double secs = 0;
  std::string so = compile_shared(source, kFlags, "te.build", &cached, &secs);
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
