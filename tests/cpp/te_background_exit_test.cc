// A background build still running while the process tears its statics down must find what it
// uses alive. The exit hook that stops the worker runs only after every static built later than
// its registration is destroyed, and jit.cc builds its caches on the first compile, after it: CI
// once saw "corrupted double-linked list" as a test process exited while a disk-cached kernel's
// build ended. The child below makes that order certain: a static built between the hook and the
// first compile lets the build run from its destructor, after jit.cc's statics would be gone.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "mycel/te/te.h"

namespace mycel::te {
namespace {

constexpr const char* kChildEnv = "MYCEL_TEST_TE_EXIT_CHILD";
constexpr const char* kReached = "te exit child: exiting";
const std::string kSource = "extern \"C\" void mycel_te_kernel(void**) {}\n";

// Destroyed after jit.cc's statics (built before them): its destructor lets the build go on and
// waits for it, as a build that ends during teardown would.
struct Teardown {
  std::atomic<bool> begun{false};
  std::shared_ptr<BackgroundBuild> build;
  ~Teardown() {
    begun.store(true);
    if (build) build->wait();
  }
};

TEST(TeBackgroundExit, Child) {
  if (!std::getenv(kChildEnv)) GTEST_SKIP() << "run by BuildEndingDuringTeardownFindsItsCaches";
  background_stats();              // the worker, and its exit hook registered
  static Teardown late;            // after the hook, before jit.cc's statics
  auto kernel = compile(kSource);  // jit.cc's caches built (and the kernel cached on disk)
  late.build = BackgroundBuild::start([] {
    while (!late.begun.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    compile(kSource);  // the caches again, from the worker, during teardown
    return std::shared_ptr<Function>();
  });
  std::printf("%s\n", kReached);
  std::fflush(stdout);
  std::exit(0);
}

TEST(TeBackgroundExit, BuildEndingDuringTeardownFindsItsCaches) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  // glibc fills freed blocks (no per-thread cache to keep them whole), so a build that reads
  // a destroyed cache crashes here too, not only under AddressSanitizer.
  const std::string cmd = std::string(kChildEnv) +
                          "=1 GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 '" +
                          exe + "' --gtest_filter=TeBackgroundExit.Child 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
  const int status = ::pclose(p);
  EXPECT_NE(out.find(kReached), std::string::npos) << out;
  ASSERT_TRUE(WIFEXITED(status)) << "the child died by a signal\n" << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
}

}  // namespace
}  // namespace mycel::te
