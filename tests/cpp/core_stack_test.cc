// core/stack.h: the headroom a thread has left, read from its real stack bounds (analysis stops
// with an error on it before a deep program overflows a small stack).
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdint>

#include "mycel/core/stack.h"

namespace mycel {
namespace {

struct Probe {
  size_t top = 0, deeper = 0;
};

// Headroom measured `depth` frames below the caller (noinline and a live buffer keep the frames).
__attribute__((noinline)) size_t headroom_at(int depth) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(depth);
  const size_t h = depth == 0 ? stack_headroom() : headroom_at(depth - 1);
  return h + (pad[0] == static_cast<char>(-1) ? 1 : 0);  // a read after the call: no tail call
}

void* probe(void* arg) {
  auto* p = static_cast<Probe*>(arg);
  p->top = stack_headroom();
  p->deeper = headroom_at(64);
  return nullptr;
}

// Runs probe on a thread with a stack of `bytes`, as a Python thread made with
// threading.stack_size(bytes) would have.
Probe probe_on_stack(size_t bytes) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  Probe p;
  pthread_t t;
  EXPECT_EQ(pthread_create(&t, &attr, probe, &p), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  return p;
}

TEST(StackHeadroom, IsBoundedByTheThreadsStackSize) {
  for (size_t bytes : {size_t{256} << 10, size_t{1} << 20, size_t{16} << 20}) {
    const Probe p = probe_on_stack(bytes);
    if (p.top == SIZE_MAX)
      GTEST_SKIP() << "stack bounds unreadable here (a sanitizer's fake stack)";
    EXPECT_LT(p.top, bytes) << bytes;
    EXPECT_GT(p.top, bytes / 2) << bytes;  // the thread has used little of it yet
    // 64 frames of at least 1 KB each lie below the top probe.
    EXPECT_LT(p.deeper + 64 * 1024, p.top) << bytes;
  }
}

TEST(StackHeadroom, MainOrTestThreadHasSome) {
  const size_t h = stack_headroom();
  EXPECT_GT(h, size_t{64} << 10);
}

}  // namespace
}  // namespace mycel
