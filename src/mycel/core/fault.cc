// MYCEL_FAULT test hook (see fault.h).
#include "mycel/core/fault.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "mycel/core/error.h"

namespace mycel {

void fault_point(const char* point) {
  const char* want = std::getenv("MYCEL_FAULT");
  if (!want) return;
  const size_t n = std::strlen(point);
  if (std::strncmp(want, point, n) != 0) return;
  if (want[n] == '\0') {
    ::kill(::getpid(), SIGKILL);
    ::_exit(137);  // not reached: SIGKILL cannot be caught
  }
  if (std::strcmp(want + n, ":raise") == 0)
    MYCEL_THROW(RuntimeError, "injected fault at '", point, "' (MYCEL_FAULT)");
  if (std::strcmp(want + n, ":stop") == 0) ::raise(SIGSTOP);
}

}  // namespace mycel
