// How the system compiler runs (jit.cc), shared with the background builder (background.cc):
// builds off the critical path compile niced, can be killed at exit, and are capped per process.
#pragma once
#include <cstdint>
#include <string>

namespace mycel::te::detail {

/// The -march (and -mtune) flags of generated code: -march=native where this process may use
/// AVX-512, else x86-64-v3 (the library's own baseline). -march=native describes the CPU the
/// compiler sees, which is the one this process sees only when both run natively: under an
/// emulator (qemu-user emulating an AVX2-only CPU runs the compiler natively) or with
/// MYCEL_MAX_CPU_ISA=avx2 native code could hold instructions this process must not run. Part
/// of the flags, so of the cache key.
const char* arch_flags();
/// Runs `cmd` with /bin/sh in a process group of its own and returns its wait status. On the
/// background thread the group runs at niceness +10 and cancel_background_compile() kills it.
int run_compiler(const std::string& cmd);
/// Marks the calling thread as the background builder's.
void set_background_thread();
bool on_background_thread();
/// The kernel cache folder for the calling thread's compiles ("" : MYCEL_TE_CACHE's rule): a
/// background build uses the folder that was current when it was queued.
void set_thread_cache_dir(const std::string& dir);
/// Kills the background compiler under way (its whole process group) and refuses later ones;
/// for process exit.
void cancel_background_compile();
/// Compiler runs started on the background thread.
int64_t background_compiles();

}  // namespace mycel::te::detail
