// ops.Custom func_type="aot": a user's C/C++ function with MindSpore's aot calling convention,
// from a shared library or from a source file compiled (with the system compiler, like TE
// kernels) into the same on-disk cache.
#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/te/compiler_process.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::shared_ptr<AotFunction> load_aot(const std::string& spec) {
  size_t colon = spec.rfind(':');
  MYCEL_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < spec.size(), ValueError,
              "[Custom aot] func must be 'path/to/lib.so:func_name' or "
              "'path/to/source.cc:func_name', got '",
              spec, "'");
  std::string path = spec.substr(0, colon), symbol = spec.substr(colon + 1);
  std::error_code ec;
  MYCEL_CHECK(fs::is_regular_file(path, ec), ValueError, "[Custom aot] no file '", path,
              "' (from func '", spec, "')");
  auto f = std::make_shared<AotFunction>();
  f->symbol = symbol;
  bool is_c = ends_with(path, ".c");
  if (is_c || ends_with(path, ".cc") || ends_with(path, ".cpp") || ends_with(path, ".cxx")) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    MYCEL_CHECK(in.good() || in.eof(), RuntimeError, "[Custom aot] cannot read '", path, "'");
    // The source is compiled from a copy in the cache: its own folder stays on the include path.
    std::string dir = fs::absolute(fs::path(path)).parent_path().string();
    std::string flags = std::string(is_c ? "-x c " : "-std=c++17 ") + "-O3 " +
                        detail::arch_flags() + " -fopenmp -fPIC -shared -I'" + dir + "'";
    f->library = compile_shared(text.str(), flags, "Custom aot", &f->cached, &f->compile_seconds);
  } else {
    MYCEL_CHECK(ends_with(path, ".so"), ValueError, "[Custom aot] '", path,
                "' is neither a shared library (.so) nor a C/C++ source (.c, .cc, .cpp, .cxx)");
    f->library = fs::absolute(fs::path(path)).string();
  }
  f->handle = dlopen(f->library.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process
  MYCEL_CHECK(f->handle, RuntimeError, "[Custom aot] dlopen of '", f->library,
              "' failed: ", dlerror());
  f->fn = reinterpret_cast<decltype(f->fn)>(dlsym(f->handle, symbol.c_str()));
  MYCEL_CHECK(f->fn, ValueError, "[Custom aot] '", path, "' has no function '", symbol,
              "' (declare it extern \"C\" int ", symbol,
              "(int, void**, int*, int64_t**, const char**, void*, void*))");
  return f;
}

}  // namespace mycel::te
