#include "mycel/core/stack.h"

#include <pthread.h>

#include <cstdint>

namespace mycel {

namespace {

// The thread's stack bounds, read once per thread (pthread_getattr_np walks /proc for the main
// thread, whose stack may grow up to RLIMIT_STACK: that limit is its size).
struct Bounds {
  uintptr_t low = 0, high = 0;
};

Bounds read_bounds() {
  Bounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
    b.low = reinterpret_cast<uintptr_t>(addr);
    b.high = b.low + size;
  }
  pthread_attr_destroy(&attr);
  return b;
}

}  // namespace

size_t stack_headroom() {
  thread_local const Bounds b = read_bounds();
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (b.low == 0 || here <= b.low || here > b.high) return SIZE_MAX;
  return here - b.low;
}

}  // namespace mycel
