// Shared by the native libFuzzer targets (tests/fuzz/native/*.cc): the input's variant byte, a
// scratch folder for the files the loaders open, and the check that a loader either accepts the
// bytes or raises an error it documents. Anything else is a finding: another exception type
// aborts with "FUZZ-WRONG-EXCEPTION" (libFuzzer keeps the input), and ASan/UBSan abort on memory
// and undefined-behaviour errors in the instrumented loader sources.
#pragma once
#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <typeinfo>

#include "mycel/core/error.h"

namespace mycel::fuzz {

/// The first byte picks a variant (bit 0: repair checksums; bit 1: target-specific); the rest
/// is the file, exactly as tests/fuzz/targets.py reads the same corpus.
struct Input {
  uint8_t flags = 0;
  std::string body;
};

inline Input split(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  return {data[0], std::string(reinterpret_cast<const char*>(data + 1), size - 1)};
}

/// A private folder for this process's files (RAM-backed when /dev/shm exists).
inline const std::string& scratch() {
  static const std::string dir = [] {
    std::string templ =
        access("/dev/shm", W_OK) == 0 ? "/dev/shm/mycel-fuzz-XXXXXX" : "/tmp/mycel-fuzz-XXXXXX";
    if (!mkdtemp(templ.data())) std::abort();
    return templ;
  }();
  return dir;
}

/// Writes `bytes` to scratch()/name (overwriting) and returns the path.
inline std::string write_file(const std::string& name, const std::string& bytes) {
  std::string path = scratch() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
  return path;
}

[[noreturn]] inline void wrong_exception(const std::exception& e) {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::fprintf(stderr, "FUZZ-WRONG-EXCEPTION %s: %.500s\n", status == 0 ? name : typeid(e).name(),
               e.what());
  std::free(name);
  std::abort();
}

/// Runs `load`; the Python error types the loader documents (`Allowed...`, mycel error classes)
/// and a refused allocation (Python's MemoryError) pass, any other exception is a finding.
template <class... Allowed, class F>
void check(F&& load) {
  try {
    try {
      load();
    } catch (const OutOfMemory&) {
    } catch (const std::bad_alloc&) {
    }
  } catch (const std::exception& e) {
    if (!(... || (dynamic_cast<const Allowed*>(&e) != nullptr))) wrong_exception(e);
  }
}

}  // namespace mycel::fuzz
